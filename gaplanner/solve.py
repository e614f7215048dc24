"""One entry point for every planner: ``solve(problem, algorithm, settings)``.

The CLI, the REST service and the experiment runner call this and nothing
below it, in the spirit of pymoo's ``minimize(problem, algorithm, termination)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gaplanner.baselines import BASELINES
from gaplanner.ga import GASettings, ProgressCallback, StopCheck, run_ga
from gaplanner.plan import Plan
from gaplanner.problem import Problem

#: Every algorithm name ``solve`` accepts; ``ga`` is the default.
ALGORITHMS: tuple[str, ...] = ("ga", *BASELINES)


def solve(
    problem: Problem,
    algorithm: str = "ga",
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    workers: int | None = 1,
    ray_address: str | None = None,
) -> Plan:
    """A verified plan for ``problem`` from the named algorithm.

    ``workers`` > 1 (``None``: this machine's cores) runs the GA as at least that
    many islands, on Ray workers when that pays off (``ray_address`` or
    ``RAY_ADDRESS`` names a cluster), see :mod:`gaplanner.distributed`.
    """
    if algorithm == "ga":
        if workers != 1:
            from gaplanner.distributed import solve_islands  # Ray stays optional

            return solve_islands(
                problem,
                settings,
                workers=workers,
                ray_address=ray_address,
                on_progress=on_progress,
                should_stop=should_stop,
            )
        return run_ga(problem, settings, on_progress=on_progress, should_stop=should_stop)
    if algorithm not in BASELINES:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
    return BASELINES[algorithm](problem)


@dataclass(frozen=True)
class ComparisonRow:
    algorithm: str
    peak: int
    ratio: float
    seconds: float
    optimal: bool


def compare(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
) -> list[ComparisonRow]:
    """Every baseline and the GA on one problem, in the order of :data:`ALGORITHMS` (GA last)."""
    rows = []
    usable = [name for name in BASELINES if not (problem.has_pinned and name == "best-fit-coalescing")]
    for algorithm in (*usable, "ga"):
        started = time.perf_counter()
        plan = solve(problem, algorithm, settings, on_progress=on_progress, should_stop=should_stop)
        rows.append(
            ComparisonRow(algorithm, plan.peak, plan.ratio, time.perf_counter() - started, plan.optimal)
        )
    return rows
