"""The exact search on MiniMalloc's challenging set (A-K), beside omnimalloc's branch and bound.

Each instance is planned by our exact search and by omnimalloc's
``SupermallocAllocator`` at its default thread count and at 6 threads (its
search tries bound targets in parallel threads, a third as many targets as
threads), one after the other in this process, with the same time limit.
Every plan is verified. Peaks are compared with the best known peak of each
instance (the benchmark folder's README); "proved optimal" means the peak
meets a proved lower bound (omnimalloc: the max-load bound). The table goes to
``docs/results/exact.md``.

    python -m experiments.bench_exact [--time-limit 10] [--benchmarks PATH] [--only A,B]
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from experiments.common import benchmarks_root, markdown_table
from experiments.report import write_results
from gaplanner import find_violation, load_problem
from gaplanner.exact import ExactSettings
from gaplanner.exact import warm_up as warm_up_exact
from gaplanner.ga import GASettings
from gaplanner.kernels import warm_up as warm_up_kernels
from gaplanner.solve import solve

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results" / "exact.md"


HEADLINE_NOTES = """Geometric mean over A–K of peak / best known peak (MiniMalloc's exact
solutions), {time_limit:g} s per instance and solver, one run each, side by side in one
process on the same machine (per instance: [exact.md](exact.md)). A run is proved optimal
when its peak meets a proved lower bound. `gaplanner ga` is the default algorithm: exact
probes before and after the GA, the GA seeded with their plan; `GA alone` is
`--no-exact`, the patent's method. omnimalloc 1.0 (extra `compare`): its branch and
bound (`SupermallocAllocator`) at its default thread count (the machine's cores) and with
`num_threads=6` (it tries threads // 3 bound targets at once, so more threads than cores
help it). MiniMalloc itself is not run by this script."""


def best_known(readme: Path) -> dict[str, int]:
    """Best known peak per instance, from the README's per-instance table."""
    best = {}
    for line in readme.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 4 and cells[0].endswith(".csv") and re.fullmatch(r"\d+", cells[4]):
            best[cells[0].split(".")[0]] = int(cells[4])
    return best


def omnimalloc_runner(threads: int | None):
    """Offsets per block from omnimalloc's branch and bound, or None without the ``compare`` extra."""
    try:
        from omnimalloc import allocate
        from omnimalloc._cpp import Allocation
        from omnimalloc.allocators import SupermallocAllocator
    except ImportError:
        return None

    def run(problem, time_limit: float) -> np.ndarray:
        lifetimes = zip(problem.sizes.tolist(), problem.lower.tolist(), problem.upper.tolist(), strict=True)
        allocations = [Allocation(b, size, lo, hi) for b, (size, lo, hi) in enumerate(lifetimes)]
        placed = allocate(
            allocations, allocator=SupermallocAllocator(timeout=time_limit, num_threads=threads)
        )
        offsets = np.empty(problem.n, np.int64)
        for allocation in placed:
            offsets[allocation.id] = allocation.offset
        return offsets

    return run


def ours(algorithm: str, exact_share: float | None = None):
    """Our solver as a runner: the plan's peak, whether it is proved optimal, when it was found."""

    def run(problem, time_limit: float) -> dict:
        if algorithm == "exact":
            settings = ExactSettings(time_limit=time_limit)
        else:
            settings = GASettings(time_limit=time_limit, seed=1, exact_share=exact_share)
        plan = solve(problem, algorithm, settings)
        found = next(record.elapsed for record in plan.trace if record.best_peak == plan.peak)
        return {"peak": plan.peak, "optimal": plan.optimal, "seconds": plan.elapsed, "found": found}

    return run


def run_other(runner, problem, time_limit: float) -> dict:
    started = time.perf_counter()
    offsets = runner(problem, time_limit)
    seconds = time.perf_counter() - started
    peak = int((offsets + problem.sizes).max())
    if find_violation(problem, offsets, peak) is not None:
        raise SystemExit(f"omnimalloc returned an invalid plan for {problem.name}")
    return {"peak": peak, "optimal": peak <= problem.lower_bound, "seconds": seconds, "found": seconds}


def summary(name: str, rows: list[dict], best: dict[str, int]) -> list[object]:
    ratios = [r["peak"] / best[r["instance"]] for r in rows]
    geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    optimal = [r for r in rows if r["optimal"]]
    median = statistics.median(r["found"] for r in optimal) if optimal else float("nan")
    return [name, f"{geomean:.4f}", f"{len(optimal)} of {len(rows)}", f"{median:.2f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance and solver")
    parser.add_argument("--benchmarks", help="the shared benchmark folder (default $GAPLANNER_BENCHMARKS)")
    parser.add_argument("--only", help="instances to run, e.g. A,B (default all of A-K)")
    parser.add_argument("--output", default=str(RESULTS), help="markdown file to write (default %(default)s)")
    args = parser.parse_args(argv)
    root = benchmarks_root(args.benchmarks)
    if root is None or not (root / "minimalloc").is_dir():
        print("benchmark folder not found: give --benchmarks or set GAPLANNER_BENCHMARKS", file=sys.stderr)
        return 0
    best = best_known(root / "minimalloc" / "README.md")
    names = args.only.split(",") if args.only else sorted(n for n in best if len(n) == 1)
    solvers = {
        "gaplanner exact": ours("exact"),
        "gaplanner ga (default: GA + exact probes)": ours("ga"),
        "gaplanner GA alone (seed 1)": ours("ga", exact_share=0),
    }
    for label, threads in (("omnimalloc B&B, default threads (2)", None), ("omnimalloc B&B, 6 threads", 6)):
        runner = omnimalloc_runner(threads)
        if runner is not None:
            solvers[label] = runner
    warm_up_exact()
    warm_up_kernels()
    results: dict[str, list[dict]] = {label: [] for label in solvers}
    for name in names:
        problem = load_problem(root / "minimalloc" / f"{name}.1048576.csv")
        for label, runner in solvers.items():
            if label.startswith("gaplanner"):
                row = runner(problem, args.time_limit)
            else:
                row = run_other(runner, problem, args.time_limit)
            row["instance"] = name
            results[label].append(row)
            mark = " optimal" if row["optimal"] else ""
            print(f"{name} {label:<34} peak {row['peak']:>9} ({row['peak'] / best[name]:.4f}) "
                  f"{row['seconds']:6.2f} s{mark}", flush=True)  # fmt: skip
    write_report(Path(args.output), args, names, best, results)
    return 0


def write_report(
    path: Path, args, names: list[str], best: dict[str, int], results: dict[str, list[dict]]
) -> None:
    labels = list(results)
    header = ["instance", "best known", *(f"{label}: peak / best (s)" for label in labels)]
    rows = []
    for k, name in enumerate(names):
        cells = [name, f"{best[name]:,}"]
        for label in labels:
            r = results[label][k]
            star = " ✓" if r["optimal"] else ""
            cells.append(f"{r['peak'] / best[name]:.4f}{star} ({r['found']:.2f})")
        rows.append(cells)
    totals = [summary(label, results[label], best) for label in labels]
    command = "python -m experiments.bench_exact" + (
        f" --time-limit {args.time_limit:g}" if args.time_limit != 10 else ""
    )
    text = "\n".join(
        [
            "# Exact search on MiniMalloc's challenging set",
            "",
            f"Generated by `{command}` on {datetime.date.today().isoformat()} "
            f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}); "
            f"{args.time_limit:g} s per instance and solver, run one after the other in one process.",
            "",
            "The machine was shared with other jobs while this ran, so every time is inflated by an "
            "unknown factor; the solvers ran side by side, so their ratios are comparable.",
            "",
            markdown_table(
                [
                    "solver",
                    "peak / best known (geometric mean)",
                    "proved optimal",
                    "median seconds to the optimum (proved ones)",
                ],
                totals,
            ),
            "",
            "Per instance: peak / best known peak, ✓ when proved optimal, and in brackets the seconds "
            "until that plan was found (ours: from the search's own trace; omnimalloc: the whole call).",
            "",
            markdown_table(header, rows),
            "",
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")
    headline = write_results(
        "headline", "Against the anchors: MiniMalloc's challenging set A–K",
        ["solver", "A–K peak / best known", "proved optimal", "median s to the optimum"],
        sorted(totals, key=lambda row: float(row[1])), command,
        HEADLINE_NOTES.format(time_limit=args.time_limit), folder=path.parent,
    )  # fmt: skip
    print(f"wrote {headline}")


if __name__ == "__main__":
    raise SystemExit(main())
