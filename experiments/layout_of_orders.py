"""The layout of searched orders: how near the planned arena comes to the chosen order's bound, seed by seed.

    python -m experiments.layout_of_orders [--only mobilenet_v2_train ...] [--seeds 0 1 2 3 4]
        [--time-limit 10] [--plan-seconds 5] [--out docs/results/layout-of-orders.md]

For each graph of the training-graph set and each seed of the order search
(:func:`gaplanner.schedule.search_schedule`, ``--time-limit`` seconds): the
chosen order's bound as a fraction of the given order's; the lifetimes'
shape, given order against chosen (the bytes of the blocks living through at
least a twentieth of the run, as a fraction of that order's bound, and the
pairs of them whose lifetimes cross, neither inside the other nor apart);
then the layouts of the chosen order as fractions of its bound: the best
starting plan before window repair, the repaired one
(:mod:`gaplanner.search.window_repair`; ``-``: the starting plans meet the
bound), and the GA's verified plan in ``--plan-seconds``.

A block freed last-in first-out nests in the blocks around it; the given order
of a training graph frees its saved tensors so, an order chosen for its bound
does not. The chosen order is the search's, its lifetimes tightened
(:mod:`gaplanner.schedule.tighten`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments.report import results_folder, write_results
from experiments.training import GRAPHS, graph_names, load_graph
from gaplanner import GASettings, build_problem, solve
from gaplanner.problem.problem import Problem
from gaplanner.schedule import ScheduleSettings, apply_schedule, search_schedule
from gaplanner.search.starting_plans import REPAIRED, starting_plans

#: A block living through at least this fraction of the run is long-lived.
LONG = 0.05
DEFAULT_GRAPHS = ("mobilenet_v2_train", "densenet_train", "randwire_train")


@dataclass(frozen=True)
class Shape:
    """The long-lived blocks of one order's problem."""

    long_bytes: float  # their bytes over the problem's bound
    crossing: int  # pairs of them whose lifetimes cross


def shape(problem: Problem) -> Shape:
    lower, upper = problem.lower, problem.upper
    run = int(upper.max() - lower.min()) if problem.n else 0
    long = np.flatnonzero((upper - lower) >= LONG * run)
    a, b = lower[long], upper[long]
    crossing = (a[:, None] < a[None, :]) & (a[None, :] < b[:, None]) & (b[:, None] < b[None, :])
    return Shape(float(problem.sizes[long].sum()) / problem.lower_bound, int(crossing.sum()))


def measure(name: str, seed: int, folder: Path, time_limit: float, plan_seconds: float) -> list[object]:
    """One row: the chosen order, the lifetimes' shape both ways, the layouts."""
    document = load_graph(name, folder)
    result = search_schedule(document, settings=ScheduleSettings(time_limit=time_limit, seed=seed))
    given = build_problem(document, name)
    chosen = build_problem(apply_schedule(document, result.order), name)
    plans = starting_plans(chosen)
    before = min(plan.peak for key, plan in plans.items() if key != REPAIRED)
    repaired = plans.get(REPAIRED)
    arena = solve(chosen, "ga", GASettings(time_limit=plan_seconds, seed=0)).peak
    bound = chosen.lower_bound
    old, new = shape(given), shape(chosen)
    return [
        name,
        seed,
        f"{result.chosen_bound / result.given_bound:.3f}",
        f"{old.long_bytes:.2f}",
        f"{new.long_bytes:.2f}",
        old.crossing,
        new.crossing,
        f"{before / bound:.4f}",
        "-" if repaired is None else f"{repaired.peak / bound:.4f}",
        f"**{arena / bound:.4f}**",
    ]


HEADER = [
    "graph",
    "seed",
    "chosen / given",
    "long-lived bytes / bound, given",
    "chosen",
    "crossing pairs, given",
    "chosen",
    "best starting plan / chosen bound",
    "repaired",
    "GA arena",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=Path, default=GRAPHS)
    parser.add_argument("--only", nargs="+", default=list(DEFAULT_GRAPHS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--plan-seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    names = [n for n in args.only if n in graph_names(args.graphs)]
    if not names:
        print("no graphs to run", file=sys.stderr)
        return 2
    rows = []
    for name in names:
        for seed in args.seeds:
            rows.append(row := measure(name, seed, args.graphs, args.time_limit, args.plan_seconds))
            print("  ".join(str(c) for c in row), flush=True)
    out = args.out or results_folder() / "layout-of-orders.md"
    command = "python -m experiments.layout_of_orders " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    write_results(
        out.stem,
        "The layout of searched orders: planned arena against the chosen order's bound, seed by seed",
        HEADER,
        rows,
        command.strip(),
        notes=NOTES,
        folder=out.parent,
    )
    return 0


NOTES = """
*chosen / given*: the chosen order's bound over the given order's. *long-lived
bytes / bound*: the bytes of the blocks living through at least a twentieth of
the run, over that order's bound (given order, chosen order); *crossing
pairs*: pairs of those blocks whose lifetimes cross (one starts inside the
other and ends after it). The last three columns are over the chosen order's
bound: the best starting plan before window repair, the repaired one (`-`: a
starting plan meets the bound), the GA's verified plan (which starts from
them). See [schedule.md](../schedule.md#the-layout-of-a-chosen-order).
"""


if __name__ == "__main__":
    sys.exit(main())
