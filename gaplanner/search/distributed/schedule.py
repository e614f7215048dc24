"""Which island runs next, and where: the islands' progress as the driver sees it.

A search's work is a stream of units, one island's generations up to its next
migration (:class:`~gaplanner.search.distributed.worker.Unit`). Island ``k``'s
next unit is ready once its last one is back and, at a migration, once island
``k-1`` has reached that migration and handed over its emigrants; no other
island is waited for, so there is no barrier across all islands. A free worker
takes a ready island it holds, else one that another worker holds (which then
moves, with its state): a faster worker runs more units. Each island's results
depend only on its own state and arrivals, so the plan is the same whatever ran
where and when.

Islands run no further than :meth:`Flow.advance`'s limit, the first generation
where the search could stop (generation, stall or evaluation limit), so a
search ended by a limit stops every island at the generation the in-process
search stops at.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from gaplanner.plans.plan import GenerationRecord
from gaplanner.search.distributed.worker import IslandReport, IslandState, Unit
from gaplanner.search.ga import GASettings, Termination

#: An island's record of a generation on the driver's clock: best peak, mean peak, evaluations, time.
Record = tuple[int, float, int, float]


@dataclass
class Track:
    """The driver's view of one island."""

    home: int | None  # the worker holding the island at ``generation`` (None: no worker does)
    generation: int = 0
    state: IslandState | None = None  # as last reported
    busy: bool = False
    arrived: int = 0  # the last generation at which it took its arrivals
    records: dict[int, Record] = field(default_factory=dict)


class Pace:
    """How fast each worker runs generations and takes islands over, and when it will be done with
    the units it has.

    Measured from the units that came back (averages that follow changes in a
    worker's share of its CPU); a worker not yet measured counts as fast as the
    others. Taking an island over (scoring its population again, rebuilding its
    operators) counts as :data:`MOVE_GENERATIONS` generations until measured.
    """

    #: Weight of the latest unit in a worker's averages.
    WEIGHT = 0.25
    MOVE_GENERATIONS = 1.0

    def __init__(self, workers: int) -> None:
        self.seconds_per_generation = [0.0] * workers
        self.move_seconds = [0.0] * workers
        self.queued: list[list[float]] = [[] for _ in range(workers)]  # expected seconds, oldest first
        self.busy_until = [0.0] * workers

    def _seconds(self, w: int, steps: int, moved: bool) -> float:
        """A unit's expected seconds on ``w`` (a worker not measured yet: as the others' average)."""
        per_generation = _or_mean(self.seconds_per_generation, w)
        move = _or_mean(self.move_seconds, w)
        return steps * per_generation + moved * (move or self.MOVE_GENERATIONS * per_generation)

    def rank(self, w: int, steps: int, home: int | None, now: float) -> tuple[float, bool]:
        """When worker ``w`` would finish a unit of ``steps`` generations given now (the island's
        ``home`` first among equals)."""
        return max(self.busy_until[w], now) + self._seconds(w, steps, w != home), w != home

    def started(self, w: int, steps: int, moved: bool, now: float) -> None:
        seconds = self._seconds(w, steps, moved)
        self.queued[w].append(seconds)
        self.busy_until[w] = max(self.busy_until[w], now) + seconds

    def returned(self, w: int, unit: Unit, report: IslandReport | None, now: float) -> None:
        """A unit of worker ``w`` came back: its oldest; the next one starts now."""
        if self.queued[w]:
            self.queued[w].pop(0)
        self.busy_until[w] = now + sum(self.queued[w])
        if report is None:
            return
        first, last = report.records[0][4], report.records[-1][4]  # after the take-over, at the end
        if unit.state is not None:
            _average(self.move_seconds, w, first)
        if len(report.records) > 1:
            _average(self.seconds_per_generation, w, (last - first) / (len(report.records) - 1))


def _or_mean(values: list[float], w: int) -> float:
    """``values[w]``, or the mean of those measured when it is not."""
    measured = [v for v in values if v > 0] or [0.0]
    return values[w] or sum(measured) / len(measured)


def _average(values: list[float], w: int, value: float) -> None:
    old = values[w]
    values[w] = value if old == 0 else old + Pace.WEIGHT * (value - old)


