"""Solvers run side by side on one problem: ours through ``gaplanner.solve``, other libraries' allocators.

Every plan goes through the verifier; a broken one stops the benchmark with
the solver's name. The benchmark scripts that compare searches (the exact
search, the GA, omnimalloc's branch and bound) build their tables from the
:class:`SolverRun` these return.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gaplanner import Problem, find_violation, solve


@dataclass(frozen=True)
class SolverRun:
    """What one solver did on one problem.

    ``optimal``: the peak meets a bound proved for every plan (ours: the
    plan's own bound, which the exact search may have raised; another
    library's: the problem's bound). ``found``: seconds until the final plan
    was found (ours: from the search's trace; another library's: the whole
    call). ``bound``, ``bound_origin``: the best lower bound known at the end
    and where it comes from.
    """

    peak: int
    optimal: bool
    seconds: float
    found: float
    bound: int
    bound_origin: str


def run_solver(problem: Problem, algorithm: str, settings: Any) -> SolverRun:
    """``gaplanner.solve(problem, algorithm, settings)``, its plan checked by the verifier."""
    plan = solve(problem, algorithm, settings)
    check_plan(problem, plan.offsets, f"gaplanner {algorithm}")
    found = next((r.elapsed for r in plan.trace if r.best_peak == plan.peak), plan.elapsed)
    return SolverRun(plan.peak, plan.optimal, plan.elapsed, found, plan.lower_bound, plan.bound_origin)


def run_placer(place: Callable[[Problem], np.ndarray], problem: Problem, label: str) -> SolverRun:
    """Offsets from another library's allocator (``place``), timed as a whole and checked by the verifier."""
    started = time.perf_counter()
    offsets = np.asarray(place(problem), np.int64)
    seconds = time.perf_counter() - started
    peak = check_plan(problem, offsets, label)
    origin = "max load" if problem.interval_conflicts else "clique"
    return SolverRun(peak, peak <= problem.lower_bound, seconds, seconds, problem.lower_bound, origin)


def check_plan(problem: Problem, offsets: np.ndarray, label: str) -> int:
    """The plan's peak; stops the benchmark, naming the solver, when the verifier finds a broken rule."""
    peak = int((offsets + problem.sizes).max())
    if (violation := find_violation(problem, offsets, peak)) is not None:
        raise SystemExit(f"{label} returned an invalid plan for {problem.name}: {violation}")
    return peak


def geometric_mean(values: Iterable[float]) -> float:
    """The geometric mean, or NaN for no values."""
    values = list(values)
    return statistics.geometric_mean(values) if values else float("nan")
