"""The island search on Ray: phases of generations up to each migration, one merged trace, one plan."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import replace

from gaplanner.deadline import Deadline
from gaplanner.plans.plan import GenerationRecord, Plan, RayStats, SearchStats, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.distributed.cost import ray_pays_off
from gaplanner.search.distributed.driver import UNITS_IN_FLIGHT, Driver
from gaplanner.search.distributed.schedule import Flow
from gaplanner.search.distributed.session import ray_session
from gaplanner.search.ga import (
    GASettings,
    ProgressCallback,
    StopCheck,
    Termination,
    fit_population_to_budget,
    heuristic_orders,
    plan_at_bound,
    run_ga,
)
from gaplanner.search.ga.budget import nominal_seconds
from gaplanner.search.starting_plans import starting_plans


def solve_islands(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """The GA with ``max(settings.islands, workers)`` islands, on Ray when it pays off, else in-process.

    ``workers``: how many run at once (default: this machine's cores). The
    result depends on the seed and the island count, not on where they run.
    ``deadline``: the run's (:mod:`gaplanner.deadline`), as for :func:`~gaplanner.search.ga.run_ga`.
    """
    settings = settings or GASettings()
    workers = workers or os.cpu_count() or 1
    settings = replace(settings, islands=max(settings.islands, workers))
    if ray_pays_off(problem, settings, workers, ray_address):
        return run_islands(
            problem,
            settings,
            workers=workers,
            ray_address=ray_address,
            on_progress=on_progress,
            should_stop=should_stop,
            deadline=deadline,
        )
    return run_ga(problem, settings, on_progress=on_progress, should_stop=should_stop, deadline=deadline)


def run_islands(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    workers: int = 2,
    ray_address: str | None = None,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    on_start: Callable[[Driver], None] | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """The island GA on Ray workers (a local Ray unless an address is given or Ray is running).

    ``settings.islands`` islands run on ``min(workers, islands)`` workers, each
    island's units on whichever worker is free (:mod:`~gaplanner.search.distributed.schedule`).
    ``on_start(driver)`` is called once the workers are up (tests use it to find
    the worker processes). ``deadline``: the run's (by default the
    settings' time limit from the call): the starting plans, Ray's start-up and the
    units come out of it, the plan's verification is kept back.
    """
    settings = settings or GASettings()
    deadline = (deadline or Deadline(settings.time_limit)).keeping(verify_seconds(problem))
    started = time.perf_counter()
    # As run_ga does: from the nominal budget, not the time left.
    settings = fit_population_to_budget(problem, settings, nominal_seconds(settings, deadline))
    plans = starting_plans(problem, deadline)
    at_bound = plan_at_bound(problem, plans, settings, started)
    if at_bound is not None:  # nothing for the islands to do: no Ray started
        return at_bound
    seeds = heuristic_orders(problem, list(plans.values()))
    with ray_session(ray_address, num_cpus=max(workers, os.cpu_count() or 1)) as ray:
        driver = Driver(ray, problem, settings, workers, seeds)
        try:
            driver.ready()
            startup = time.perf_counter() - started
            if on_start is not None:
                on_start(driver)
            hooks = (on_progress, should_stop)
            return _search(driver, problem, settings, (started, deadline, startup), hooks)
        finally:
            driver.close()


#: Seconds the driver waits for a unit before it looks at the clock and stop requests again.
POLL_SECONDS = 0.2


def _search(
    driver: Driver,
    problem: Problem,
    settings: GASettings,
    clock: tuple[float, Deadline, float],
    hooks: tuple[ProgressCallback | None, StopCheck | None],
) -> Plan:
    """Hand out units until a limit, the lower bound, the clock or a stop request ends the search.

    Generations, stall, evaluations and the lower bound are replayed per generation of the merged
    records; the clock and stop requests are checked whenever a unit comes back, and by the workers
    after each generation.
    """
    s, (started, deadline, startup), (on_progress, should_stop) = settings, clock, hooks
    termination = Termination(s, problem.lower_bound, started=math.inf)  # started=inf: no clock of its own
    flow, trace = Flow(s, driver.count), []

    def seconds_left() -> float | None:
        return None if deadline.limit is None else deadline.left()

    def absorb(records: list[GenerationRecord]) -> str | None:
        for record in records:
            trace.append(record)
            if on_progress is not None:
                on_progress(record)
            reason = termination.reason(record.generation, record.best_peak, record.evaluations)
            if reason is not None:
                return reason
        return None

    reason, ending = None, None
    while reason is None and ending is None:
        flow.advance(termination, trace)
        free = [UNITS_IN_FLIGHT - driver.in_flight(w) for w in range(driver.count)]
        for w, unit in flow.assign(free, time.perf_counter()):
            driver.submit(w, unit, seconds_left())
        if not driver.pending:
            raise RuntimeError("island search: no unit running and none ready")  # never expected
        for done in driver.wait(POLL_SECONDS):
            flow.done(done.worker, done.unit, done.report, done.arrived)
            if done.report is not None and done.report.state.best_peak <= problem.lower_bound:
                ending = "lower bound reached"
        reason = absorb(flow.records(started))
        if deadline.passed():
            ending = ending or "time limit"
        if should_stop is not None and should_stop():
            ending = ending or "stopped by request"
    driver.stop_all()
    while driver.pending:  # the running units return after their current generation
        for done in driver.wait(POLL_SECONDS):
            flow.done(done.worker, done.unit, done.report, done.arrived)
    if reason is None:
        reason = absorb(flow.records(started, everything=True)) or ending
    states = [track.state for track in flow.tracks if track.state is not None]
    best = min(states, key=lambda state: state.best_peak)
    return make_plan(
        problem,
        best.best_offsets,
        "ga",
        started,
        stop_reason=reason,
        trace=trace,
        search=SearchStats(trace[-1].generation, trace[-1].evaluations, s.seed, s.population),
        ray=RayStats(s.islands, driver.count, round(startup, 3), driver.restarts),
    )
