"""Real models and the zoo under the runtime's memory rules: lower bound and GA peak, rule by rule.

    python -m experiments.bench_models [--models experiments/models/onnx] [--time-limit 10]
        [--zoo-cores 1 2 4] [--only bert resnet50] [--before REV] [--out docs/results/models.md]

For every stripped ONNX model of ``experiments/models/onnx`` (the dynamo
exports; with ``--torchscript`` also the TorchScript ones, ``*.ts.onnx``,
summed up apart) and every zoo network (``zoo:NAME``, ``zoo:NAME@2``,
``zoo:NAME@4``), the same document is planned under four sets of rules:

- (a) outputs kept alive, every tensor its own block (no views, no in-place);
- (b) (a) + views share their input's bytes;
- (c) (b) + in-place writes, taken where the planner judges they pay (``auto``);
- (d) (b) + every legal in-place write taken (``always``).

Each column gives the lower bound and the GA's peak (seed 0, ``--time-limit``
seconds; every plan is verified, the model-level check included, by
``make_plan``). ``c/a`` is (c)'s GA peak over (a)'s lower bound; the geometric
mean over each set is the headline. The bound of the old rules (outputs live
only until their last reader, which is wrong) is shown for reference.

The planner's time on the largest real graph: the import, the problem build,
the first-fit plan and the GA's seconds per evaluated order, under (a) and
(c); ``--before REV`` also times the same steps with the package as it was at
git revision ``REV`` (today's planner before these rules), in a subprocess.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from experiments.common import markdown_table
from gaplanner.documents.onnx_import import import_onnx
from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document
from gaplanner.documents.zoo import zoo_document, zoo_names
from gaplanner.problem.problem import build_problem
from gaplanner.search.ga import GASettings
from gaplanner.solve import solve

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = ROOT / "experiments" / "models" / "onnx"
DEFAULT_OUT = ROOT / "docs" / "results" / "models.md"

#: The rules compared, in column order.
RULES: dict[str, Rules] = {
    "a": Rules(keep_outputs=True, views=False, inplace="never"),
    "b": Rules(keep_outputs=True, views=True, inplace="never"),
    "c": Rules(keep_outputs=True, views=True, inplace="auto"),
    "d": Rules(keep_outputs=True, views=True, inplace="always"),
}
#: What the planner assumed before: an output lives only until its last reader.
OLD_RULES = Rules(keep_outputs=False, views=False, inplace="never")


@dataclass(frozen=True)
class Column:
    """One set of rules on one model: blocks, lower bound and the GA's verified peak."""

    blocks: int
    bound: int
    peak: int
    evaluations: int
    seconds: float


@dataclass(frozen=True)
class Row:
    name: str
    kind: str  # "model", "torchscript" or "zoo"
    old_bound: int
    columns: dict[str, Column]

    @property
    def gain(self) -> float:
        """(c)'s peak over (a)'s bound: what the new rules save against the old plan's best case."""
        return self.columns["c"].peak / self.columns["a"].bound


def _plan(doc: Document, rules: Rules, time_limit: float) -> Column:
    problem = build_problem(doc, rules=rules)
    plan = solve(problem, "ga", GASettings(time_limit=time_limit, seed=0))
    evaluations = plan.search.evaluations if plan.search else 0
    return Column(problem.n, problem.lower_bound, plan.peak, evaluations, plan.elapsed)


def measure(name: str, kind: str, doc: Document, time_limit: float) -> Row:
    old_bound = build_problem(doc, rules=OLD_RULES).lower_bound
    columns = {key: _plan(doc, rules, time_limit) for key, rules in RULES.items()}
    return Row(name, kind, old_bound, columns)


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def rows_table(rows: list[Row]) -> str:
    header = ["input", "blocks a/b/c", "old bound"]
    for key in RULES:
        header += [f"({key}) bound", f"({key}) GA"]
    header += ["c/a", "d/c"]
    body = []
    for row in rows:
        cols = row.columns
        blocks = "/".join(str(cols[k].blocks) for k in "abc")
        cells = [row.name, blocks, _mib(row.old_bound)]
        for key in RULES:
            mark = "" if cols[key].peak <= cols[key].bound else f" ({cols[key].peak / cols[key].bound:.3f}x)"
            cells += [_mib(cols[key].bound), _mib(cols[key].peak) + mark]
        cells += [f"{row.gain:.3f}", f"{cols['d'].peak / cols['c'].peak:.3f}"]
        body.append(cells)
    return markdown_table(header, body)


def summary(rows: list[Row]) -> list[str]:
    lines = []
    sets = (("model", "real models"), ("torchscript", "TorchScript exports"), ("zoo", "zoo networks"))
    for kind, label in sets:
        chosen = [r for r in rows if r.kind == kind]
        if not chosen:
            continue
        gains = [r.gain for r in chosen]
        at_bound = sum(r.columns["c"].peak <= r.columns["c"].bound for r in chosen)
        always = _geomean([r.columns["d"].peak / r.columns["c"].peak for r in chosen])
        views = _geomean([r.columns["b"].peak / r.columns["a"].bound for r in chosen])
        lines.append(
            f"- {label} ({len(chosen)}): geometric mean of (c) GA peak / (a) bound **{_geomean(gains):.3f}** "
            f"(range {min(gains):.3f}–{max(gains):.3f}); views alone {views:.3f}; (c) GA at its bound on "
            f"{at_bound} of {len(chosen)}; always-merge (d) against auto (c), GA peaks: {always:.3f}"
        )
    return lines


