"""The island-model GA on Ray: one worker (actor) per group of islands, ring migration.

The islands are :class:`gaplanner.ga.Island` objects built by
:func:`gaplanner.ga.make_island`, so island ``k`` is the same population with
the same random stream wherever it lives. The driver asks every worker to
evolve its islands up to the next migration (or termination) point, then
moves each island's best orders to the next island of the ring
(:meth:`Island.emigrants` / :meth:`Island.immigrate`, as
:func:`gaplanner.ga.migrate` does in-process). It keeps the global best, merges
the per-island records into one convergence trace and verifies the final plan
with :func:`gaplanner.plan.make_plan`.

Consequences:

- A search ended by a generation, stall or evaluation limit (not the clock)
  gives the same plan as :func:`gaplanner.ga.run_ga` with the same settings and
  island count, on any number of workers, and whether or not a worker died on
  the way. (Ended by the lower bound, the peak is the same, but the offsets may
  come from another island: workers do not stop in the same generation.)
- Fault tolerance: after every phase each worker returns its islands' state
  (population, scores, random-generator state). When a worker process dies
  the driver starts a new worker, restores its islands from that state and
  repeats the phase.

Ray is imported lazily: the core library never needs it. :func:`solve_islands`
is what :func:`gaplanner.solve.solve` calls for ``workers > 1``; it decides
whether Ray can pay off (see :func:`ray_pays_off`) and otherwise runs the same
islands in-process.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from gaplanner.fitness import Scores
from gaplanner.ga import (
    GENERATION,
    GASettings,
    GenerationRecord,
    Island,
    Pacing,
    ProgressCallback,
    StopCheck,
    Termination,
    fit_population_to_budget,
    heuristic_orders,
    make_island,
    run_ga,
    warm_up,
)
from gaplanner.plan import Plan, make_plan
from gaplanner.problem import Problem

#: Set for a local Ray so that every listener stays on 127.0.0.1 (measured with Ray 2.60).
LOCAL_RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
}

#: Below this many seconds of expected search a fresh local Ray cannot pay off (see README).
MIN_RAY_SECONDS = 30.0
#: Cost of one evaluation (one thread, measured 2-18 ns per conflict-list entry): per entry, per individual.
SECONDS_PER_ENTRY = 1e-8
SECONDS_PER_INDIVIDUAL = 2e-5
#: A worker that dies more often than this in one phase fails the search.
MAX_RESTARTS_IN_A_ROW = 3


def ray_available() -> bool:
    """Whether Ray can be imported (the ``ray`` extra)."""
    return importlib.util.find_spec("ray") is not None


def cluster_address(address: str | None = None) -> str | None:
    """The cluster to connect to: ``address``, else ``RAY_ADDRESS``, else None (a local Ray)."""
    return address or os.environ.get("RAY_ADDRESS") or None


def ray_running() -> bool:
    """Whether this process is already connected to a Ray (never imports Ray itself)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


