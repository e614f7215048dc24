"""The driver side: start the island workers, hand them units, restart the ones that die."""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from gaplanner.problem.problem import Problem
from gaplanner.search.distributed.worker import IslandReport, IslandWorker, Unit
from gaplanner.search.ga import GASettings

#: A worker that dies more often than this without finishing a unit in between fails the search.
MAX_RESTARTS_IN_A_ROW = 3
#: Seconds a replacement worker may wait for a free CPU before it shares one.
PLACEMENT_SECONDS = 10.0
#: Units a worker is given at once: the next one waits on the worker while it runs one, so it
#: starts without a round trip to the driver in between.
UNITS_IN_FLIGHT = 2


def _actor_class(ray: Any) -> Any:
    return ray.remote(IslandWorker)


@dataclass(frozen=True)
class Done:
    """A unit come back: its report (None: the worker died, the unit must run again), and when."""

    worker: int
    unit: Unit
    report: IslandReport | None
    arrived: float


class Driver:
    """Runs one island search's units on Ray workers; survives dying workers.

    ``seeds``: the islands' initial orders (:func:`~gaplanner.search.ga.heuristic_orders`).
    """

    def __init__(
        self, ray: Any, problem: Problem, settings: GASettings, workers: int, seeds: list[np.ndarray]
    ) -> None:
        self.ray = ray
        # More workers than the cluster has CPUs would wait for ever: fewer workers run more
        # units each, which changes nothing in the result.
        cpus = int(ray.cluster_resources().get("CPU", 0))
        self.count = max(1, min(workers, settings.islands, cpus or workers))
        self.arguments = (ray.put(problem), settings, ray.put(seeds))
        self.actor_class = _actor_class(ray)
        self.actors = [self._start() for _ in range(self.count)]
        self.pending: dict[Any, tuple[int, Unit, Any]] = {}  # ref -> worker, unit, the actor it went to
        self.failures = [0] * self.count
        self.restarts = 0

    def _start(self, cpus: float = 1) -> Any:
        options = {"num_cpus": cpus, "max_concurrency": UNITS_IN_FLIGHT + 1, "max_restarts": 0}
        return self.actor_class.options(**options).remote(*self.arguments)

    def pids(self) -> list[int]:
        return self.ray.get([actor.pid.remote() for actor in self.actors])

    def ready(self) -> None:
        """Wait until every worker is up; one that dies on the way is started again."""
        from ray.exceptions import RayActorError

        for w in range(self.count):
            for attempt in range(MAX_RESTARTS_IN_A_ROW + 1):
                try:
                    self.ray.get(self.actors[w].pid.remote())
                    break
                except RayActorError:
                    if attempt == MAX_RESTARTS_IN_A_ROW:
                        raise
                    self._restart(w)

    def in_flight(self, w: int) -> int:
        return sum(1 for worker, _, _ in self.pending.values() if worker == w)

    def submit(self, w: int, unit: Unit, seconds_left: float | None) -> None:
        actor = self.actors[w]
        self.pending[actor.run.remote(unit, seconds_left)] = (w, unit, actor)

    def wait(self, timeout: float) -> list[Done]:
        """The units that came back within ``timeout`` (all that are back once one is)."""
        if not self.pending:
            return []
        ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=0)
        return [self._collect(ref) for ref in ready]

    def _collect(self, ref: Any) -> Done:
        from ray.exceptions import RayActorError

        w, unit, actor = self.pending.pop(ref)
        try:
            report = self.ray.get(ref)
        except RayActorError:
            if actor is self.actors[w]:  # the first of its units to fail: start another worker
                self.failures[w] += 1
                if self.failures[w] > MAX_RESTARTS_IN_A_ROW:
                    raise
                self._restart(w)
            return Done(w, unit, None, time.perf_counter())
        self.failures[w] = 0
        return Done(w, unit, report, time.perf_counter())

    def _restart(self, w: int) -> None:
        """A new worker w, holding no island.

        It asks for a CPU of its own; when none frees up within
        :data:`PLACEMENT_SECONDS` (a node died, taking its CPUs with it) it
        shares one with the other workers: slower, where waiting for a CPU
        that never comes would hang the search past its time limit.
        """
        with suppress(Exception):  # already gone
            self.ray.kill(self.actors[w], no_restart=True)
        actor = self._start()
        ready, _ = self.ray.wait([actor.pid.remote()], timeout=PLACEMENT_SECONDS)
        if not ready:
            with suppress(Exception):
                self.ray.kill(actor, no_restart=True)
            actor = self._start(cpus=0)
        self.actors[w] = actor
        self.restarts += 1

    def stop_all(self) -> None:
        for actor in self.actors:
            actor.stop.remote()  # fire and forget: a dead worker's reply is never awaited

    def close(self) -> None:
        for actor in self.actors:
            with suppress(Exception):  # already gone
                self.ray.kill(actor, no_restart=True)
