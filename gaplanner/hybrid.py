"""The GA and the exact search sharing one time limit, each starting from the other's best plan.

Where the exact search can take the whole problem (``GASettings.exact_share``
None, the default, or a share given), the time limit is spent in three turns:

1. exact probes for half the exact share: on many instances they reach the
   lower bound at once and prove it, and the search stops there;
2. the GA for the rest of the time but the exact share, its population
   seeded with the exact search's best plan (as an order by address, which
   first-fit decodes no higher);
3. exact probes for what is left, from the better of the two plans, with the
   bound the first turn proved.

The plan's trace is the three turns' records in turn (the exact search's
``evaluations``: placements tried), and its bound is the one the exact search
proved. With ``exact_share`` 0 the GA runs alone, as the patent describes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from gaplanner.exact import ExactSettings, exact_search, searchable
from gaplanner.exact import warm_up as warm_up_exact
from gaplanner.ga import GASettings
from gaplanner.kernels import warm_up as warm_up_kernels
from gaplanner.plan import GenerationRecord, Plan, make_plan
from gaplanner.problem import Problem

#: The share of the time limit the exact probes get when the settings leave it open.
AUTO_EXACT_SHARE = 0.5

#: The shortest exact turn worth starting, in seconds.
LEAST_EXACT_SECONDS = 0.05

#: Runs the GA with these settings, its population seeded with these plans' offsets.
GARunner = Callable[[GASettings | None, Sequence[np.ndarray]], Plan]


def exact_share(problem: Problem, settings: GASettings | None) -> float:
    """The share of the time limit for exact probes: 0 without a time limit or where they cannot help."""
    if settings is None or settings.time_limit is None or settings.exact_share == 0:
        return 0.0
    if settings.exact_share is not None:
        return settings.exact_share
    return AUTO_EXACT_SHARE if searchable(problem) else 0.0


def _shifted(records: Sequence[GenerationRecord], after: Sequence[GenerationRecord], seconds: float):
    """``records`` numbered on from ``after``, their times counted from ``seconds`` earlier."""
    first = after[-1].generation + 1 if after else 0
    return [replace(r, generation=r.generation + first, elapsed=r.elapsed + seconds) for r in records]


def ga_then_exact(problem: Problem, settings: GASettings | None, run_ga: GARunner) -> Plan:
    """``run_ga`` (the GA, in-process or on islands) between two turns of exact probes."""
    share = exact_share(problem, settings)
    if settings is None or share == 0:
        return run_ga(settings, ())
    warm_up_kernels()
    warm_up_exact()
    started = time.perf_counter()  # like each search's own, the time limit counts from after loading
    limit = settings.time_limit or 0.0
    first = exact_search(problem, ExactSettings(time_limit=limit * share / 2))
    if first.optimal:
        return replace(first, algorithm="ga")
    ga_start = time.perf_counter() - started
    ga_plan = run_ga(replace(settings, time_limit=limit * (1 - share)), (first.offsets,))
    trace = [*first.trace, *_shifted(ga_plan.trace, first.trace, ga_start)]
    best = min((first, ga_plan), key=lambda plan: plan.peak)
    left = limit - (time.perf_counter() - started)
    if ga_plan.optimal or left < LEAST_EXACT_SECONDS:
        last = best
    else:
        last_start = time.perf_counter() - started
        last = exact_search(problem, ExactSettings(time_limit=left), best.offsets, first.lower_bound)
        trace += _shifted(last.trace, trace, last_start)
    return make_plan(
        problem, last.offsets, "ga", started, stop_reason=last.stop_reason, trace=trace,
        search=ga_plan.search, ray=ga_plan.ray, proved_bound=max(first.lower_bound, last.lower_bound),
        bound_origin="exact search",
    )  # fmt: skip