@contextmanager
def _loopback_environment() -> Iterator[None]:
    """:data:`LOCAL_RAY_ENV` (where unset) for the processes a local Ray starts, undone afterwards.

    Ray reads ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` when it is imported; if this
    process imported it before, its copy of the flag is set to match.
    """
    saved = {key: os.environ.get(key) for key in [*LOCAL_RAY_ENV, "RAY_ADDRESS"]}
    for key, value in LOCAL_RAY_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.pop("RAY_ADDRESS", None)  # a local Ray, not whatever RAY_ADDRESS names
    from ray._private import ray_constants

    cluster_flag = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] not in ("0", "false")
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster_flag
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def local_ray(num_cpus: int | None = None) -> Iterator[Any]:
    """A local Ray listening on loopback only (no dashboard, no usage stats); shut down on exit."""
    with _loopback_environment():
        import ray

        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
        try:
            yield ray
        finally:
            ray.shutdown()


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While a local Ray runs, SIGTERM raises SystemExit so that ``ray.shutdown`` still runs.

    Only in the main thread and only when nobody else handles SIGTERM already.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, ready to use; yields the ``ray`` module.

    Uses a Ray already initialised in this process as it is; otherwise connects
    to ``address`` / ``RAY_ADDRESS`` or starts a local Ray (``num_cpus``), and
    shuts down on exit what it started or connected here (never a cluster:
    ``ray.shutdown`` only disconnects from one).
    """
    if ray_running():
        yield sys.modules["ray"]
        return
    address = cluster_address(address)
    with _sigterm_unwinds():
        if not address:
            with local_ray(num_cpus) as ray:
                yield ray
            return
        import ray

        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        try:
            yield ray
        finally:
            ray.shutdown()


def expected_search_seconds(problem: Problem, settings: GASettings) -> float:
    """A rough in-process duration of the search, from its limits (inf when only stalling ends it).

    The time limit, or the evaluations that the generation or evaluation limit
    allows times a cost per evaluation (:data:`SECONDS_PER_ENTRY` per
    conflict-list entry plus :data:`SECONDS_PER_INDIVIDUAL`).
    """
    per_evaluation = SECONDS_PER_ENTRY * len(problem.conflicts.indices) + SECONDS_PER_INDIVIDUAL
    limits = [math.inf]
    if settings.time_limit is not None:
        limits.append(settings.time_limit)
    if settings.generations is not None:
        limits.append((settings.generations + 1) * settings.population * settings.islands * per_evaluation)
    if settings.max_evaluations is not None:
        limits.append(settings.max_evaluations * per_evaluation)
    return min(limits)


def ray_pays_off(problem: Problem, settings: GASettings, workers: int, address: str | None = None) -> bool:
    """Whether to run the islands on Ray rather than in this process.

    Yes when more than one worker is wanted, Ray is installed, and either a
    cluster is named (argument or ``RAY_ADDRESS``), Ray is already running in
    this process, or the search is expected to last at least
    ``GAPLANNER_RAY_MIN_SECONDS`` (default :data:`MIN_RAY_SECONDS`): below that
    a local Ray's start-up and shutdown (about 7 s here) eat the gain.
    """
    if workers < 2 or not ray_available():
        return False
    if cluster_address(address) or ray_running():
        return True
    threshold = float(os.environ.get("GAPLANNER_RAY_MIN_SECONDS", MIN_RAY_SECONDS))
    return expected_search_seconds(problem, settings) >= threshold


def solve_islands(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
) -> Plan:
    """The GA with ``max(settings.islands, workers)`` islands, on Ray when it pays off, else in-process.

    ``workers``: how many run at once (default: this machine's cores). The
    result depends on the seed and the island count, not on where they run.
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
        )
    return run_ga(problem, settings, on_progress=on_progress, should_stop=should_stop)


# --------------------------------------------------------------------------------------------
# The worker side


@dataclass(frozen=True)
class IslandState:
    """Everything needed to rebuild an island exactly: the driver's copy for restarts."""

    generation: int
    population: np.ndarray
    scores: Scores
    rng_state: dict[str, Any]
    evaluations: int


@dataclass(frozen=True)
class IslandReport:
    """What a worker returns per island after a phase."""

    records: list[tuple[int, int, float, int, float]]  # generation, best, mean, evaluations, seconds
    state: IslandState
    emigrants: np.ndarray | None


def _set_numba_threads(threads: int) -> None:
    import numba

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


def _restore_island(
    problem: Problem, settings: GASettings, index: int, seeds: list[np.ndarray], state: IslandState
) -> Island:
    """Island ``index`` as it was in ``state``: built as anywhere else, then given the saved state."""
    island = make_island(problem, settings, index, seeds)  # one population scored: the price of a restart
    island.population = np.array(state.population)
    island.scores = Scores(**{f.name: np.array(getattr(state.scores, f.name)) for f in fields(Scores)})
    island.rng.bit_generator.state = state.rng_state
    island.fitness.evaluations = state.evaluations
    return island


