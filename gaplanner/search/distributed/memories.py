"""The search across memories on Ray: one search per worker, each with its own seed, the best plan kept.

The GA across memories (:func:`gaplanner.search.memories.ga.memory_ga`) runs its
islands in one process; its distributed form is the simplest one: ``workers``
independent searches, seeds ``seed``, ``seed + 1``, ..., on Ray workers when
that pays off (:func:`~gaplanner.search.distributed.cost.ray_pays_off`, as for the
islands), and the plan with the least access cost, then the smallest peaks,
verified again here: searches ended by a generation limit give the best of
the same seeds run one after another in this process. Where Ray does not pay
off, the first seed's search runs alone in this process (as with one worker):
several searches there would share one time limit for no gain.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

from gaplanner.deadline import Deadline
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.distributed.cost import ray_pays_off
from gaplanner.search.distributed.session import ray_session
from gaplanner.search.ga import GASettings, ProgressCallback, StopCheck

#: How often the driver asks whether to stop while the searches run, in seconds.
POLL_SECONDS = 0.1


def _search(problem: Problem, settings: GASettings, ends: float | None = None) -> Plan:
    """One search in a worker process; ``ends``: when it must end, in seconds since the epoch (a clock
    every process reads alike), its loading of compiled code included."""
    from gaplanner.search.memories.ga import memory_ga  # in the worker process

    deadline = None if ends is None else Deadline(max(ends - time.time(), 0.0))
    return memory_ga(problem, settings, deadline=deadline)


def best_memory_plan(plans: list[Plan]) -> Plan:
    """Least access cost, then the smallest sum of peaks, then the first seed (as the GA ranks plans)."""
    return min(plans, key=lambda plan: (plan.cost, plan.peak))


def solve_memories_on_workers(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """The best of ``workers`` memory searches (seeds from ``settings.seed`` up), on Ray when it pays off.

    ``should_stop``: asked while the searches run; True keeps the plans that
    have come back (or, if none has, waits for the first). ``on_progress``: the
    search in this process reports each generation (the workers' do not).
    ``deadline``: the run's (:mod:`gaplanner.deadline`); on Ray each search ends by it (as a time of
    day: the workers' start-up included), less this process's verification of the best plan.
    """
    from gaplanner.search.memories.ga import memory_ga

    settings = settings or GASettings()
    workers = workers or os.cpu_count() or 1
    if not ray_pays_off(problem, settings, workers, ray_address):
        stops = {"on_progress": on_progress, "should_stop": should_stop}
        return memory_ga(problem, settings, **stops, deadline=deadline)
    ends = None
    if deadline is not None and deadline.limit is not None:
        ends = time.time() + max(deadline.left() - verify_seconds(problem), 0.0)
    seeds = [replace(settings, seed=settings.seed + k) for k in range(workers)]
    started = time.perf_counter()
    with ray_session(ray_address) as ray:
        search = ray.remote(num_cpus=1)(_search)
        plans = _gather(ray, [search.remote(problem, s, ends) for s in seeds], should_stop)
    best = best_memory_plan(plans)
    assert best.search is not None
    evaluations = sum(plan.search.evaluations for plan in plans if plan.search is not None)
    return make_plan(  # verified again here, against this process's problem
        problem, best.offsets, best.algorithm, started, memory_of=best.memory_of,
        stop_reason=best.stop_reason, trace=best.trace, search=replace(best.search, evaluations=evaluations),
    )  # fmt: skip


def _gather(ray: Any, pending: list[Any], should_stop: StopCheck | None) -> list[Plan]:
    """Every search's plan, in seed order; on a stop request, those finished (at least one)."""
    order = {ref: k for k, ref in enumerate(pending)}
    done: dict[int, Plan] = {}
    while pending:
        ready, pending = ray.wait(pending, num_returns=1, timeout=POLL_SECONDS)
        for ref in ready:
            done[order[ref]] = ray.get(ref)
        if done and pending and should_stop is not None and should_stop():
            for ref in pending:
                ray.cancel(ref, force=True)
            break
    return [done[k] for k in sorted(done)]
