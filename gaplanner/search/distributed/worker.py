"""The worker side: a Ray actor evolving some islands of one search, and the state it reports back.

After every phase a worker returns its islands' state (population, random-generator
state, counters and the best plan), so that the driver can rebuild them exactly in a
new worker when this one dies. The state holds no scores: a new worker scores the
population again, which gives the same scores (each stored order is sorted by
address, and first-fit places such an order at the offsets it came from). So a
phase's report stays small enough to travel inline with Ray's reply instead of
through the object store of the node that made it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gaplanner.problem.problem import Problem
from gaplanner.search.ga import GASettings, Island, Pacing, make_island

#: One island's record of one generation: generation, best peak, mean peak, evaluations, seconds.
IslandRecord = tuple[int, int, float, int, float]


@dataclass(frozen=True)
class IslandState:
    """Everything needed to rebuild an island exactly (the driver's copy for restarts), and its best plan.

    ``population``: in the narrowest integer type that holds a block index.
    """

    generation: int
    population: np.ndarray
    rng_state: dict[str, Any]
    evaluations: int
    best_peak: int
    best_offsets: np.ndarray


@dataclass(frozen=True)
class IslandReport:
    """What a worker returns per island after a phase."""

    records: list[IslandRecord]
    state: IslandState
    emigrants: np.ndarray | None


def _compact(orders: np.ndarray) -> np.ndarray:
    """``orders`` in the narrowest unsigned type that holds every block index."""
    for dtype in (np.uint16, np.uint32):
        if orders.shape[1] <= np.iinfo(dtype).max + 1:
            return orders.astype(dtype)
    return orders


def _set_numba_threads(threads: int) -> None:
    import numba

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


def _restore_island(
    problem: Problem, settings: GASettings, index: int, seeds: list[np.ndarray], state: IslandState
) -> Island:
    """Island ``index`` as it was in ``state``: built as anywhere else, then given the saved state."""
    island = make_island(problem, settings, index, seeds)  # two populations scored: the price of a restart
    island.population, island.scores = island.fitness(np.asarray(state.population, np.int64))
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

    def _record(self, k: int, started: float) -> IslandRecord:
        island = self.islands[k]
        return (
            self.generation[k],
            island.best_peak,
            float(island.scores.peaks.mean()),
            island.fitness.evaluations,
            time.perf_counter() - started,
        )

    def _report(self, k: int, records: list[IslandRecord], emigrants: int) -> IslandReport:
        island = self.islands[k]
        best = int(np.argmin(island.scores.peaks))
        state = IslandState(
            self.generation[k],
            _compact(island.population),
            island.rng.bit_generator.state,
            island.fitness.evaluations,
            int(island.scores.peaks[best]),
            island.scores.offsets[best].copy(),
        )
        return IslandReport(records, state, island.emigrants(emigrants) if emigrants else None)

    def evolve(self, phase: int, steps: int, seconds_left: float | None, emigrants: int) -> dict:
        """Up to ``steps`` generations of every island; stops early at the lower bound, deadline or stop."""
        with self._lock:
            _set_numba_threads(self.threads)  # numba's thread count is per calling thread
            started = time.perf_counter()
            deadline = None if seconds_left is None else started + seconds_left
            records: dict[int, list[IslandRecord]] = {k: [] for k in self.islands}
            if steps == 0:
                records = {k: [self._record(k, started)] for k in self.islands}
            for _ in range(steps):
                step = self.pacing.next_step(None if deadline is None else deadline - time.perf_counter())
                if self.stopped_phase >= phase or step is None:
                    break
                self.pacing.run(step, self.islands.values())
                for k in self.islands:
                    self.generation[k] += 1
                    records[k].append(self._record(k, started))
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
