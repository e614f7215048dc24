"""Scaling of the island GA: evaluations per second and time to a target peak, 1 and 2 workers.

    python -m experiments.bench_scaling [--benchmarks PATH] [--budget-k 20] [--budget-pangu 90]

Four runs per input, each with the same seed and the same time budget:

- ``in-process, 1 island``: what ``gaplanner plan --workers 1`` does;
- ``in-process, 2 islands``: the two islands below, evolved one after the other in this
  process (the kernels' threads share each population's decode);
- ``Ray, 1 worker``: the two islands on one Ray worker (one CPU);
- ``Ray, 2 workers``: the two islands on two Ray workers, one CPU each
  (what ``gaplanner plan --workers 2`` does when the search is long enough).

Evaluations per second are counted from the end of the initial population to the
end of the search (start-up excluded). Wall time and time to the target include
everything, Ray's start-up and shutdown too. The target is the worst of the
runs' final peaks, so every run reaches it. The table is printed and written to
``docs/results/scaling.md``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path

from experiments.common import benchmarks_root, markdown_table, timed
from experiments.report import write_results
from gaplanner.plans.plan import GenerationRecord, Plan
from gaplanner.problem.loading import load_problem
from gaplanner.problem.problem import Problem
from gaplanner.search.distributed import run_islands
from gaplanner.search.ga import GASettings, run_ga

INPUTS = {"K": "minimalloc/K.1048576.csv", "pangu": "large/somas_tensors_pangu_2.6B.csv"}
#: label, Ray workers (0: in-process), islands
RUNS = [
    ("in-process, 1 island", 0, 1),
    ("in-process, 2 islands", 0, 2),
    ("Ray, 1 worker", 1, 2),
    ("Ray, 2 workers", 2, 2),
]


@dataclass(frozen=True)
class Run:
    label: str
    plan: Plan
    wall: float

    @property
    def trace(self) -> tuple[GenerationRecord, ...]:
        return self.plan.trace

    @property
    def evaluations_per_second(self) -> float:
        first, last = self.trace[0], self.trace[-1]
        seconds = last.elapsed - first.elapsed
        return (last.evaluations - first.evaluations) / seconds if seconds > 0 else float("nan")

    def time_to(self, target: int) -> float:
        return next(r.elapsed for r in self.trace if r.best_peak <= target)


def _one(problem: Problem, settings: GASettings, workers: int) -> Plan:
    if workers == 0:
        return run_ga(problem, settings)
    return run_islands(problem, settings, workers=workers)


def measure(path: Path, budget: float, seed: int) -> list[Run]:
    problem = load_problem(path)
    base = GASettings(time_limit=budget, generations=None, stall_generations=None, seed=seed)
    run_ga(problem, GASettings(population=4, generations=1, time_limit=None))  # compile outside the clocks
    runs = []
    for label, workers, islands in RUNS:
        settings = replace(base, islands=islands)
        plan, wall = timed(lambda s=settings, w=workers: _one(problem, s, w))
        runs.append(Run(label, plan, wall))
    return runs


def rows_for(name: str, runs: list[Run]) -> list[list[object]]:
    target = max(run.plan.peak for run in runs)
    reference = runs[0]
    rows = []
    for run in runs:
        search = run.plan.search
        rows.append(
            [
                name,
                run.label,
                search.population,
                f"{run.wall:.1f}",
                f"{run.plan.ray.startup_seconds if run.plan.ray else 0.0:.1f}",
                search.generations,
                f"{run.evaluations_per_second:.{0 if run.evaluations_per_second >= 100 else 2}f}",
                f"{run.evaluations_per_second / reference.evaluations_per_second:.2f}",
                f"{run.plan.ratio:.4f}",
                f"{target / run.plan.lower_bound:.4f}",
                f"{run.time_to(target):.1f}",
            ]
        )
    return rows


HEADER = [
    "input",
    "run",
    "population",
    "wall s",
    "Ray start-up s",
    "generations",
    "evaluations/s",
    "vs in-process 1 island",
    "final ratio",
    "target ratio",
    "time to target s",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--benchmarks", help="the shared benchmark folder (default $GAPLANNER_BENCHMARKS)")
    parser.add_argument("--budget-k", type=float, default=20.0, help="seconds per run on K")
    parser.add_argument("--budget-pangu", type=float, default=90.0, help="seconds per run on pangu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=sorted(INPUTS), help="one input only")
    parser.add_argument("--output", help="also write the Markdown table here")
    args = parser.parse_args(argv)
    root = benchmarks_root(args.benchmarks)
    if root is None:
        print("benchmarks not found (set --benchmarks or GAPLANNER_BENCHMARKS); nothing to do")
        return 0
    rows = []
    for name, relative in INPUTS.items():
        path = root / relative
        if args.only not in (None, name) or not path.is_file():
            continue
        budget = args.budget_k if name == "K" else args.budget_pangu
        runs = measure(path, budget, args.seed)
        rows += rows_for(name, runs)
        target = max(run.plan.peak for run in runs)
        ray_one, ray_two = runs[2], runs[3]
        print(
            f"{name}: Ray 2 workers / 1 worker: evaluations/s x"
            f"{ray_two.evaluations_per_second / ray_one.evaluations_per_second:.2f}, time to target x"
            f"{ray_one.time_to(target) / ray_two.time_to(target):.2f}; "
            f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
            flush=True,
        )
    table = markdown_table(HEADER, rows)
    print(table)
    if args.output:
        Path(args.output).write_text(table + "\n", encoding="utf-8")
    if rows:
        command = (
            f"python -m experiments.bench_scaling --budget-k {args.budget_k:g} "
            f"--budget-pangu {args.budget_pangu:g} --seed {args.seed}"
            + (f" --only {args.only}" if args.only else "")
        )
        notes = NOTES + f"\n\nLoad average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores."
        write_results("scaling", "The island GA on 1 and 2 workers", HEADER, rows, command, notes)
    return 0


NOTES = """\
Same seed and time budget in every run. Evaluations per second exclude
start-up; wall time and time to the target (the worst final peak of the four
runs) include it, Ray's start-up and shutdown too."""


if __name__ == "__main__":
    raise SystemExit(main())
