"""The GA and the exact probes side by side: each thread's work per trade, with main's constant quantum
and with the cost model of :mod:`gaplanner.search.pace`.

    python -m experiments.bench_side_by_side [--benchmarks PATH] [--seconds 5] [--quality-seconds 10]
        [--seeds 0,1,2] [--sections cost,threads,quality]

* ``cost``: each search alone on this thread (the kernels on one thread), from the
  better of first-fit's and greedy-size's plans: CPU seconds per placement of
  the exact probes and per evaluation of the GA; the placements per
  evaluation measured beside the model's.
* ``threads``: the default search (``ga``, ``stall_generations=None``, seed
  0, ``--seconds``): the GA's generations and each thread's CPU seconds (the
  GA's thread by ``time.thread_time``, the probes' as the rest of the
  process's), with the quanta of main's constant (*before*: a quarter of a
  placement per block the settings' generation decodes) and of the model (*after*).
* ``quality``: MiniMalloc's challenging set A–K at ``--quality-seconds``, the
  default search, median peak over the best known peak across ``--seeds``, before and after.

Every plan is verified. One process, one search at a time; the table goes to
``docs/results/side_by_side.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from experiments.bench_exact import best_known
from experiments.common import benchmarks_root, markdown_table
from experiments.report import write_results
from experiments.side_by_side import check_plan, geometric_mean
from gaplanner import GASettings, Problem, load_problem, native, solve
from gaplanner.problem.loading import problem_from_json
from gaplanner.search import side_by_side
from gaplanner.search.baselines import first_fit, greedy_size
from gaplanner.search.exact import ExactSearch
from gaplanner.search.ga.loop import run_ga
from gaplanner.search.ga.settings import most_scored_per_generation
from gaplanner.search.pace import QUANTUM_GENERATIONS, Pace, placements_per_evaluation

#: Main's quantum before the model: placements per block the settings' generation decodes.
CONSTANT_PLACEMENTS_PER_DECODED_BLOCK = 0.25
LETTERS = "ABCDEFGHIJK"
GRAPHS = ("zoo:resnet50@2", "zoo:resnet50@4", "zoo:densenet121@2", "zoo:densenet121@4", "zoo:mobilenetv2@4")
SYNTHETIC = (1000, 4000, 16000)
THREADS = ("unreachable-150", "unreachable-1000", "A", "D", "E", "J", "zoo:densenet121@4")


@dataclass(frozen=True)
class _ConstantPace:
    """Main's quanta: the same number of placements every generation, from the settings alone."""

    first_quantum: int

    @classmethod
    def of(cls, problem: Problem, search: ExactSearch, settings: GASettings) -> _ConstantPace:
        placed = settings.islands * most_scored_per_generation(settings) * problem.n
        return cls(max(1, round(CONSTANT_PLACEMENTS_PER_DECODED_BLOCK * placed)))

    def quantum(self, evaluations: int) -> int:
        return self.first_quantum


@contextlib.contextmanager
def _quanta(variant: str) -> Iterator[None]:
    """The side-by-side search with main's constant quanta (``before``) or the model's (``after``)."""
    pace = side_by_side.Pace
    side_by_side.Pace = _ConstantPace if variant == "before" else Pace  # type: ignore[misc]
    try:
        yield
    finally:
        side_by_side.Pace = pace  # type: ignore[misc]


def _problem(name: str, root: Path | None) -> Problem | None:
    """A problem by name: a letter of MiniMalloc's challenging set, ``unreachable-N`` (the service's test
    problem: blocks below their alignment), ``synthetic-N`` (:mod:`experiments.synthetic`), or a zoo name."""
    if name in LETTERS:
        return load_problem(root / "minimalloc" / f"{name}.1048576.csv") if root else None
    if name.startswith("unreachable-"):
        from service.testing import unreachable_bound_document

        return problem_from_json(unreachable_bound_document(int(name.split("-")[1]), seed=0))
    if name.startswith("synthetic-"):
        from experiments.synthetic import synthetic_problem

        return synthetic_problem(int(name.split("-")[1]), seed=0)
    return load_problem(name)


