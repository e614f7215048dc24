"""The worker side: a Ray actor that runs units of island work, and the state each unit reports back.

A unit is one island's work up to its next migration (or stopping) point: take
the arrivals of the last migration, evolve some generations, hand over the best
orders for the next. A worker keeps the islands it has run; the driver sends an
island's state along with a unit only when the island last ran elsewhere, so
islands stay where they are until a faster worker takes one over. Any worker
can take any island: it is rebuilt from its state, and an island's results
depend only on its own state and arrivals, never on where it ran.

After every unit the worker returns the island's state (population, random-generator
state, counters and the best plan), so that the driver can rebuild it exactly
elsewhere. The state holds no scores: a worker that takes the island over scores
the population again, which gives the same scores (each stored order is sorted by
address, and first-fit places such an order at the offsets it came from). So a
report stays small enough to travel inline with Ray's reply instead of through the
object store of the node that made it.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gaplanner import native
from gaplanner.problem.problem import Problem
from gaplanner.search.fitness import PopulationFitness
from gaplanner.search.ga import GASettings, Island, Pacing, make_island
from gaplanner.search.variation import HoleGuide

#: One island's record of one generation: generation, best peak, mean peak, evaluations, seconds
#: (since the unit started on its worker).
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
class Unit:
    """One island's work: from ``generation``, take ``arrivals`` (if any), evolve ``steps`` generations.

    ``state``: the island as the driver last saw it, for a worker that does not
    hold it at ``generation`` (None: this worker does, or the island starts
    fresh at generation 0). ``emigrants``: how many best orders to return
    afterwards, for the next island of the ring.
    """

    island: int
    generation: int
    steps: int
    arrivals: np.ndarray | None = None
    emigrants: int = 0
    state: IslandState | None = None


@dataclass(frozen=True)
class IslandReport:
    """What a worker returns after a unit: a record of the unit's first generation (after the
    arrivals) and of each generation evolved, the island's state, the emigrants."""

    records: list[IslandRecord]
    state: IslandState
    emigrants: np.ndarray | None


def _compact(orders: np.ndarray) -> np.ndarray:
    """``orders`` in the narrowest unsigned type that holds every block index."""
    for dtype in (np.uint16, np.uint32):
        if orders.shape[1] <= np.iinfo(dtype).max + 1:
            return orders.astype(dtype)
    return orders


class IslandWorker:
    """A Ray actor running units of one search's islands, one unit at a time."""

    def __init__(
        self, problem: Problem, settings: GASettings, seeds: list[np.ndarray], threads: int = 1
    ) -> None:
        self.threads = threads
        self.problem, self.settings, self.seeds = problem, settings, seeds
        self.islands: dict[int, Island] = {}
        self.generation: dict[int, int] = {}
        with native.limited_threads(threads):  # per calling thread: the caller's count is left as it was
            self.fitness = PopulationFitness(problem, settings.use_contiguity)  # shared; a counter each
            self.guide = HoleGuide.for_problem(problem)
        self.stopped = False
        self.pacing = Pacing.for_search(settings, 0.0)  # the last steps' times, as in run_ga
        self._lock = threading.Lock()

    def pid(self) -> int:
        return os.getpid()

    def stop(self) -> None:
        """Make the running unit, and every unit after it, return after its current generation."""
        self.stopped = True

    def _restore(self, k: int, state: IslandState) -> Island:
        """Island ``k`` as it was in ``state``: its population scored again, its stream and counters."""
        fitness = copy.copy(self.fitness)
        rng = np.random.default_rng()
        rng.bit_generator.state = state.rng_state
        island = Island(fitness, self.settings, rng, np.asarray(state.population, np.int64), self.guide)
        fitness.evaluations = state.evaluations
        return island

    def _island(self, unit: Unit) -> Island:
        """The unit's island at its generation: held here, restored from its state, or new."""
        k = unit.island
        if unit.state is not None:
            self.islands[k], self.generation[k] = self._restore(k, unit.state), unit.state.generation
        elif k not in self.islands and unit.generation == 0:
            self.islands[k], self.generation[k] = make_island(self.problem, self.settings, k, self.seeds), 0
        if self.generation.get(k) != unit.generation:
            raise RuntimeError(f"island {k}: at generation {self.generation.get(k)}, not {unit.generation}")
        return self.islands[k]

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

    def run(self, unit: Unit, seconds_left: float | None) -> IslandReport:
        """The unit; stops early at the lower bound, the deadline or a stop request.

        The reply's records start with the unit's first generation, after the
        arrivals: the record that generation has in the search's trace.
        ``seconds_left`` counts from the unit's arrival, not from when it starts
        after the unit before it.
        """
        deadline = None if seconds_left is None else time.perf_counter() + seconds_left
        with self._lock, native.limited_threads(self.threads):  # the count is per calling thread
            started = time.perf_counter()
            k, island = unit.island, self._island(unit)
            if unit.arrivals is not None:
                island.immigrate(np.array(unit.arrivals))
            records = [self._record(k, started)]
            for _ in range(unit.steps):
                step = self.pacing.next_step(None if deadline is None else deadline - time.perf_counter())
                if self.stopped or step is None or island.best_peak <= self.problem.lower_bound:
                    break
                self.pacing.run(step, [island])
                self.generation[k] += 1
                records.append(self._record(k, started))
            emigrants = unit.emigrants if self.generation[k] == unit.generation + unit.steps else 0
            return self._report(k, records, emigrants)
