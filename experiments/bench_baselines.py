"""Baselines on every shared benchmark: blocks, lower bound, conflict-build time, each baseline's ratio.

    python -m experiments.bench_baselines [--benchmarks ../shared/benchmarks] [--suites minimalloc zoo large]

Times are medians of ``--repeats`` runs (after one warm-up that also compiles the decoders).
Each suite's table is printed and written to ``docs/results/baselines-<suite>.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.common import benchmark_csvs, benchmarks_root, markdown_table, timed
from experiments.report import write_results
from gaplanner import BASELINES, load_problem
from gaplanner.conflicts import conflicts_from_intervals

NOTES = """\
Ratio: peak over the lower bound (max load). Times are medians of the repeats
(one run for inputs over 5,000 blocks) and include verifying the plan; build s
is the time to build the conflict graph from the lifetimes."""


def suite_row(path: Path, repeats: int) -> list[object]:
    """One input's row: size, bound, conflict-build time, and each baseline's ratio and time."""
    problem = load_problem(path)
    repeats = 1 if problem.n > 5000 else repeats
    _, build = timed(lambda p=problem: conflicts_from_intervals(p.lower, p.upper), repeats)
    ratios, seconds = [], []
    for baseline in BASELINES.values():
        plan, elapsed = timed(lambda b=baseline, p=problem: b(p), repeats)
        ratios.append(f"{plan.ratio:.4f}")
        seconds.append(f"{elapsed:.3f}")
    print(f"done {path.name}", file=sys.stderr)
    size = [path.name, problem.n, problem.conflicts.edge_count, problem.lower_bound, f"{build:.3f}"]
    return [*size, *ratios, *seconds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--benchmarks", help="the shared benchmarks folder")
    parser.add_argument("--suites", nargs="+", default=["minimalloc", "zoo", "large"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    root = benchmarks_root(args.benchmarks)
    if root is None:
        print("benchmark data not found: pass --benchmarks or set GAPLANNER_BENCHMARKS", file=sys.stderr)
        return 0
    load_problem("example:seed000_queue")  # compile once, outside the timings
    header = ["input", "blocks", "conflicts", "lower bound", "build s"]
    header += [f"{name} ratio" for name in BASELINES] + [f"{name} s" for name in BASELINES]
    for suite in args.suites:
        rows = [suite_row(path, args.repeats) for path in benchmark_csvs(root, [suite])]
        if not rows:
            continue
        print(markdown_table(header, rows))
        write_results(
            f"baselines-{suite}",
            f"Baselines on the {suite} benchmarks",
            header,
            rows,
            f"python -m experiments.bench_baselines --suites {suite} --repeats {args.repeats}",
            NOTES,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