class IslandWorker:
    """A Ray actor evolving some islands of one search (``indices``)."""

    def __init__(
        self,
        problem: Problem,
        settings: GASettings,
        indices: list[int],
        seeds: list[np.ndarray],
        states: dict[int, IslandState | None],
        threads: int = 1,
    ) -> None:
        self.threads = threads
        _set_numba_threads(threads)
        self.settings = settings
        self.lower_bound = problem.lower_bound
        self.islands: dict[int, Island] = {}
        self.generation: dict[int, int] = {}
        for k in indices:
            state = states.get(k)
            if state is None:
                self.islands[k], self.generation[k] = make_island(problem, settings, k, seeds), 0
            else:
                self.islands[k] = _restore_island(problem, settings, k, seeds, state)
                self.generation[k] = state.generation
        self.stopped_phase = -1
        self.pacing = Pacing(0.0, 0.0, settings.local_search > 0)  # the last steps' times, as in run_ga
        self._lock = threading.Lock()

    def pid(self) -> int:
        return os.getpid()

    def stop(self, phase: int) -> None:
        """Ask the running phase (and none after it) to return after its current generation."""
        self.stopped_phase = max(self.stopped_phase, phase)

    def _record(self, k: int, started: float) -> tuple[int, int, float, int, float]:
        island = self.islands[k]
        return (
            self.generation[k],
            island.best_peak,
            float(island.scores.peaks.mean()),
            island.fitness.evaluations,
            time.perf_counter() - started,
        )

    def _report(self, k: int, records: list, emigrants: int) -> IslandReport:
        island = self.islands[k]
        state = IslandState(
            self.generation[k],
            island.population,
            island.scores,
            island.rng.bit_generator.state,
            island.fitness.evaluations,
        )
        return IslandReport(records, state, island.emigrants(emigrants) if emigrants else None)

    def evolve(self, phase: int, steps: int, seconds_left: float | None, emigrants: int) -> dict:
        """Up to ``steps`` generations of every island; stops early at the lower bound, deadline or stop."""
        with self._lock:
            _set_numba_threads(self.threads)  # numba's thread count is per calling thread
            started = time.perf_counter()
            deadline = None if seconds_left is None else started + seconds_left
            records: dict[int, list] = {k: [] for k in self.islands}
            if steps == 0:
                records = {k: [self._record(k, started)] for k in self.islands}
            for _ in range(steps):
                step = self.pacing.next_step(None if deadline is None else deadline - time.perf_counter())
                if self.stopped_phase >= phase or step is None:
                    break
                step_started = time.perf_counter()
                for k, island in self.islands.items():
                    island.step() if step == GENERATION else island.polish()
                    self.generation[k] += 1
                    records[k].append(self._record(k, started))
                self.pacing.measured(step, time.perf_counter() - step_started)
                if min(island.best_peak for island in self.islands.values()) <= self.lower_bound:
                    break
            return {k: self._report(k, records[k], emigrants) for k in self.islands}

    def immigrate(self, arrivals: dict[int, np.ndarray]) -> dict:
        """Each island takes its arrivals in place of its worst; reports the new record and state."""
        with self._lock:
            _set_numba_threads(self.threads)
            started = time.perf_counter()
            for k, orders in arrivals.items():
                self.islands[k].immigrate(np.array(orders))
            return {k: self._report(k, [self._record(k, started)], 0) for k in arrivals}


# --------------------------------------------------------------------------------------------
# The driver side


def _actor_class(ray: Any) -> Any:
    return ray.remote(IslandWorker)


