"""Pinwheel and tiling packings: our default search beside omnimalloc's branch and bound at its best setting.

omnimalloc's ``PinwheelSource`` and ``TilingSource`` (see
:mod:`experiments.bench_generators`) fill a capacity x makespan rectangle with
tiles, so the capacity (1,048,576) is the optimum and every time section is
full there: a plan at the optimum is a perfect packing. Pinwheels have no
straight cut, so nothing splits them. For each family, block count and seed:
our default search (``ga``: the GA with exact probes beside it) and
omnimalloc's ``SupermallocAllocator`` with 6 threads (its best setting on few
cores: two bound targets at once), one after the other in this process, each
plan verified. The table goes to ``docs/results/pinwheel.md``.

    python -m experiments.bench_pinwheel [--time-limit 10] [--seeds 3] [--sizes 129,257,513,1025]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from functools import partial

from experiments.bench_generators import (
    FAMILIES,
    Instance,
    Solver,
    detail_cell,
    generate,
    runs_on,
    summary_cell,
)
from experiments.common import markdown_table
from experiments.comparators import omnimalloc_allocators
from experiments.report import write_results
from experiments.side_by_side import SolverRun, run_placer, run_solver
from gaplanner import GASettings

SIZES = (129, 257, 513, 1025)  # pinwheels come in 1 + 4k blocks
OURS = "gaplanner default (ga)"
ANCHOR = "omnimalloc B&B, 6 threads"


def solvers(time_limit: float) -> dict[str, Solver]:
    """Ours, then omnimalloc's branch and bound where it is installed."""
    columns: dict[str, Solver] = {
        OURS: partial(run_solver, algorithm="ga", settings=GASettings(time_limit=time_limit))
    }
    others = omnimalloc_allocators(time_limit)
    if "omnimalloc B&B, 6 threads" in others:
        columns[ANCHOR] = partial(run_placer, others["omnimalloc B&B, 6 threads"], label=ANCHOR)
    return columns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance and solver")
    parser.add_argument("--seeds", type=int, default=3, help="instances per family and size (seeds 1..N)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="block counts, e.g. 129,257")
    args = parser.parse_args(argv)
    try:
        import omnimalloc.benchmark.sources  # noqa: F401  (the generators come from omnimalloc)
    except ImportError:
        print("omnimalloc is not installed (the 'compare' extra): nothing to generate", file=sys.stderr)
        return 0
    sizes = tuple(int(size) for size in args.sizes.split(","))
    families = [
        replace(family, sizes=sizes)
        for key in ("pinwheel", "tiling")
        for family in FAMILIES
        if family.key == key
    ]
    columns = solvers(args.time_limit)
    groups = []
    for family in families:
        for blocks in sizes:
            instances = [generate(family, blocks, seed) for seed in range(1, args.seeds + 1)]
            groups.append((family, blocks, instances, [runs_on(instance, columns) for instance in instances]))
    path = write_report(args, groups, list(columns))
    print(f"wrote {path}")
    return 0


def write_report(args, groups, labels: list[str]):
    rows, detail = [], []
    for family, blocks, instances, runs in groups:
        rows.append(
            [
                family.name,
                blocks,
                *(summary_cell(instances, [r.get(label) for r in runs]) for label in labels),
            ]
        )
        detail += [detail_row(instance, run, labels) for instance, run in zip(instances, runs, strict=True)]
    command = (f"python -m experiments.bench_pinwheel --time-limit {args.time_limit:g} --seeds {args.seeds} "
               f"--sizes {args.sizes}")  # fmt: skip
    return write_results(
        "pinwheel",
        "Pinwheel and tiling packings: the default search and omnimalloc's branch and bound",
        ["family", "blocks", *labels],
        rows,
        command=command,
        notes=notes(args, detail, labels),
    )


def detail_row(instance: Instance, run: dict[str, SolverRun], labels: list[str]) -> list[object]:
    return [instance.label, *(detail_cell(instance, run.get(label)) for label in labels)]


def notes(args, detail: list[list[object]], labels: list[str]) -> str:
    return "\n\n".join(
        [
            f"{args.time_limit:g} s per instance and solver, seeds 1 to {args.seeds} of omnimalloc's "
            "generators, the solvers one after the other in one process on a machine shared with other jobs: "
            "compare the ratios more than the seconds. MiniMalloc is not run here (no binary here).",
            "Each cell: the geometric mean of peak / optimum over the seeds · how many reached the optimum "
            "(✓: how many of those the solver proved optimal) · the median seconds until that plan was found "
            "(ours: from the search's trace; omnimalloc's: the whole call). The optimum is the generator's "
            "capacity, which is also the max-load bound, and the generator's own packing reaches it.",
            f"Ours is `gaplanner plan --algorithm ga --time-limit {args.time_limit:g}`: the GA with exact "
            "probes beside it. On a part whose time sections are nearly all at the bound (all of these), the "
            "probes at the bound also use the skyline orders (earliest start first, latest end first), and "
            "every probe counts the blocks its placement order has passed as lying above it (docs/exact.md).",
            "Per instance: peak / optimum, ✓ when proved optimal, in brackets the seconds until that plan "
            "was found.",
            markdown_table(["instance", *labels], detail),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
