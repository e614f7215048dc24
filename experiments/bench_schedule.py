"""The operator-order benchmark: every order's bound, the search's, the certificate and the planned arena.

    python -m experiments.bench_schedule [--only resnet_train unet_train] [--time-limit 10]
        [--plan-seconds 5] [--graphs DIR] [--out docs/results/schedule.md]

For every graph of the training-graph set (:mod:`experiments.training`):
the bound of the order the graph comes in, of each compiler order (as late
as possible, post-order, depth-first, breadth-first, least-peak-memory-first
as in PyTorch Inductor, XLA-style list scheduling) and of the exact parts'
order where the exact search solves some parts; the order search's chosen
bound (:func:`gaplanner.schedule.search_schedule`, ``--time-limit`` seconds);
naive local search over priorities for the same seconds
(:mod:`experiments.naive_order_search`); the order-free lower bound and its
origin; and the arena of a verified plan of the chosen order (the GA,
``--plan-seconds``). Bounds are given as fractions of the given order's.
The table goes to ``--out`` with the summary the issue's targets ask for.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from experiments.naive_order_search import NaiveResult, naive_order_search
from experiments.report import results_folder, write_results
from experiments.training import FIRST_SET, GRAPHS, graph_names, load_graph
from gaplanner import GASettings, build_problem, solve
from gaplanner.schedule import ScheduleResult, ScheduleSettings, apply_schedule, search_schedule

COMPILER_ORDERS = ("late", "post-order", "dfs", "bfs", "lpmf", "list")
#: The certificate's target: the chosen order's bound within this factor of the order-free bound.
NEAR = 1.05


@dataclass(frozen=True)
class Row:
    """One graph's figures."""

    name: str
    operators: int
    result: ScheduleResult
    naive: NaiveResult
    arena: int
    plan_bound: int
    plan_seconds: float

    def ratio(self, value: int) -> float:
        return value / self.result.given_bound

    @property
    def best_compiler(self) -> int:
        return min(self.result.baselines[name] for name in ("given", *COMPILER_ORDERS))


def measure(name: str, folder: Path, time_limit: float, plan_seconds: float) -> Row:
    """Search the graph's order, run the naive anchor for as long, plan the chosen order."""
    document = load_graph(name, folder)
    result = search_schedule(document, settings=ScheduleSettings(time_limit=time_limit, seed=0))
    naive = naive_order_search(document, time_limit, seed=0)
    started = time.perf_counter()
    problem = build_problem(apply_schedule(document, result.order), name)
    plan = solve(problem, "ga", GASettings(time_limit=plan_seconds, seed=0))
    return Row(
        name=name,
        operators=len(document.operators or []),
        result=result,
        naive=naive,
        arena=plan.peak,
        plan_bound=problem.lower_bound,
        plan_seconds=time.perf_counter() - started,
    )


HEADER = [
    "graph",
    "operators",
    "given order's bound (MB)",
    *COMPILER_ORDERS,
    "exact parts",
    "naive local search",
    "search (chosen)",
    "order-free bound",
    "planned arena",
    "arena / chosen",
    "chosen / order-free",
    "search s",
    "naive s",
    "plan s",
]


def cells(row: Row) -> list[object]:
    r = row.result
    exact = r.baselines.get("exact parts")
    return [
        row.name,
        row.operators,
        f"{r.given_bound / 1e6:.2f}",
        *(f"{row.ratio(r.baselines[name]):.3f}" for name in COMPILER_ORDERS),
        "-" if exact is None else f"{row.ratio(exact):.3f}",
        f"{row.ratio(row.naive.bound):.3f}",
        f"**{row.ratio(r.chosen_bound):.3f}**",
        f"{row.ratio(r.order_free_bound):.3f}",
        f"{row.ratio(row.arena):.3f}",
        f"{row.arena / r.chosen_bound:.3f}",
        f"{r.chosen_bound / r.order_free_bound:.3f}",
        f"{r.seconds:.1f}",
        f"{row.naive.seconds:.1f}",
        f"{row.plan_seconds:.1f}",
    ]


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _means(what: str, rows: list[Row]) -> str:
    """The geometric means over ``rows``; the order-free bounds' is the lowest any orders could reach."""
    return (
        f"- Geometric mean of planned arena / given order's bound over {what}: "
        f"**{_geomean([row.ratio(row.arena) for row in rows]):.3f}** (the chosen orders' bounds: "
        f"{_geomean([row.ratio(row.result.chosen_bound) for row in rows]):.3f}; naive local search's: "
        f"{_geomean([row.ratio(row.naive.bound) for row in rows]):.3f}; the best compiler order's: "
        f"{_geomean([row.ratio(row.best_compiler) for row in rows]):.3f}; no order below the order-free "
        f"bounds': {_geomean([row.ratio(row.result.order_free_bound) for row in rows]):.3f})."
    )