# ---- the planner's time on the largest graph ----

#: Run in a fresh interpreter per planner version, so each is timed the same way. ``rules`` is
#: ``{}`` for a version that predates them.
_TIMING_SCRIPT = """
import json, statistics, sys, time
import numpy as np
from gaplanner.search.decoder import decode_population
from gaplanner.search.baselines import first_fit
from gaplanner.search.ga import GASettings
from gaplanner.documents.onnx_import import import_onnx
from gaplanner.problem.problem import build_problem
from gaplanner.solve import solve
path, time_limit, repeats, rules = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
extra = {}
if rules:
    from gaplanner.documents.rules import Rules
    extra = {"rules": Rules(**rules)}
def median(fn):
    times = []
    for _ in range(repeats):
        started = time.perf_counter(); out = fn(); times.append(time.perf_counter() - started)
    return out, statistics.median(times)
import_onnx(path)
doc, load = median(lambda: import_onnx(path))
build_problem(doc, **extra)  # imports and first-touches outside the timings
problem, build = median(lambda: build_problem(doc, **extra))
first_fit(problem)
_, ff = median(lambda: first_fit(problem))
rng = np.random.default_rng(0)
orders = np.array([rng.permutation(problem.n) for _ in range(256)], np.int64)
decode_population(problem, orders)
_, decode = median(lambda: decode_population(problem, orders))
solve(problem, "ga", GASettings(time_limit=0.1, seed=0))
started = time.perf_counter()
plan = solve(problem, "ga", GASettings(time_limit=time_limit, seed=0))
ga = time.perf_counter() - started
print(json.dumps({"blocks": problem.n, "bound": problem.lower_bound, "peak": plan.peak, "import": load,
                  "build": build, "first-fit": ff, "decode": decode / len(orders), "ga": ga}))
"""


def _timings(package: Path, path: Path, rules: Rules | None, time_limit: float, repeats: int) -> dict:
    """The timing script's figures with the package folder ``package`` first on the path."""
    settings = {} if rules is None else asdict(rules)
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            _TIMING_SCRIPT,
            str(path),
            str(time_limit),
            str(repeats),
            json.dumps(settings),
        ],
        cwd=package,  # ``python -c`` puts the working folder first on the path
        env={**os.environ, "PYTHONPATH": str(package)},
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def timing_table(path: Path, time_limit: float, repeats: int, before: str | None) -> str:
    runs = {f"({key})": _timings(ROOT, path, RULES[key], time_limit, repeats) for key in "ac"}
    if before:
        with tempfile.TemporaryDirectory(prefix="gaplanner-before-") as folder:
            archive = subprocess.run(
                ["git", "archive", before, "gaplanner"], cwd=ROOT, check=True, capture_output=True
            )
            subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
            runs[f"before ({before})"] = _timings(Path(folder), path, None, time_limit, repeats)
    header = ["planner", "blocks", "bound MiB", "GA MiB", "import s", "build s", "first-fit ms"]
    header += ["decode µs per order", "GA s (to its plan)"]
    body = [
        [
            name,
            t["blocks"],
            _mib(t["bound"]),
            _mib(t["peak"]),
            f"{t['import']:.3f}",
            f"{t['build']:.3f}",
            f"{1e3 * t['first-fit']:.2f}",
            f"{1e6 * t['decode']:.0f}",
            f"{t['ga']:.2f}",
        ]
        for name, t in runs.items()
    ]
    return markdown_table(header, body)


# ---- inputs ----


def model_paths(folder: Path, torchscript: bool, only: list[str] | None) -> list[Path]:
    paths = sorted(p for p in folder.glob("*.onnx") if torchscript or not p.name.endswith(".ts.onnx"))
    if only:
        paths = [p for p in paths if p.name.removesuffix(".onnx").removesuffix(".ts") in only]
    return paths


def inputs(args: argparse.Namespace) -> list[tuple[str, str, Document]]:
    found: list[tuple[str, str, Document]] = []
    for path in model_paths(args.models, args.torchscript, args.only):
        try:
            kind = "torchscript" if path.name.endswith(".ts.onnx") else "model"
            found.append((path.name.removesuffix(".onnx"), kind, import_onnx(path)))
        except Exception as exc:  # an import failure is a finding: report it, go on
            print(f"skipped {path.name}: {exc}", file=sys.stderr)
    for name in zoo_names():
        for cores in args.zoo_cores:
            if not args.only or name in args.only:
                spec = f"zoo:{name}" + (f"@{cores}" if cores > 1 else "")
                found.append((spec, "zoo", zoo_document(spec)))
    return found


