"""Does it fit? A plan within a capacity, or the answer that none was found, with a proof when there is one.

For one arena of ``capacity`` bytes (``gaplanner plan INPUT --capacity BYTES``,
or a document whose one memory has a ``capacity``): when the lower bound
already exceeds the capacity no plan fits, and the bound is the proof;
otherwise the search runs until a plan fits (it stops there) or its limits are
reached. For a document with several memories, all with capacities, the
answer is whether the search across memories placed every block.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gaplanner.errors import DoesNotFit, InputError
from gaplanner.plans.plan import Plan
from gaplanner.problem.problem import Problem
from gaplanner.search.ga import GASettings, GenerationRecord, ProgressCallback, StopCheck


@dataclass(frozen=True)
class FitAnswer:
    """Whether the problem fits its capacity; the plan when it does, the best peak found when not."""

    fits: bool
    capacity: int | None
    best_peak: int | None
    lower_bound: int
    proof: str | None
    elapsed: float
    plan: Plan | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = {"fits": self.fits, "capacity": self.capacity}
        if self.fits and self.plan is not None:
            return {**head, **self.plan.to_dict()}
        return {
            **head,
            "best_peak": self.best_peak,
            "lower_bound": self.lower_bound,
            "proof": self.proof,
            "reason": self.reason,
            "elapsed_seconds": round(self.elapsed, 6),
        }


def fits_question(problem: Problem, capacity: int | None) -> tuple[Problem, int | None]:
    """The one-arena problem and capacity asked about, or ``(problem, None)`` for no question.

    ``capacity`` comes from ``--capacity``; a document with one memory asks
    with that memory's capacity (its alignment applies to every block).
    """
    system = problem.memories
    if system is None:
        return problem, capacity
    if len(system.memories) > 1:
        if capacity is not None:
            raise InputError(
                "asks about one arena; this input lists several memories, give their capacities there",
                "--capacity",
            )
        return problem, None
    own = system.memories[0].capacity
    if capacity is not None and own is not None and capacity != own:
        raise InputError(f"{capacity} disagrees with the memory's capacity {own}", "--capacity")
    one_arena = replace(problem, alignments=system.alignment_table(problem.alignments)[:, 0], memories=None)
    return one_arena, capacity if capacity is not None else own


def decide_fit(
    problem: Problem,
    capacity: int,
    solve_one: Any,
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
) -> FitAnswer:
    """Whether ``problem`` fits in ``capacity`` bytes.

    ``solve_one(problem, settings, on_progress=..., should_stop=...)`` runs
    the search (:func:`gaplanner.solve.solve` with the algorithm chosen); it
    is stopped as soon as a plan fits. A GA with a time limit searches until
    then: a stall does not end a search for a plan that fits.
    """
    if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer) or capacity < 1:
        raise InputError(f"must be a positive integer, got {capacity!r}", "capacity")
    started = time.perf_counter()
    if problem.lower_bound > capacity:
        proof = (
            f"the lower bound is {problem.lower_bound} bytes (blocks that must be live at once, each "
            f"in its own bytes), above the capacity of {capacity}"
        )
        return FitAnswer(False, capacity, None, problem.lower_bound, proof, time.perf_counter() - started)
    best = [np.iinfo(np.int64).max]

    def progress(record: GenerationRecord) -> None:
        best[0] = min(best[0], record.best_peak)
        if on_progress is not None:
            on_progress(record)

    def stop() -> bool:
        return best[0] <= capacity or (should_stop is not None and should_stop())

    if isinstance(settings, GASettings) and settings.time_limit is not None:
        settings = replace(settings, stall_generations=None)
    plan = solve_one(problem, settings, on_progress=progress, should_stop=stop)
    elapsed = time.perf_counter() - started
    if plan.peak <= capacity:
        return FitAnswer(True, capacity, plan.peak, problem.lower_bound, None, elapsed, plan)
    reason = "no plan within the capacity found before the search stopped; a longer search may find one"
    return FitAnswer(False, capacity, plan.peak, problem.lower_bound, None, elapsed, plan, reason)


def memories_fit(solve_memories: Any, problem: Problem) -> FitAnswer:
    """Whether a search across memories (all with capacities) places every block."""
    started = time.perf_counter()
    total = int(problem.memories.capacities.sum())  # type: ignore[union-attr]
    if problem.lower_bound > total:
        proof = (
            f"the lower bound is {problem.lower_bound} bytes live at once, above the {total} bytes of all "
            "memories together"
        )
        return FitAnswer(False, None, None, problem.lower_bound, proof, time.perf_counter() - started)
    try:
        plan = solve_memories(problem)
    except DoesNotFit as exc:
        return FitAnswer(
            False, None, None, problem.lower_bound, None, time.perf_counter() - started, None, str(exc)
        )
    return FitAnswer(True, None, plan.peak, problem.lower_bound, None, time.perf_counter() - started, plan)


def asks_fit(problem: Problem, capacity: int | None) -> bool:
    """Whether planning ``problem`` (from :func:`fits_question`) is a does-it-fit question.

    It is with a capacity, and for memories that all have one (nothing can spill
    to an unbounded memory).
    """
    bounded = problem.memories is not None and bool((problem.memories.capacities >= 0).all())
    return capacity is not None or bounded


def answer_fit(
    problem: Problem,
    capacity: int | None,
    solve_one: Any,
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
) -> FitAnswer:
    """The answer to the question :func:`asks_fit` found, for one arena or for memories.

    ``solve_one(problem, settings, on_progress=..., should_stop=...)`` runs the
    chosen search, as for :func:`decide_fit`.
    """
    if capacity is not None:
        return decide_fit(
            problem, capacity, solve_one, settings, on_progress=on_progress, should_stop=should_stop
        )
    return memories_fit(
        lambda p: solve_one(p, settings, on_progress=on_progress, should_stop=should_stop), problem
    )