def summary(rows: list[Row]) -> str:
    """The targets' figures, each computed from the rows above."""
    near = [row for row in rows if row.result.chosen_bound <= NEAR * row.result.order_free_bound]
    far = [row for row in rows if row not in near]
    above_compiler = [row.name for row in rows if row.result.chosen_bound > row.best_compiler]
    above_naive = [row.name for row in rows if row.result.chosen_bound > row.naive.bound]
    origins = sorted({row.result.bound_origin for row in rows})
    worst_arena = max(row.arena / row.result.chosen_bound for row in rows)
    first = [row for row in rows if row.name in FIRST_SET]
    sets = [(f"the {len(first)} graphs of the first set", first)] if 0 < len(first) < len(rows) else []
    lines = [
        *(
            _means(what, subset)
            for what, subset in [*sets, (f"{'all' if sets else 'the'} {len(rows)} graphs", rows)]
        ),
        f"- Chosen order's bound within {NEAR}x of the order-free bound: **{len(near)} of {len(rows)}** "
        f"graphs ({', '.join(row.name for row in near) or 'none'})"
        + (
            "; the others at "
            + ", ".join(
                f"{row.name} {row.result.chosen_bound / row.result.order_free_bound:.3f}x" for row in far
            )
            if far
            else ""
        )
        + ".",
        f"- Chosen bound above the best compiler order's: {', '.join(above_compiler) or 'on no graph'}; "
        f"above naive local search's: {', '.join(above_naive) or 'on no graph'}.",
        f"- Planned arena / chosen order's bound: at most {worst_arena:.3f}.",
        "- Origins of the order-free bound: " + "; ".join(origins) + ".",
    ]
    return "\n".join(lines)


NOTES = """
Columns from *late* to *planned arena* are fractions of the given order's bound
(the max-load of the operators in the order the graph lists them). *late*: every
operator as late as possible; *post-order*, *dfs*, *bfs*: traversals; *lpmf*:
least peak memory first (PyTorch Inductor's `reorder_for_peak_memory`); *list*:
XLA-style list scheduling; *exact parts*: the exact search's best order of the
parts it solves (`-`: none); *naive local search*: random pairwise priority
swaps from the best of those orders, a plain Python loop for as many seconds as
the search had, scored by the same bound function; *search (chosen)*: the order
`search_schedule` returns; *order-free bound*: a lower bound over every order;
*planned arena*: the GA's verified plan of the chosen order. Graphs: see
experiments/training/README.md.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=Path, default=GRAPHS)
    parser.add_argument("--only", nargs="+")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--plan-seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    names = [n for n in graph_names(args.graphs) if not args.only or n in args.only]
    if not names:
        print("no graphs to run", file=sys.stderr)
        return 2
    rows = []
    for name in names:
        rows.append(row := measure(name, args.graphs, args.time_limit, args.plan_seconds))
        print("  ".join(str(c) for c in cells(row)), flush=True)
    out = args.out or results_folder() / "schedule.md"
    command = "python -m experiments.bench_schedule " + shlex.join(argv if argv is not None else sys.argv[1:])
    write_results(
        out.stem,
        "Operator order: every order's bound, the search, the certificate, the planned arena",
        HEADER,
        [cells(row) for row in rows],
        command.strip(),
        notes=summary(rows) + "\n" + NOTES,
        folder=out.parent,
    )
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
