"""The ``gaplanner`` command line's arguments: every subcommand and its options (see :mod:`gaplanner.cli`)."""

from __future__ import annotations

import argparse
import os

from gaplanner.documents.rules import INPLACE_CHOICES
from gaplanner.problem.pools import TOGETHER
from gaplanner.registry import ALGORITHMS
from gaplanner.search.ga import GASettings

#: What ``gaplanner plan`` plans when no input is given.
DEFAULT_INPUT = "zoo:resnet50@2"


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_rules_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the runtime's memory rules (graphs)")
    group.add_argument(
        "--inplace",
        choices=INPLACE_CHOICES,
        default="auto",
        help="declared in-place writes: take those that cannot raise the bound (auto), all legal ones "
        "(always) or none, for kernels that cannot write over their inputs (never); default %(default)s",
    )
    group.add_argument(
        "--no-views", action="store_true", help="plan declared views as copies, not shared bytes"
    )
    group.add_argument(
        "--outputs-copied-out",
        action="store_true",
        help="the runtime copies each model output out as soon as it is written (default: outputs stay "
        "intact until the model ends)",
    )


def _add_search_options(parser: argparse.ArgumentParser) -> None:
    defaults = GASettings()
    group = parser.add_argument_group("genetic search")
    # No defaults here: a flag left out takes the algorithm's own default, and a flag given to an
    # algorithm that does not use it is refused (solve.check_settings), not ignored.
    group.add_argument("--seed", type=int, help=f"(default {defaults.seed})")
    group.add_argument("--time-limit", type=float, help=f"seconds (default {defaults.time_limit})")
    group.add_argument("--population", type=int, help=f"(default {defaults.population})")
    group.add_argument("--generations", type=int, help="(default: no limit)")
    group.add_argument("--stall-generations", type=int, help=f"(default {defaults.stall_generations})")
    group.add_argument(
        "--islands", type=int, help=f"populations evolved side by side (default {defaults.islands})"
    )
    group.add_argument(
        "--exact-share",
        type=float,
        help="run exact probes in turns with the GA, this fraction of the time limit (default: side by side "
        "with the GA on two cores or more, else half, where the exact search takes the whole problem; "
        "see docs/exact.md)",
    )
    group.add_argument(
        "--no-exact",
        dest="exact_share",
        action="store_const",
        const=0.0,
        help="the GA alone, as the patent describes it (no exact probes)",
    )
    group.add_argument(
        "--threads",
        type=positive_int,
        help="--algorithm exact: threads, the first for its portfolio of probes, each other one for probes "
        "at random targets (default: one per core)",
    )
    group.add_argument("--quiet", "-q", action="store_true", help="no progress line on stderr")


def _add_pool_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("several models in one pool")
    group.add_argument(
        "--together",
        nargs="?",
        const="sequential",
        choices=TOGETHER,
        help="plan the inputs as models sharing one pool: one after another (sequential, the default), "
        "at the same time (concurrent) or interleaved by --schedule; the plan also gives each model's "
        "arena planned alone",
    )
    group.add_argument(
        "--schedule",
        metavar="fixed|search|FILE",
        help="the operators' order: the document's own (fixed, the default), one searched to lower the "
        "bound (search: the plan then carries 'schedule' and a certificate), or a FILE of operator ids in "
        "run order, one a line; with --together interleaved, the models' operators as MODEL/operator "
        "(MODEL: the input's file name without extension)",
    )
    group.add_argument("--concurrent", action="store_true", help="the same as --together concurrent")
    group.add_argument(
        "--shared",
        action="append",
        metavar="TENSOR",
        help="a tensor the models share by name, one buffer persisting across them all (a KV cache); "
        "repeat for several",
    )


def _add_zoo_parser(sub: argparse._SubParsersAction) -> None:
    zoo = sub.add_parser("zoo", help="list the model zoo (zoo:NAME, zoo:NAME@N) with sizes and bounds")
    zoo.add_argument(
        "--cores", type=int, nargs="+", default=[1], help="core counts to list (e.g. --cores 1 2 4)"
    )
    zoo.add_argument("--format", choices=["table", "json"], default="table")


def _add_import_parser(sub: argparse._SubParsersAction) -> None:
    imp = sub.add_parser(
        "import",
        help="turn an ONNX model or a saved torch.export program into a graph document "
        "(needs gaplanner[onnx] or gaplanner[torch])",
    )
    imp.add_argument("model", help="an .onnx file, or a .pt2 file from torch.export.save")
    imp.add_argument("--output", "-o", help="write the graph JSON here instead of stdout")
    _add_shape_options(imp)
    imp.add_argument(
        "--no-inplace",
        action="store_true",
        help="declare no in-place writes (a backend whose kernels cannot write over their inputs)",
    )