def import_table(folder: Path) -> str:
    """Which stripped files today's importer reads, per exporter, and the first error of each failure."""
    body = []
    for path in sorted(folder.glob("*.onnx")):
        exporter = "TorchScript (opset 17)" if path.name.endswith(".ts.onnx") else "dynamo"
        started = time.perf_counter()
        try:
            doc = import_onnx(path)
        except Exception as exc:
            body.append([path.name, exporter, "no", f"`{str(exc).splitlines()[0][:160]}`"])
            continue
        seconds = time.perf_counter() - started
        body.append([path.name, exporter, "yes", f"{len(doc.tensors or [])} tensors, {seconds:.2f} s"])
    imported = sum(row[2] == "yes" for row in body)
    table = markdown_table(["file", "exporter", "imports", "tensors and import time, or the error"], body)
    return f"{imported} of {len(body)} files import.\n\n{table}"


def largest_model(args: argparse.Namespace) -> Path | None:
    paths = model_paths(args.models, False, args.only)
    return max(paths, key=lambda p: len(import_onnx(p).tensors or []), default=None)


def _load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def zoo_note(rows: list[Row]) -> list[str]:
    """Say so when the zoo's columns are one problem planned four times."""
    zoo = [r for r in rows if r.kind == "zoo"]
    same = all(len({(c.blocks, c.bound) for c in r.columns.values()}) == 1 for r in zoo)
    if not zoo or not same:
        return []
    return [
        "",
        "The zoo's documents declare no views or in-place writes, so each zoo row's four columns are one "
        "problem planned four times: differences there are the GA's run-to-run variation under a time limit.",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS, help="folder of stripped ONNX models")
    parser.add_argument("--torchscript", action="store_true", help="also the TorchScript exports (*.ts.onnx)")
    parser.add_argument("--zoo-cores", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--only", nargs="+", help="model or zoo names to run (default: all)")
    parser.add_argument("--time-limit", type=float, default=10.0, help="GA seconds per plan")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of each timed step (median)")
    parser.add_argument("--before", help="git revision whose planner the timing is compared with")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--timing", action=argparse.BooleanOptionalAction, default=True, help="time the largest real graph"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    load_at_start = _load_average()
    rows = []
    for name, kind, doc in inputs(args):
        rows.append(measure(name, kind, doc, args.time_limit))
        print(f"done {name}: c/a {rows[-1].gain:.3f}", file=sys.stderr, flush=True)
    largest = largest_model(args) if args.timing else None
    timing = timing_table(largest, args.time_limit, args.repeats, args.before) if largest else ""
    imports = import_table(args.models)
    load = (load_at_start, _load_average())
    report = _report(args, rows, largest, timing, imports, load, time.perf_counter() - started, argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _report(
    args: argparse.Namespace,
    rows: list[Row],
    largest: Path | None,
    timing: str,
    imports: str,
    load: tuple[str, str],
    seconds: float,
    argv: list[str] | None,
) -> str:
    options = argv if argv is not None else sys.argv[1:]
    command = shlex.join(["python", "-m", "experiments.bench_models", *options])
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# Real models and the zoo under the runtime's memory rules",
        "",
        f"Generated by `{command.strip()}` on {date} ({platform.machine()}, python "
        f"{platform.python_version()}; {seconds / 60:.0f} min in all). GA: seed 0, {args.time_limit:g} s "
        "per plan (it stops early at the lower bound); every plan verified, the model-level check included.",
        "",
        f"Load average (1, 5, 15 min) at the start {load[0]}, at the end {load[1]}, on {os.cpu_count()} "
        "cores: a load above the core count means other work shared the machine, so the times are "
        "indicative.",
        *zoo_note(rows),
        "",
        "Columns, in MiB: the old bound (outputs live only until their last reader: plans under it can "
        "overwrite a model output); (a) outputs kept alive until the model ends, every tensor its own "
        "block; (b) (a) + views share their input's bytes; (c) (b) + in-place writes where the planner "
        "takes them (`auto`); (d) (b) + every legal in-place write (`always`). A GA peak above its bound "
        "shows its ratio. `blocks a/b/c`: blocks to place under (a), (b), (c). `c/a`: (c)'s GA peak "
        "over (a)'s bound. `d/c`: always-merge's GA peak over auto's.",
        "",
        *summary(rows),
        "",
        rows_table(rows),
    ]
    if largest is not None:
        parts += [
            "",
            f"## The planner's time on the largest real graph ({largest.name})",
            "",
            f"Each planner in a fresh interpreter; medians of {args.repeats} runs; decode: first-fit "
            f"placement of 256 random orders (the GA's inner step, one core); GA: one run of at most "
            f"{args.time_limit:g} s, stopping at the lower bound, baselines and warm-up included. "
            "`before`: the package at that revision (outputs live only until their last reader, "
            "every tensor its own block).",
            "",
            timing,
        ]
    parts += ["", "## Which exports import", "", imports]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.exit(main())