class _Driver:
    """Runs one island search on Ray workers; survives dying workers."""

    def __init__(
        self,
        ray: Any,
        problem: Problem,
        settings: GASettings,
        workers: int,
        should_stop: StopCheck | None,
    ) -> None:
        self.ray, self.problem, self.settings = ray, problem, settings
        self.should_stop = should_stop
        self.stop_requested = False
        # More workers than the cluster has CPUs would wait for ever: fewer workers hold more
        # islands each, which changes nothing in the result.
        cpus = int(ray.cluster_resources().get("CPU", 0))
        count = max(1, min(workers, settings.islands, cpus or workers))
        self.assignment = [list(range(w, settings.islands, count)) for w in range(count)]
        self.problem_ref = ray.put(problem)
        self.seeds_ref = ray.put(heuristic_orders(problem))
        self.states: dict[int, IslandState | None] = dict.fromkeys(range(settings.islands))
        self.actor_class = _actor_class(ray)
        self.actors = [self._start(w) for w in range(count)]
        self.restarts = 0
        self.phase = 0

    def _start(self, w: int) -> Any:
        return self.actor_class.options(num_cpus=1, max_concurrency=2, max_restarts=0).remote(
            self.problem_ref,
            self.settings,
            self.assignment[w],
            self.seeds_ref,
            {k: self.states[k] for k in self.assignment[w]},
            1,
        )

    def pids(self) -> list[int]:
        return self.ray.get([actor.pid.remote() for actor in self.actors])

    def _restart(self, w: int) -> None:
        with suppress(Exception):  # already gone
            self.ray.kill(self.actors[w], no_restart=True)
        self.actors[w] = self._start(w)
        self.restarts += 1

    def _stop_all(self, phase: int) -> None:
        for actor in self.actors:
            actor.stop.remote(phase)  # fire and forget: a dead worker's reply is never awaited

    def call(self, method: str, args: dict[int, Callable[[], tuple]], phase: int) -> dict[int, IslandReport]:
        """``method(*args[w]())`` on every worker w in ``args``; dead workers are restarted and retried.

        The arguments are made at each (re)submission, so a retried phase gets the time left then.
        """
        from ray.exceptions import RayActorError

        failures = dict.fromkeys(args, 0)
        pending = {getattr(self.actors[w], method).remote(*args[w]()): w for w in args}
        reports: dict[int, IslandReport] = {}
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1, timeout=0.2)
            if not self.stop_requested and self.should_stop is not None and self.should_stop():
                self.stop_requested = True
                self._stop_all(phase)
            for ref in ready:
                w = pending.pop(ref)
                try:
                    result = self.ray.get(ref)
                except RayActorError:
                    failures[w] += 1
                    if failures[w] > MAX_RESTARTS_IN_A_ROW:
                        raise
                    self._restart(w)
                    pending[getattr(self.actors[w], method).remote(*args[w]())] = w
                    continue
                reports.update(result)
                for k, report in result.items():
                    self.states[k] = report.state
                if any(r[1] <= self.problem.lower_bound for rep in result.values() for r in rep.records):
                    self._stop_all(phase)
        return reports

    def evolve(
        self, steps: int, seconds_left: Callable[[], float | None], emigrants: int
    ) -> dict[int, IslandReport]:
        self.phase += 1
        phase = self.phase
        args = {w: lambda: (phase, steps, seconds_left(), emigrants) for w in range(len(self.actors))}
        return self.call("evolve", args, phase)

    def immigrate(self, arrivals: dict[int, np.ndarray]) -> dict[int, IslandReport]:
        args = {
            w: lambda mine={k: arrivals[k] for k in self.assignment[w]}: (mine,)
            for w in range(len(self.actors))
            if any(k in arrivals for k in self.assignment[w])
        }
        return self.call("immigrate", args, self.phase)

    def close(self) -> None:
        for actor in self.actors:
            with suppress(Exception):  # already gone
                self.ray.kill(actor, no_restart=True)


def _merge(
    reports: dict[int, list[tuple[int, int, float, int, float]]], phase_started: float, started: float
) -> list[GenerationRecord]:
    """One record per generation from the islands' records (an island that stopped early counts as is)."""
    by_generation: dict[int, dict[int, tuple]] = {}
    for k, records in reports.items():
        for record in records:
            by_generation.setdefault(record[0], {})[k] = record
    merged = []
    latest: dict[int, tuple] = {}
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
    on_start: Any = None,
) -> Plan:
    """The island GA on Ray workers (a local Ray unless an address is given or Ray is running).

    ``settings.islands`` islands are dealt round-robin to ``min(workers, islands)``
    workers. ``on_start(driver)`` is called once the workers are up (tests
    use it to find the worker processes). As with :func:`~gaplanner.ga.run_ga`,
    the clock starts after the kernels are compiled here, so that workers on
    this machine load them from numba's cache.
    """
    warm_up()
    started = time.perf_counter()
    settings = fit_population_to_budget(problem, settings or GASettings())  # as run_ga does
    with ray_session(ray_address, num_cpus=max(workers, os.cpu_count() or 1)) as ray:
        driver = _Driver(ray, problem, settings, workers, should_stop)
        try:
            return _search(driver, problem, settings, started, on_progress, on_start)
        finally:
            driver.close()