class Flow:
    """The islands of one search: their progress, their next units, and the merged trace's records."""

    def __init__(self, settings: GASettings, workers: int) -> None:
        self.settings, self.pace = settings, Pace(workers)
        n = settings.islands
        # Neighbours of the ring on one worker at first: each worker waits on one other island only.
        self.tracks = [Track(home=k * workers // n) for k in range(n)]
        self.emigrants: dict[tuple[int, int], np.ndarray] = {}  # (island, generation) -> orders
        self.merged = -1  # the last generation in the trace
        self.limit: float = math.inf
        self.moves = 0  # units run on another worker than the island's last

    def migrates_at(self, generation: int) -> bool:
        s = self.settings
        return generation > 0 and generation % s.migration_interval == 0 and s.islands > 1 and s.migrants > 0

    def advance(self, termination: Termination, trace: list[GenerationRecord]) -> None:
        """Set how far islands may run: the first generation where a limit could stop the search.

        A generation scores at most every child twice (repeats are mutated and scored again) plus
        the local search's neighbours: that bounds where an evaluation limit can fall.
        """
        s, limit = self.settings, math.inf
        if s.generations is not None:
            limit = s.generations
        if s.stall_generations is not None:
            limit = min(limit, termination.last_improvement + s.stall_generations)
        if s.max_evaluations is not None:
            generation, evaluations = (trace[-1].generation, trace[-1].evaluations) if trace else (0, 0)
            evaluations = max(evaluations, s.islands * s.population)  # generation 0 scores each island
            per_generation = s.islands * (2 * s.population + s.local_search)
            limit = min(limit, generation + max(1, -(-(s.max_evaluations - evaluations) // per_generation)))
        self.limit = limit

    def next_unit(self, k: int, worker: int | None) -> Unit | None:
        """Island ``k``'s next unit to run on ``worker``, or None while it is not ready."""
        s, track = self.settings, self.tracks[k]
        if track.busy:
            return None
        g, arrivals = track.generation, None
        if self.migrates_at(g) and track.arrived != g:
            arrivals = self.emigrants.get(((k - 1) % s.islands, g))
            if arrivals is None:
                return None
        interval = s.migration_interval
        steps = int(max(0, min((g // interval + 1) * interval, self.limit) - g))
        if steps == 0 and arrivals is None and track.state is not None:
            return None
        emigrants = s.migrants if self.migrates_at(g + steps) else 0
        state = None if track.home == worker else track.state
        return Unit(k, g, steps, arrivals, emigrants, state)

    def assign(self, free: list[int], now: float) -> list[tuple[int, Unit]]:
        """Ready units for workers with free places (``free[w]``: how many), the least advanced first.

        Each goes to the worker expected to finish it first (:class:`Pace`): the one holding
        the island unless another, sooner free or faster, finishes it sooner even after taking
        the island over.
        """
        given: list[tuple[int, Unit]] = []
        for _, k in sorted((t.generation, k) for k, t in enumerate(self.tracks) if not t.busy):
            track = self.tracks[k]
            unit = self.next_unit(k, track.home)
            workers = [w for w in range(len(free)) if free[w] > 0]
            if unit is None or not workers:
                continue
            worker = min(workers, key=lambda w: self.pace.rank(w, unit.steps, track.home, now))
            if worker != track.home:
                unit = replace(unit, state=track.state)
                self.moves += track.home is not None
            track.busy = True
            free[worker] -= 1
            self.pace.started(worker, unit.steps, worker != track.home, now)
            given.append((worker, unit))
        return given

    def done(self, worker: int, unit: Unit, report: IslandReport | None, arrived: float) -> None:
        """Take a unit's report. None: its worker died, and with it every island it held; they run
        again from their last reported state."""
        k, track = unit.island, self.tracks[unit.island]
        track.busy = False
        self.pace.returned(worker, unit, report, arrived)
        if report is None:
            for other in self.tracks:
                if other.home == worker and (other is track or not other.busy):
                    other.home = None
            return
        track.home, track.state, track.generation = worker, report.state, report.state.generation
        if unit.arrivals is not None:
            track.arrived = unit.generation
            self.emigrants.pop(((k - 1) % self.settings.islands, unit.generation), None)
        if report.emigrants is not None:
            self.emigrants[(k, track.generation)] = report.emigrants
        last = report.records[-1][4]
        for g, best, mean, evaluations, seconds in report.records:
            track.records[g] = (best, mean, evaluations, arrived - (last - seconds))

    def _settled(self, track: Track) -> int:
        """The island's last generation whose record is final (after that generation's migration)."""
        if track.state is None:  # not back from its first unit
            return -1
        g = track.generation
        return g if not self.migrates_at(g) or track.arrived == g else g - 1

    def records(self, started: float, everything: bool = False) -> list[GenerationRecord]:
        """The trace's next records: each generation every island has settled (``everything``: each
        generation any island reached, an island that stopped earlier counting as it stopped)."""
        if everything:
            last = max(max(t.records, default=-1) for t in self.tracks)
        else:
            last = min(self._settled(t) for t in self.tracks)
        merged = []
        for g in range(self.merged + 1, last + 1):
            current = [t.records[g] for t in self.tracks if g in t.records]
            if not current:
                continue
            latest = [t.records[max(h for h in t.records if h <= g)] for t in self.tracks if _reached(t, g)]
            merged.append(
                GenerationRecord(
                    generation=g,
                    best_peak=min(r[0] for r in current),
                    mean_peak=float(np.mean([r[1] for r in current])),
                    evaluations=sum(r[2] for r in latest),
                    elapsed=max(r[3] for r in current) - started,
                )
            )
        self._forget(last)
        return merged

    def _forget(self, last: int) -> None:
        """Drop the records merged, keeping each island's latest (an island that stopped counts as is)."""
        self.merged = max(self.merged, last)
        for track in self.tracks:
            newest = max(track.records, default=None)
            track.records = {g: r for g, r in track.records.items() if g > last or g == newest}


def _reached(track: Track, generation: int) -> bool:
    return any(g <= generation for g in track.records)
