"""The driver side: start the island workers, run a phase on all of them, restart the ones that die."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import Any

import numpy as np

from gaplanner.problem.problem import Problem
from gaplanner.search.distributed.worker import IslandReport, IslandState, IslandWorker
from gaplanner.search.ga import GASettings, StopCheck

#: A worker that dies more often than this in one phase fails the search.
MAX_RESTARTS_IN_A_ROW = 3
#: Seconds a replacement worker may wait for a free CPU before it shares one.
PLACEMENT_SECONDS = 10.0


def _actor_class(ray: Any) -> Any:
    return ray.remote(IslandWorker)


class Driver:
    """Runs one island search on Ray workers; survives dying workers.

    ``seeds``: the islands' initial orders (:func:`~gaplanner.search.ga.heuristic_orders`).
    """

    def __init__(
        self,
        ray: Any,
        problem: Problem,
        settings: GASettings,
        workers: int,
        should_stop: StopCheck | None,
        seeds: list[np.ndarray],
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
        self.seeds_ref = ray.put(seeds)
        self.states: dict[int, IslandState | None] = dict.fromkeys(range(settings.islands))
        self.actor_class = _actor_class(ray)
        self.actors = [self._start(w) for w in range(count)]
        self.restarts = 0
        self.phase = 0

    def _start(self, w: int, cpus: float = 1) -> Any:
        return self.actor_class.options(num_cpus=cpus, max_concurrency=2, max_restarts=0).remote(
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
        """A new worker w with the islands of the last phase.

        It asks for a CPU of its own; when none frees up within
        :data:`PLACEMENT_SECONDS` (a node died, taking its CPUs with it) it
        shares one with the other workers: slower, where waiting for a CPU
        that never comes would hang the search past its time limit.
        """
        with suppress(Exception):  # already gone
            self.ray.kill(self.actors[w], no_restart=True)
        actor = self._start(w)
        ready, _ = self.ray.wait([actor.pid.remote()], timeout=PLACEMENT_SECONDS)
        if not ready:
            with suppress(Exception):
                self.ray.kill(actor, no_restart=True)
            actor = self._start(w, cpus=0)
        self.actors[w] = actor
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
