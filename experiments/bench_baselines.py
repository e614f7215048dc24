"""Baselines on every shared benchmark: blocks, lower bound, conflict-build time, each baseline's ratio.

    python -m experiments.bench_baselines [--benchmarks ../shared/benchmarks] [--suites minimalloc zoo large]

Times are medians of ``--repeats`` runs (after one warm-up that also compiles the decoders).
Each suite's table is printed and written to ``docs/results/baselines-<suite>.md``; the zoo suite
also has the bundled networks split over 2 and 4 cores (``zoo:NAME@N``, multi-core partial orders).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.common import benchmark_csvs, benchmarks_root, markdown_table, timed
from experiments.report import write_results
from gaplanner import load_problem
from gaplanner.documents.zoo import zoo_names
from gaplanner.problem.conflicts import conflicts_from_intervals
from gaplanner.search.baselines import BASELINES

#: Core counts of the split zoo networks in the zoo suite's table.
SPLIT_CORES = (2, 4)

NOTES = """\
Ratio: peak over the lower bound (max load). Times are medians of the repeats
(one run for inputs over 5,000 blocks) and include verifying the plan; build s
is the time to build the conflict graph from the lifetimes (-: a split graph's
conflicts come from its partial order, built with the problem)."""


def suite_row(source: Path | str, repeats: int) -> list[object]:
    """One input's row: size, bound, conflict-build time, and each baseline's ratio and time."""
    problem = load_problem(source)
    repeats = 1 if problem.n > 5000 else repeats
    build = "-"
    if problem.interval_conflicts:
        _, seconds = timed(lambda p=problem: conflicts_from_intervals(p.lower, p.upper), repeats)
        build = f"{seconds:.3f}"
    ratios, seconds = [], []
    for baseline in BASELINES.values():
        plan, elapsed = timed(lambda b=baseline, p=problem: b(p), repeats)
        ratios.append(f"{plan.ratio:.4f}")
        seconds.append(f"{elapsed:.3f}")
    name = source.name if isinstance(source, Path) else source
    print(f"done {name}", file=sys.stderr)
    size = [name, problem.n, problem.conflicts.edge_count, problem.lower_bound, build]
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
        sources: list[Path | str] = list(benchmark_csvs(root, [suite]))
        if suite == "zoo":
            sources += [f"zoo:{name}@{cores}" for cores in SPLIT_CORES for name in zoo_names()]
        rows = [suite_row(source, args.repeats) for source in sources]
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
