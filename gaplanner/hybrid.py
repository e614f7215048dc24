"""The GA followed by exact probes: the GA's best plan becomes the exact search's incumbent.

With ``GASettings.exact_share`` > 0 the GA runs for the rest of the time
limit, and when its plan is not proved optimal the exact search spends what
is left probing from the lower bound upwards, starting from the GA's plan (so
the result is never worse than the GA's). The plan's trace is the GA's
followed by the exact search's (its ``evaluations``: placements tried), and
its bound is the one the exact search proved. With ``exact_share`` 0 (the default)
the GA runs alone, as the patent describes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from gaplanner.exact import ExactSettings, exact_search
from gaplanner.exact import warm_up as warm_up_exact
from gaplanner.ga import GASettings
from gaplanner.kernels import warm_up as warm_up_kernels
from gaplanner.plan import Plan, make_plan
from gaplanner.problem import Problem

#: The shortest exact phase worth starting, in seconds.
LEAST_EXACT_SECONDS = 0.05


def ga_then_exact(
    problem: Problem, settings: GASettings | None, run_ga: Callable[[GASettings | None], Plan]
) -> Plan:
    """``run_ga`` (the GA, in-process or on islands) with its share of the time, then exact probes."""
    if settings is None or settings.exact_share == 0 or settings.time_limit is None:
        return run_ga(settings)
    warm_up_kernels()
    warm_up_exact()
    started = time.perf_counter()  # like each search's own, the time limit counts from after loading
    ga_plan = run_ga(replace(settings, time_limit=settings.time_limit * (1 - settings.exact_share)))
    left = settings.time_limit - (time.perf_counter() - started)
    if ga_plan.optimal or left < LEAST_EXACT_SECONDS:
        return ga_plan
    exact = exact_search(problem, ExactSettings(time_limit=left), incumbent=ga_plan.offsets)
    shift = ga_plan.trace[-1].generation + 1 if ga_plan.trace else 0
    after = [
        replace(r, generation=r.generation + shift, elapsed=r.elapsed + ga_plan.elapsed) for r in exact.trace
    ]
    return make_plan(
        problem, exact.offsets, "ga", started, stop_reason=exact.stop_reason, trace=[*ga_plan.trace, *after],
        search=ga_plan.search, ray=ga_plan.ray, proved_bound=exact.lower_bound,
        bound_origin=exact.bound_origin,
    )  # fmt: skip
