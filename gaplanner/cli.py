"""The ``gaplanner`` command line.

Every subcommand is a thin shell over library calls; errors the user can fix
(bad input, an invalid plan) print one line naming the problem and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gaplanner.documents.onnx_schedule import write_scheduled_model
from gaplanner.documents.rules import INPLACE_CHOICES, Rules
from gaplanner.documents.schema import document_json_schema
from gaplanner.errors import GaplannerError, InputError, PlanError
from gaplanner.plans.capacity import answer_fit, asks_fit, fits_question
from gaplanner.plans.files import plan_json, read_memories, read_offsets, read_tensor_offsets, write_text
from gaplanner.plans.memory_plan import MemoryPlan
from gaplanner.plans.plan import GenerationRecord, Plan
from gaplanner.plans.pool_report import Pool, compare_alone, pool_inputs
from gaplanner.plans.tensor_check import check_tensor_plan
from gaplanner.plans.verify import find_memory_violation, find_violation
from gaplanner.problem.loading import load_document, load_problem
from gaplanner.problem.pools import TOGETHER
from gaplanner.problem.problem import Problem
from gaplanner.registry import ALGORITHMS
from gaplanner.schedule import ScheduleResult, ScheduleSettings
from gaplanner.schedule.planning import scheduled_problem, with_schedule
from gaplanner.search.ga import GASettings
from gaplanner.solve import compare, settings_for, solve

#: What ``gaplanner plan`` plans when no input is given.
DEFAULT_INPUT = "zoo:resnet50@2"

Handler = Callable[[argparse.Namespace], int]


class ProgressLine:
    """Best peak and generation on stderr once a run has lasted a second.

    On a terminal one line is rewritten 4 times a second; otherwise a line is
    printed at the first second, then every 5 seconds.
    """

    def __init__(self, lower_bound: int, quiet: bool) -> None:
        self.lower_bound, self.quiet = lower_bound, quiet
        self.tty = sys.stderr.isatty()
        self.last_shown = 0.0
        self.shown = False

    def __call__(self, record: GenerationRecord) -> None:
        interval = 0.25 if self.tty else 5.0
        too_soon = self.shown and record.elapsed - self.last_shown < interval
        if self.quiet or record.elapsed < 1.0 or too_soon:
            return
        self.last_shown, self.shown = record.elapsed, True
        ratio = record.best_peak / self.lower_bound if self.lower_bound else 1.0
        print(
            f"{chr(13) if self.tty else ''}generation {record.generation:6d}  best peak {record.best_peak} "
            f"(x{ratio:.4f} of the lower bound)  {record.elapsed:6.1f} s",
            end="" if self.tty else "\n",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        if self.shown and self.tty:
            print(file=sys.stderr)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _settings(args: argparse.Namespace, algorithm: str = "ga") -> Any:
    """The algorithm's settings from the search flags it uses (a baseline uses none)."""
    given = {
        "population": args.population,
        "generations": args.generations,
        "time_limit": args.time_limit,
        "stall_generations": args.stall_generations,
        "seed": args.seed,
        "islands": args.islands,
        "exact_share": args.exact_share,
        "threads": args.threads,
    }
    options = {key: value for key, value in given.items() if value is not None}  # the flags given
    try:
        return settings_for(algorithm, options, refuse_unused=True)
    except InputError as exc:  # name the flag: "--time-limit: must be a positive number of seconds, got nan"
        raise InputError(exc.reason, f"--{exc.field.replace('_', '-')}" if exc.field else "options") from None


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


