"""The island search on Ray: phases of generations up to each migration, one merged trace, one plan."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from gaplanner.deadline import Deadline
from gaplanner.plans.plan import GenerationRecord, Plan, RayStats, SearchStats, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.distributed.cost import ray_pays_off
from gaplanner.search.distributed.driver import Driver
from gaplanner.search.distributed.session import ray_session
from gaplanner.search.distributed.worker import IslandRecord
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
from gaplanner.search.warm import warm_up


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


def merge_records(
    reports: dict[int, list[IslandRecord]], phase_started: float, started: float
) -> list[GenerationRecord]:
    """One record per generation from the islands' records (an island that stopped early counts as is)."""
    by_generation: dict[int, dict[int, IslandRecord]] = {}
    for k, records in reports.items():
        for record in records:
            by_generation.setdefault(record[0], {})[k] = record
    merged = []
    latest: dict[int, IslandRecord] = {}
    for generation in sorted(by_generation):
        latest.update(by_generation[generation])
        current = by_generation[generation].values()
        merged.append(
            GenerationRecord(
                generation=generation,
                best_peak=min(r[1] for r in current),
                mean_peak=float(np.mean([r[2] for r in current])),
                evaluations=sum(r[3] for r in latest.values()),
                elapsed=phase_started - started + max(r[4] for r in current),
            )
        )
    return merged


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

    ``settings.islands`` islands are dealt round-robin to ``min(workers, islands)``
    workers. ``on_start(driver)`` is called once the workers are up (tests
    use it to find the worker processes). As with :func:`~gaplanner.search.ga.run_ga`,
    the clock starts after the kernels are compiled here, so that workers on
    this machine load them from numba's cache. ``deadline``: the run's (by default the settings' time
    limit from then): the starting plans, Ray's start-up and the phases come out of it, the plan's
    verification is kept back.
    """
    warm_up()
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
        driver = Driver(ray, problem, settings, workers, should_stop, seeds)
        try:
            return _search(driver, problem, settings, (started, deadline), on_progress, on_start)
        finally:
            driver.close()


def _phase_length(settings: GASettings, generation: int, termination: Termination, evaluations: int) -> int:
    """Generations up to the next migration, or fewer where a generation, stall or evaluation limit falls."""
    s = settings
    steps = s.migration_interval - generation % s.migration_interval
    if s.generations is not None:
        steps = min(steps, s.generations - generation)
    if s.stall_generations is not None:
        steps = min(steps, s.stall_generations - (generation - termination.last_improvement))
    if s.max_evaluations is not None:
        # Never past the generation where the limit falls: a generation scores at most every
        # child twice (repeats are mutated and scored again) plus the local search's neighbours.
        per_generation = s.islands * (2 * s.population + s.local_search)
        steps = max(1, min(steps, -(-(s.max_evaluations - evaluations) // per_generation)))
    return steps


def _search(
    driver: Driver,
    problem: Problem,
    settings: GASettings,
    clock: tuple[float, Deadline],
    on_progress: ProgressCallback | None,
    on_start: Callable[[Driver], None] | None,
) -> Plan:
    s = settings
    started, deadline = clock
    # Generations, stall and the lower bound are replayed per generation of the merged records;
    # the clock and stop requests are checked once per phase (started=inf keeps Termination's clock out).
    termination = Termination(s, problem.lower_bound, started=math.inf)
    trace: list[GenerationRecord] = []

    def seconds_left() -> float | None:
        return None if deadline.limit is None else deadline.left()

    def absorb(records: list[GenerationRecord]) -> str | None:
        reason = None
        for record in records:
            trace.append(record)
            if on_progress is not None:
                on_progress(record)
            reason = termination.reason(record.generation, record.best_peak, record.evaluations)
            if reason is not None:
                break
        if reason is None and deadline.passed():
            reason = "time limit"
        if reason is None and driver.stop_requested:
            reason = "stopped by request"
        return reason

    phase_started = time.perf_counter()
    reports = driver.evolve(0, seconds_left, 0)
    startup = time.perf_counter() - started
    if on_start is not None:
        on_start(driver)
    reason = absorb(merge_records({k: r.records for k, r in reports.items()}, phase_started, started))
    generation = 0
    while reason is None:
        steps = _phase_length(s, generation, termination, trace[-1].evaluations)
        boundary = (generation + steps) % s.migration_interval == 0
        migrating = boundary and s.islands > 1 and s.migrants > 0
        phase_started = time.perf_counter()
        reports = driver.evolve(steps, seconds_left, s.migrants if migrating else 0)
        records = {k: r.records for k, r in reports.items()}
        reached = {r.state.generation for r in reports.values()}
        if migrating and reached == {generation + steps}:
            # Ring migration as gaplanner.search.ga.migrate: island k takes island k-1's best.
            arrivals = {k: reports[(k - 1) % s.islands].emigrants for k in range(s.islands)}
            arrived = time.perf_counter() - phase_started
            for k, report in driver.immigrate(arrivals).items():
                # The generation's record after migration, timed on the driver's clock.
                records[k] = [*records[k][:-1], (*report.records[0][:4], arrived)]
        generation = max(reached)
        reason = absorb(merge_records(records, phase_started, started))
    states = [driver.states[k] for k in range(s.islands)]
    best = min(states, key=lambda state: state.best_peak)
    return make_plan(
        problem,
        best.best_offsets,
        "ga",
        started,
        stop_reason=reason,
        trace=trace,
        search=SearchStats(trace[-1].generation, trace[-1].evaluations, s.seed, s.population),
        ray=RayStats(s.islands, len(driver.actors), round(startup, 3), driver.restarts),
    )