def _cost_row(name: str, problem: Problem, seconds: float) -> list[object]:
    """Each search alone on this thread for about ``seconds`` of CPU: its cost per unit of work."""
    plans = {"first-fit": first_fit(problem), "greedy-size": greedy_size(problem)}
    search = ExactSearch.start(problem, time.perf_counter(), None, plans)
    model, closed = placements_per_evaluation(problem, search.part_sizes()), False  # as side by side
    began, wall = time.thread_time(), time.perf_counter()
    while not closed and time.thread_time() - began < seconds and time.perf_counter() - wall < 6 * seconds:
        closed = search.advance(time.perf_counter() + 60.0, nodes=search.nodes + 2000).closed
    exact_cpu = time.thread_time() - began
    generations = 1
    while True:
        began = time.thread_time()
        settings = GASettings(time_limit=None, generations=generations, stall_generations=None, seed=0)
        plan = run_ga(problem, settings, plans=plans)
        ga_cpu = time.thread_time() - began
        if ga_cpu > seconds or generations > 1000:
            break
        generations *= 4
    per_placement, per_evaluation = exact_cpu / max(1, search.nodes), ga_cpu / plan.search.evaluations
    measured, degree = per_evaluation / per_placement, problem.conflicts.degrees().mean()
    return [name, problem.n, "intervals" if problem.interval_conflicts else "graph", f"{degree:.0f}",
            f"{search.nodes:,}" + (" (closed)" if closed else ""), f"{per_placement * 1e6:.2f}",
            f"{per_evaluation * 1e6:.1f}",
            f"{measured:.1f}", f"{model:.1f}", f"{model / measured:.2f}"]  # fmt: skip


def _threads(problem: Problem, seconds: float, variant: str) -> tuple[int, float, float, str]:
    """The default search at ``seconds``: generations, the GA's thread's CPU s, the rest's, how it ended."""
    settings = GASettings(time_limit=seconds, stall_generations=None, seed=0)
    with _quanta(variant):
        thread, process = time.thread_time(), time.process_time()
        plan = solve(problem, "ga", settings)
        thread, process = time.thread_time() - thread, time.process_time() - process
    check_plan(problem, plan.offsets, f"default search ({variant})")
    generations = plan.search.generations if plan.search else 0
    return generations, thread, process - thread, plan.stop_reason


def _threads_rows(names: list[str], root: Path | None, seconds: float) -> list[list[object]]:
    rows = []
    for name in names:
        problem = _problem(name, root)
        if problem is None:
            continue
        cells: list[object] = [name, problem.n]
        _threads(problem, min(seconds, 0.5), "after")  # kernels this problem's path needs, loaded untimed
        for variant in ("before", "after"):
            generations, ga, exact, stop = _threads(problem, seconds, variant)
            cells += [generations, f"{ga:.2f}", f"{exact:.2f}", stop]
        rows.append(cells)
        print(*cells, sep=" | ", flush=True)
    return rows


def _quality(root: Path, seconds: float, seeds: list[int]) -> tuple[list[list[object]], dict[str, float]]:
    """Median peak / best known per instance of A–K, before and after; the geometric means."""
    best = best_known(root / "minimalloc" / "README.md")
    rows, ratios = [], {"before": [], "after": []}
    for letter in LETTERS:
        problem = load_problem(root / "minimalloc" / f"{letter}.1048576.csv")
        cells: list[object] = [letter, problem.n, best[letter]]
        for variant in ("before", "after"):
            peaks = []
            for seed in seeds:
                with _quanta(variant):
                    plan = solve(problem, "ga", GASettings(time_limit=seconds, seed=seed))
                peaks.append(check_plan(problem, plan.offsets, f"default search ({variant})"))
            ratio = statistics.median(peaks) / best[letter]
            ratios[variant].append(ratio)
            cells += [f"{ratio:.4f}", " ".join(f"{peak / best[letter]:.4f}" for peak in peaks)]
        rows.append(cells)
        print(*cells, sep=" | ", flush=True)
    return rows, {variant: geometric_mean(values) for variant, values in ratios.items()}