def _add_convert_parser(sub: argparse._SubParsersAction) -> None:
    from gaplanner.problem.convert import FORMATS

    conv = sub.add_parser("convert", help="write an input in another planner's format")
    conv.add_argument("input", help="anything 'plan' reads")
    conv.add_argument(
        "--to",
        choices=FORMATS,
        required=True,
        help="buffers (buffer-list JSON), minimalloc (CSV), omnimalloc (CSV, vector clocks) or graph (JSON)",
    )
    conv.add_argument("--output", "-o", help="write here instead of stdout")
    add_rules_options(conv)


def _add_serve_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run the REST service (needs gaplanner[service])")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    serve.add_argument("--port", type=int, default=8000, help="(default %(default)s)")
    serve.add_argument(
        "--db", help="SQLite file for jobs and results (default $GAPLANNER_DB, else ~/.local/share)"
    )
    serve.add_argument(
        "--jobs",
        type=int,
        help="searches run at once, one worker process each (default $GAPLANNER_WORKERS, else cores)",
    )
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )


def _dimension(text: str) -> tuple[str, int]:
    """``--dim NAME=N``: a symbolic dimension and its size."""
    name, sep, value = text.partition("=")
    try:
        size = int(value)
    except ValueError:
        size = 0
    if not sep or not name.strip() or size < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=N with N a positive integer, got {text!r}")
    return name.strip(), size


def _add_shape_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ONNX models with symbolic dimensions")
    group.add_argument(
        "--batch", type=positive_int, help="the inputs' symbolic batch (first) dimension, fixed to N"
    )
    group.add_argument(
        "--dim",
        type=_dimension,
        action="append",
        metavar="NAME=N",
        help="any symbolic dimension, by its name in the model, fixed to N (repeatable)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gaplanner", description="Static memory planning with verified plans."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    plan = sub.add_parser("plan", help="plan an input and print the verified plan")
    plan.add_argument(
        "input",
        nargs="*",
        help="graph/buffer JSON, MiniMalloc CSV, ONNX model, example:NAME or zoo:NAME[@N] "
        f"(default {DEFAULT_INPUT}); several with --together",
    )
    plan.add_argument("--algorithm", choices=tuple(ALGORITHMS), default="ga")
    plan.add_argument("--output", "-o", help="write here instead of stdout")
    plan.add_argument(
        "--write-model",
        metavar="OUT.onnx",
        help="with an ONNX input and --schedule search or FILE: write the model with its nodes in the "
        "plan's order (ONNX Runtime runs the file's order with ExecutionOrder.PRIORITY_BASED; "
        "docs/schedule.md)",
    )
    plan.add_argument("--format", choices=["json", "csv"], default="json")
    plan.add_argument(
        "--capacity",
        type=positive_int,
        help="bytes available: answer whether the input fits (exit 0, with the plan) or not (exit 3, with "
        "the best peak found and, when the lower bound exceeds the capacity, the proof)",
    )
    _add_search_options(plan)
    add_rules_options(plan)
    _add_shape_options(plan)
    _add_pool_options(plan)
    workers = plan.add_argument_group("workers (Ray)")
    workers.add_argument(
        "--workers",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="islands evolved at once; on Ray workers when a cluster is given (or Ray already runs), "
        "else in this process (default: this machine's cores, %(default)s)",
    )
    workers.add_argument(
        "--ray-address",
        default=os.environ.get("RAY_ADDRESS"),
        help="an existing Ray cluster to run on (default: $RAY_ADDRESS, else the islands run here)",
    )

    comparison = sub.add_parser(
        "compare", help="every baseline and the GA on one input, as a table (--time-limit: each one's)"
    )
    comparison.add_argument("input")
    _add_search_options(comparison)
    add_rules_options(comparison)
    _add_shape_options(comparison)

    verify = sub.add_parser("verify", help="check a plan against its input")
    verify.add_argument("input")
    verify.add_argument("plan", help="a JSON plan (from 'plan') or a CSV with id,offset columns")
    add_rules_options(verify)

    bounds = sub.add_parser("bounds", help="blocks, conflicts and the lower bound of an input")
    bounds.add_argument("input")
    add_rules_options(bounds)

    schema = sub.add_parser("schema", help="print the input document's JSON Schema")
    schema.add_argument("--output", "-o")

    _add_zoo_parser(sub)
    _add_import_parser(sub)
    _add_convert_parser(sub)
    _add_serve_parser(sub)
    return parser