def _search(
    driver: _Driver,
    problem: Problem,
    settings: GASettings,
    started: float,
    on_progress: ProgressCallback | None,
    on_start: Any,
) -> Plan:
    s = settings
    # Generations, stall and the lower bound are replayed per generation of the merged records;
    # the clock and stop requests are checked once per phase (started=inf keeps Termination's clock out).
    termination = Termination(s, problem.lower_bound, started=math.inf)
    trace: list[GenerationRecord] = []

    def seconds_left() -> float | None:
        return None if s.time_limit is None else s.time_limit - (time.perf_counter() - started)

    def absorb(records: list[GenerationRecord]) -> str | None:
        reason = None
        for record in records:
            trace.append(record)
            if on_progress is not None:
                on_progress(record)
            reason = termination.reason(record.generation, record.best_peak, record.evaluations)
            if reason is not None:
                break
        if reason is None and (s.time_limit is not None and (seconds_left() or 0) <= 0):
            reason = "time limit"
        if reason is None and driver.stop_requested:
            reason = "stopped by request"
        return reason

    phase_started = time.perf_counter()
    reports = driver.evolve(0, seconds_left, 0)
    startup = time.perf_counter() - started
    if on_start is not None:
        on_start(driver)
    reason = absorb(_merge({k: r.records for k, r in reports.items()}, phase_started, started))
    generation = 0
    while reason is None:
        steps = s.migration_interval - generation % s.migration_interval
        if s.generations is not None:
            steps = min(steps, s.generations - generation)
        if s.stall_generations is not None:
            steps = min(steps, s.stall_generations - (generation - termination.last_improvement))
        if s.max_evaluations is not None:
            # Never past the generation where the limit falls: a generation scores at most every
            # child twice (repeats are mutated and scored again) plus the local search's neighbours.
            per_generation = s.islands * (2 * s.population + s.local_search)
            steps = max(1, min(steps, -(-(s.max_evaluations - trace[-1].evaluations) // per_generation)))
        boundary = (generation + steps) % s.migration_interval == 0
        migrating = boundary and s.islands > 1 and s.migrants > 0
        phase_started = time.perf_counter()
        reports = driver.evolve(steps, seconds_left, s.migrants if migrating else 0)
        records = {k: r.records for k, r in reports.items()}
        reached = {r.state.generation for r in reports.values()}
        if migrating and reached == {generation + steps}:
            # Ring migration as gaplanner.ga.migrate: island k takes island k-1's best.
            arrivals = {k: reports[(k - 1) % s.islands].emigrants for k in range(s.islands)}
            arrived = time.perf_counter() - phase_started
            for k, report in driver.immigrate(arrivals).items():
                # The generation's record after migration, timed on the driver's clock.
                records[k] = [*records[k][:-1], (*report.records[0][:4], arrived)]
        generation = max(reached)
        reason = absorb(_merge(records, phase_started, started))
    states = [driver.states[k] for k in range(s.islands)]
    best = min(states, key=lambda state: int(state.scores.peaks.min())).scores
    return make_plan(
        problem,
        best.offsets[int(np.argmin(best.peaks))],
        "ga",
        started,
        generations=trace[-1].generation,
        evaluations=trace[-1].evaluations,
        stop_reason=reason,
        seed=s.seed,
        population=s.population,
        islands=s.islands,
        workers=len(driver.actors),
        ray=True,
        startup_seconds=round(startup, 3),
        restarts=driver.restarts,
        trace=[asdict(record) for record in trace],
    )
