"""The GA and the exact search sharing one time limit, each starting from the other's best plan.

Where the exact search can take the whole problem (``GASettings.exact_share``
None, the default, or a share given), the time limit is spent in three turns:

1. exact probes for half the exact share: on many instances they reach the
   lower bound at once and prove it, and the search stops there;
2. the GA for the rest of the time but the exact share, its population
   seeded with the exact search's best plan (as an order by address, which
   first-fit decodes no higher);
3. exact probes for what is left, going on where the first turn stopped
   (its probes keep their work), with the GA's plan where it is better.

The plan's trace is the three turns' records in turn (the exact search's
``evaluations``: placements tried), and its bound is the one the exact search
proved. With ``exact_share`` 0 the GA runs alone, as the patent describes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from gaplanner.exact import ExactSettings, PartsSearch, exact_search, incumbent_plan, searchable
from gaplanner.exact import warm_up as warm_up_exact
from gaplanner.ga import GASettings, ProgressCallback, StopCheck
from gaplanner.kernels import warm_up as warm_up_kernels
from gaplanner.plan import GenerationRecord, Plan, make_plan
from gaplanner.problem import Problem

#: The share of the time limit the exact probes get when the settings leave it open.
AUTO_EXACT_SHARE = 0.5

#: Beyond this many conflicting pairs the default leaves the exact probes out: each placement then
#: updates so many neighbours that a probe cannot place every block even once within a turn.
AUTO_MAX_CONFLICT_PAIRS = 250_000

#: The shortest exact turn worth starting, in seconds.
LEAST_EXACT_SECONDS = 0.05

#: Runs the GA with these settings, its population seeded with these plans' offsets, reporting progress.
GARunner = Callable[[GASettings | None, Sequence[np.ndarray], ProgressCallback | None], Plan]


def exact_share(problem: Problem, settings: GASettings | None) -> float:
    """The share of the time limit for exact probes: 0 without a time limit or where they cannot help."""
    if settings is None or settings.time_limit is None or settings.exact_share == 0:
        return 0.0
    if settings.exact_share is not None:
        return settings.exact_share
    small = searchable(problem) and len(problem.conflicts.indices) // 2 <= AUTO_MAX_CONFLICT_PAIRS
    return AUTO_EXACT_SHARE if small else 0.0


def _shifted(record: GenerationRecord, first: int, seconds: float) -> GenerationRecord:
    """``record`` numbered on from ``first``, its time counted from ``seconds`` earlier."""
    return replace(record, generation=record.generation + first, elapsed=record.elapsed + seconds)


@dataclass
class _Turns:
    """The records of the turns so far, numbered and timed as one search, passed on as they come."""

    started: float
    on_progress: ProgressCallback | None
    trace: list[GenerationRecord] = field(default_factory=list)

    def next_turn(self, timed_from_start: bool = False) -> ProgressCallback:
        """A turn's progress callback; ``timed_from_start``: its records' times count from the start."""
        first = len(self.trace)
        seconds = 0.0 if timed_from_start else time.perf_counter() - self.started

        def report(record: GenerationRecord) -> None:
            self.trace.append(_shifted(record, first, seconds))
            if self.on_progress is not None:
                self.on_progress(self.trace[-1])

        return report


def _finished(plan: Plan) -> bool:
    """Nothing is left to search for: the plan is proved optimal, or the caller asked to stop."""
    return plan.optimal or plan.stop_reason == "stopped by request"


def ga_then_exact(
    problem: Problem,
    settings: GASettings | None,
    run_ga: GARunner,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
) -> Plan:
    """``run_ga`` (the GA, in-process or on islands) between two turns of exact probes."""
    share = exact_share(problem, settings)
    if settings is None or share == 0:
        return run_ga(settings, (), on_progress)
    warm_up_kernels()
    warm_up_exact()
    started = time.perf_counter()  # like each search's own, the time limit counts from after loading
    limit = settings.time_limit or 0.0
    turns = _Turns(started, on_progress)

    search = PartsSearch(problem, incumbent_plan(problem), started)  # its probes go on in the last turn

    def exact(seconds: float, incumbent: np.ndarray | None = None) -> Plan:
        return exact_search(
            problem, ExactSettings(time_limit=seconds), incumbent, search=search, seed=settings.seed,
            on_progress=turns.next_turn(timed_from_start=True), should_stop=should_stop,
        )  # fmt: skip

    first = exact(limit * share / 2)
    plans = [first]
    if not _finished(first):
        ga_settings = replace(settings, time_limit=limit * (1 - share))
        plans.append(run_ga(ga_settings, (first.offsets,), turns.next_turn()))
        left = limit - (time.perf_counter() - started)
        if not _finished(plans[-1]) and left >= LEAST_EXACT_SECONDS:
            plans.append(exact(left, plans[-1].offsets))
    last = min(reversed(plans), key=lambda plan: plan.peak)
    ga_plan = plans[1] if len(plans) > 1 else None
    return make_plan(
        problem, last.offsets, "ga", started, stop_reason=plans[-1].stop_reason, trace=turns.trace,
        search=ga_plan.search if ga_plan else first.search, ray=ga_plan.ray if ga_plan else None,
        proved_bound=max(plan.lower_bound for plan in plans), bound_origin="exact search",
    )  # fmt: skip