THREADS_HEADER = ["problem", "blocks"] + [
    f"{label} {variant}"
    for variant in ("before", "after")
    for label in ("generations", "GA thread CPU s", "probes' CPU s", "ended by")
]
COST_HEADER = ["problem", "blocks", "lifetimes", "mean degree", "placements measured", "µs per placement",
               "µs per evaluation", "placements per evaluation", "model", "model / measured"]  # fmt: skip
QUALITY_HEADER = ["instance", "blocks", "best known", "before: median", "before: per seed",
                  "after: median", "after: per seed"]  # fmt: skip

NOTES = """\
*Before*: main's quantum, a quarter of a placement per block the settings' generation decodes
({islands} islands × {scored} individuals × blocks), the same every generation. *After*: the
model's (`gaplanner/search/pace.py`), {lead:g} × the model's placements per evaluation the GA
made since the last trade (a quantum {lead:g} generations long as the model reckons them). Both at this code,
where a round of the probes' turns that a quantum cuts short goes on at the next quantum. The
default search on 2 cores: the GA on the caller's thread (the kernels on one thread), the probes on
one of their own; {seconds:g} s, `stall_generations=None`, seed 0. The probes' CPU seconds are
the process's less the GA's thread's. A run a starting plan or the probes close early ends with
`optimal`.

Costs, each search alone on one thread, {cost_seconds:g} s of CPU or until the probes close
(*closed*: then few placements, and the probes' set-up weighs in), from the better of first-fit's
and greedy-size's plans: *placements per evaluation* is the GA's CPU per evaluation over the
probes' per placement; *model*: `placements_per_evaluation` of the parts open at the start.

{cost}

MiniMalloc's challenging set, the default search at {quality_seconds:g} s, seeds {seeds}: peak over
the best known peak (MiniMalloc's), the median over the seeds. Geometric mean: before
{before:.4f}, after {after:.4f}.

{quality}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--benchmarks", help="the shared benchmark folder (MiniMalloc's set in minimalloc/)")
    parser.add_argument("--seconds", type=float, default=5.0, help="time limit of the threads' runs")
    parser.add_argument("--cost-seconds", type=float, default=1.0, help="CPU seconds per search alone")
    parser.add_argument("--quality-seconds", type=float, default=10.0, help="time limit on A–K")
    parser.add_argument("--seeds", default="0,1,2", help="seeds of the runs on A–K")
    parser.add_argument("--sections", default="cost,threads,quality")
    args = parser.parse_args(argv)
    root, sections = benchmarks_root(args.benchmarks), args.sections.split(",")
    seeds = [int(seed) for seed in args.seeds.split(",")]
    cost_names = [*(LETTERS if root else ()), "unreachable-150", "unreachable-400", *GRAPHS,
                  *(f"synthetic-{n}" for n in SYNTHETIC)]  # fmt: skip
    cost_rows: list[list[object]] = []
    if "cost" in sections:
        with native.limited_threads(1):  # as the GA beside the probes runs
            for name in cost_names:
                if (problem := _problem(name, root)) is not None:
                    cost_rows.append(_cost_row(name, problem, args.cost_seconds))
                    print(*cost_rows[-1], sep=" | ", flush=True)
    threads_rows = _threads_rows(list(THREADS), root, args.seconds) if "threads" in sections else []
    quality_rows, means = [], {"before": float("nan"), "after": float("nan")}
    if "quality" in sections and root is not None:
        quality_rows, means = _quality(root, args.quality_seconds, seeds)
    settings = GASettings()
    notes = NOTES.format(
        islands=settings.islands, scored=most_scored_per_generation(settings), seconds=args.seconds,
        lead=QUANTUM_GENERATIONS,
        cost_seconds=args.cost_seconds, cost=markdown_table(COST_HEADER, cost_rows),
        quality_seconds=args.quality_seconds, seeds=args.seeds, before=means["before"], after=means["after"],
        quality=markdown_table(QUALITY_HEADER, quality_rows),
    )  # fmt: skip
    command = "python -m experiments.bench_side_by_side " + " ".join(sys.argv[1:] if argv is None else argv)
    path = write_results(
        "side_by_side", "The GA and the exact probes side by side: each thread's work per trade",
        THREADS_HEADER, threads_rows, command.strip(), notes,
    )  # fmt: skip
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