def _shapes(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--batch`` and ``--dim`` flags as keyword arguments of the loaders."""
    return {"batch": args.batch, "dims": dict(args.dim or ())}


def _shape_flag(exc: InputError) -> InputError:
    """An error about a symbolic dimension, naming its flag."""
    flag = {"batch": "--batch", "dims": "--dim"}.get(exc.field or "")
    return InputError(exc.reason, flag) if flag else exc


def _load(args: argparse.Namespace, source: str) -> Problem:
    """The problem of one input under the flags' rules and symbolic dimensions."""
    try:
        return load_problem(source, rules=_rules(args), **_shapes(args))
    except InputError as exc:
        raise _shape_flag(exc) from None


def _add_shape_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ONNX models with symbolic dimensions")
    group.add_argument(
        "--batch", type=_positive_int, help="the inputs' symbolic batch (first) dimension, fixed to N"
    )
    group.add_argument(
        "--dim",
        type=_dimension,
        action="append",
        metavar="NAME=N",
        help="any symbolic dimension, by its name in the model, fixed to N (repeatable)",
    )


def _rules(args: argparse.Namespace) -> Rules:
    return Rules(keep_outputs=not args.outputs_copied_out, views=not args.no_views, inplace=args.inplace)


def _add_rules_options(parser: argparse.ArgumentParser) -> None:
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


#: Exit status of ``plan`` when the input does not fit its capacity.
EXIT_DOES_NOT_FIT = 3


def _pool(args: argparse.Namespace) -> Pool | None:
    """The inputs pooled when ``--together`` asks for it (None: one input planned alone)."""
    inputs = args.input or [DEFAULT_INPUT]
    together = "concurrent" if args.concurrent else args.together
    if together is None:
        if len(inputs) > 1:
            raise InputError(f"{len(inputs)} inputs: plan them in one pool with --together", "input")
        if args.shared:
            raise InputError("shared tensors apply to a pool of models; add --together", "--shared")
        return None
    if args.schedule == "search":
        raise InputError(
            "a pool's interleaving is given as a FILE; searching it is not supported", "--schedule"
        )
    schedule = _read_schedule(args.schedule) if args.schedule not in (None, "fixed") else None
    try:
        return pool_inputs(inputs, together, args.shared or (), _rules(args), schedule, **_shapes(args))
    except InputError as exc:  # name the flag: "--shared: no model has a tensor 'kv'"
        field = exc.field or ""
        flags = {"shared": "--shared", "together": "--together", "batch": "--batch", "dims": "--dim"}
        flag = flags.get(field)
        if field.startswith("schedule[") and args.schedule:  # "schedule[3]" is the file's fourth entry
            flag = f"{args.schedule} (line {_schedule_line(args.schedule, int(field[9:-1]))})"
        elif field == "schedule":
            flag = "--schedule"
        raise InputError(exc.reason, flag or exc.field) from None


def _schedule_line(path: str, entry: int) -> int:
    """The line number of a schedule file's ``entry``-th operator (comments and blank lines skipped)."""
    lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    numbered = [k + 1 for k, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    return numbered[entry]


def _read_schedule(path: str) -> list[str]:
    """A schedule file: one ``MODEL/operator`` per line (blank lines and ``#`` comments skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", "--schedule"
        ) from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _single_problem(args: argparse.Namespace) -> tuple[Problem, ScheduleResult | None]:
    """One input's problem, its operators in the order ``--schedule`` names (and the search's result)."""
    source = (args.input or [DEFAULT_INPUT])[0]
    if args.schedule in (None, "fixed"):
        return _load(args, source), None
    try:
        document = load_document(source, **_shapes(args))
    except InputError as exc:
        raise _shape_flag(exc) from None
    if not document.is_graph:
        raise InputError("a buffer list has no operators to order", "--schedule")
    schedule = args.schedule if args.schedule == "search" else _read_schedule(args.schedule)
    try:
        order_settings = ScheduleSettings() if args.seed is None else ScheduleSettings(seed=args.seed)
        return scheduled_problem(document, schedule, _rules(args), order_settings)
    except InputError as exc:  # "schedule[3]" is the file's fourth entry
        if args.schedule == "search" or not (exc.field or "").startswith("schedule"):
            raise
        if exc.field == "schedule":
            raise InputError(exc.reason, args.schedule) from None
        line = _schedule_line(args.schedule, int(exc.field[9:-1]))  # type: ignore[index]
        raise InputError(exc.reason, f"{args.schedule} (line {line})") from None


def _check_write_model(args: argparse.Namespace) -> None:
    """``--write-model`` needs one ONNX input and an order to write (refused before any search)."""
    if args.write_model is None:
        return
    inputs = args.input or [DEFAULT_INPUT]
    if len(inputs) > 1 or args.together or args.concurrent:
        raise InputError("writes one model in its order; give one ONNX model", "--write-model")
    if args.schedule in (None, "fixed"):
        raise InputError("writes the order --schedule search (or FILE) chooses; add it", "--write-model")
    if not str(inputs[0]).lower().endswith(".onnx"):
        raise InputError(f"writes ONNX models; {inputs[0]} is not one (.onnx)", "--write-model")


def _plan(args: argparse.Namespace) -> int:
    _check_write_model(args)
    pool = _pool(args)
    problem, searched = (pool.problem, None) if pool is not None else _single_problem(args)
    problem, capacity = fits_question(problem, args.capacity)
    if asks_fit(problem, capacity):
        return _answer_fit(args, problem, capacity, pool)
    progress = ProgressLine(problem.lower_bound, args.quiet)
    try:
        # stdout carries the plan only: what prints during the search (Ray's notes on a dead
        # worker, say) goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            plan = _solve(args, problem, on_progress=progress)
            if pool is None and args.schedule not in (None, "fixed"):
                plan = with_schedule(plan, problem, searched)
            data = plan.to_dict()
            if pool is not None:
                data["pool"] = _compare_alone(args, pool, plan)
    finally:
        progress.close()
    if args.write_model is not None:
        write_scheduled_model(args.input[0], problem.document, plan.schedule, args.write_model)  # type: ignore[arg-type, union-attr]
    text = plan.to_csv() if args.format == "csv" else plan_json(data)
    write_text(args.output, text)
    return 0


def _solve(args: argparse.Namespace, problem: Problem, **callbacks: Any) -> Plan | MemoryPlan:
    """``solve`` with the algorithm, settings and workers the flags give."""
    settings = _settings(args, args.algorithm)
    return solve(
        problem, args.algorithm, settings, workers=args.workers, ray_address=args.ray_address, **callbacks
    )


def _compare_alone(args: argparse.Namespace, pool: Pool, pooled: Plan | MemoryPlan) -> dict[str, Any]:
    """Each model planned alone by the same search, beside the pooled arena (says so on stderr)."""
    comparison = compare_alone(pool, pooled, lambda p: _solve(args, p))
    print(
        f"pooled {comparison.pooled_peak} bytes; alone: sum {comparison.sum_alone}, largest "
        f"{comparison.max_alone}",
        file=sys.stderr,
    )
    return comparison.to_dict()


def _answer_fit(args: argparse.Namespace, problem: Problem, capacity: int | None, pool: Pool | None) -> int:
    """Fits (the plan, exit 0) or does not fit (the best found and any proof, exit 3)."""
    progress = ProgressLine(problem.lower_bound, args.quiet)

    def solve_one(p: Problem, s: GASettings | None, **callbacks: Any) -> Plan | MemoryPlan:
        return solve(p, args.algorithm, s, workers=args.workers, ray_address=args.ray_address, **callbacks)

    try:
        with contextlib.redirect_stdout(sys.stderr):
            answer = answer_fit(
                problem, capacity, solve_one, _settings(args, args.algorithm), on_progress=progress
            )
    finally:
        progress.close()
    if answer.fits and args.format == "csv" and answer.plan is not None:
        write_text(args.output, answer.plan.to_csv())
    else:
        data = answer.to_dict()
        if pool is not None and answer.plan is not None:
            with contextlib.redirect_stdout(sys.stderr):
                data["pool"] = _compare_alone(args, pool, answer.plan)
        write_text(args.output, json.dumps(data, indent=2))
    if not answer.fits:
        print(f"gaplanner: does not fit: {answer.proof or answer.reason}", file=sys.stderr)
    return 0 if answer.fits else EXIT_DOES_NOT_FIT


def _compare(args: argparse.Namespace) -> int:
    problem = _load(args, args.input)
    progress = ProgressLine(problem.lower_bound, args.quiet)
    try:
        rows = compare(problem, _settings(args), on_progress=progress)
    finally:
        progress.close()
    print(f"{problem.name}: {problem.n} blocks, lower bound {problem.lower_bound}")
    print(f"{'algorithm':<22}{'peak':>16}{'ratio':>9}{'seconds':>10}")
    for row in rows:
        mark = "  optimal" if row.optimal else ""
        print(f"{row.algorithm:<22}{row.peak:>16}{row.ratio:>9.4f}{row.seconds:>10.3f}{mark}")
    return 0


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
        type=_positive_int,
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


def _verify_memories(problem: Problem, plan: str) -> int:
    """Check a plan across memories: each memory on its own, and the model's rules per tensor."""
    assert problem.memories is not None
    offsets, memories = read_offsets(problem, plan), read_memories(problem, plan)
    index = {name: m for m, name in enumerate(problem.memories.ids)}
    unknown = sorted(set(memories.values()) - set(index))
    if unknown:
        raise InputError(f"the plan names memory {unknown[0]!r}, which the input does not list", "plan")
    memory_of = np.array([index.get(memories.get(bid, ""), -1) for bid in problem.ids], np.int64)
    violation = find_memory_violation(problem, memory_of, offsets)
    if violation is None and problem.document is not None:
        tensor_offsets = read_tensor_offsets(problem, plan)
        violation = check_tensor_plan(problem.document, problem.rules, tensor_offsets, memories=memories)
    if violation is not None:
        raise PlanError(f"invalid plan: {violation}")
    peaks = {name: int((offsets + problem.sizes)[memory_of == m].max(initial=0)) for name, m in index.items()}
    print(f"valid: {problem.n} blocks, peaks {peaks}, cost {problem.memories.cost(memory_of):.6g}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    problem = load_problem(args.input, rules=_rules(args))
    if problem.memories is not None:
        return _verify_memories(problem, args.plan)
    offsets = read_offsets(problem, args.plan)
    violation = find_violation(problem, offsets)
    if violation is None and problem.document is not None:  # a graph: every tensor, by the model's rules
        tensor_offsets = read_tensor_offsets(problem, args.plan)
        violation = check_tensor_plan(problem.document, problem.rules, tensor_offsets)
    if violation is not None:
        raise PlanError(f"invalid plan: {violation}")
    peak = int((offsets + problem.sizes).max())
    # Blocks, as the docs and every other command count them; a graph's tensors were checked too.
    tensors = f" ({len(problem.tensors.ids)} tensors)" if problem.tensors is not None else ""
    print(f"valid: {problem.n} blocks{tensors}, peak {peak}, lower bound {problem.lower_bound}")
    return 0


def _bounds(args: argparse.Namespace) -> int:
    problem = load_problem(args.input, rules=_rules(args))
    print(
        json.dumps(
            {
                "name": problem.name,
                "blocks": problem.n,
                "conflicts": problem.conflicts.edge_count,
                "total_size": problem.total_size,
                "lower_bound": problem.lower_bound,
                "interval_conflicts": problem.interval_conflicts,
            },
            indent=2,
        )
    )
    return 0


def _schema(args: argparse.Namespace) -> int:
    write_text(args.output, json.dumps(document_json_schema(), indent=2))
    return 0


def _zoo(args: argparse.Namespace) -> int:
    from gaplanner.documents.zoo import zoo_names

    rows = []
    for name in zoo_names():
        for cores in args.cores:
            problem = load_problem(f"zoo:{name}@{cores}")
            rows.append(
                {
                    "name": problem.name,
                    "blocks": problem.n,
                    "conflicts": problem.conflicts.edge_count,
                    "total_size": problem.total_size,
                    "lower_bound": problem.lower_bound,
                }
            )
    if args.format == "json":
        write_text(None, json.dumps(rows, indent=2))
        return 0
    print(f"{'input':<22} {'blocks':>7} {'conflicts':>10} {'lower bound':>12} {'total':>12}")
    for row in rows:
        print(
            f"{'zoo:' + row['name']:<22} {row['blocks']:>7} {row['conflicts']:>10} "
            f"{row['lower_bound']:>12,} {row['total_size']:>12,}"
        )
    return 0


def _add_zoo_parser(sub: argparse._SubParsersAction) -> None:
    zoo = sub.add_parser("zoo", help="list the model zoo (zoo:NAME, zoo:NAME@N) with sizes and bounds")
    zoo.add_argument(
        "--cores", type=int, nargs="+", default=[1], help="core counts to list (e.g. --cores 1 2 4)"
    )
    zoo.add_argument("--format", choices=["table", "json"], default="table")
    zoo.set_defaults(handler=_zoo)


def _import(args: argparse.Namespace) -> int:
    from gaplanner.documents.onnx_import import import_onnx
    from gaplanner.documents.writer import document_text
    from gaplanner.problem.problem import build_problem

    if str(args.model).endswith(".pt2"):
        from gaplanner.documents.torch_import import from_exported_program, load_exported_program

        if args.batch is not None or args.dim:
            flag = "--batch" if args.batch is not None else "--dim"
            raise InputError("applies to ONNX models; a .pt2 plans dynamic sizes at their maximum", flag)
        doc = from_exported_program(load_exported_program(args.model), inplace=not args.no_inplace)
    else:
        try:
            doc = import_onnx(args.model, inplace=not args.no_inplace, **_shapes(args))
        except InputError as exc:
            raise _shape_flag(exc) from None
    problem = build_problem(doc)  # the document must plan: fail here, not later
    write_text(args.output, document_text(doc))
    assert problem.tensors is not None
    print(
        f"{args.output or 'stdout'}: {len(doc.operators or [])} operators, "
        f"{len(problem.tensors.ids)} tensors in {problem.n} blocks, "
        f"lower bound {problem.lower_bound:,} bytes",
        file=sys.stderr,
    )
    return 0


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
    imp.set_defaults(handler=_import)


def _convert(args: argparse.Namespace) -> int:
    from gaplanner.problem.convert import convert

    write_text(args.output, convert(load_problem(args.input, rules=_rules(args)), args.to))
    return 0


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
    _add_rules_options(conv)
    conv.set_defaults(handler=_convert)


def _serve(args: argparse.Namespace) -> int:
    try:
        from service.app import run_server
    except ImportError as exc:
        raise InputError(
            f"the service needs its extra: pip install 'gaplanner[service]' ({exc.name} is missing)", "serve"
        ) from None
    run_server(host=args.host, port=args.port, db=args.db, workers=args.jobs, log_level=args.log_level)
    return 0


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
    serve.set_defaults(handler=_serve)


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
        type=_positive_int,
        help="bytes available: answer whether the input fits (exit 0, with the plan) or not (exit 3, with "
        "the best peak found and, when the lower bound exceeds the capacity, the proof)",
    )
    _add_search_options(plan)
    _add_rules_options(plan)
    _add_shape_options(plan)
    _add_pool_options(plan)
    workers = plan.add_argument_group("workers (Ray)")
    workers.add_argument(
        "--workers",
        type=_positive_int,
        default=os.cpu_count() or 1,
        help="islands evolved at once; on Ray workers when a cluster is given (or Ray already runs), "
        "else in this process (default: this machine's cores, %(default)s)",
    )
    workers.add_argument(
        "--ray-address",
        default=os.environ.get("RAY_ADDRESS"),
        help="an existing Ray cluster to run on (default: $RAY_ADDRESS, else the islands run here)",
    )
    plan.set_defaults(handler=_plan)

    comparison = sub.add_parser("compare", help="every baseline and the GA on one input, as a table")
    comparison.add_argument("input")
    _add_search_options(comparison)
    _add_rules_options(comparison)
    _add_shape_options(comparison)
    comparison.set_defaults(handler=_compare)

    verify = sub.add_parser("verify", help="check a plan against its input")
    verify.add_argument("input")
    verify.add_argument("plan", help="a JSON plan (from 'plan') or a CSV with id,offset columns")
    _add_rules_options(verify)
    verify.set_defaults(handler=_verify)

    bounds = sub.add_parser("bounds", help="blocks, conflicts and the lower bound of an input")
    bounds.add_argument("input")
    _add_rules_options(bounds)
    bounds.set_defaults(handler=_bounds)

    schema = sub.add_parser("schema", help="print the input document's JSON Schema")
    schema.add_argument("--output", "-o")
    schema.set_defaults(handler=_schema)

    _add_zoo_parser(sub)
    _add_import_parser(sub)
    _add_convert_parser(sub)
    _add_serve_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except GaplannerError as exc:
        print(f"gaplanner: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return 0
    except OSError as exc:
        print(f"gaplanner: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
