"""Every algorithm by name: its settings class, what it can plan, and how it runs.

One table, read by :func:`gaplanner.solve.solve`, :func:`gaplanner.solve.compare`,
the CLI, the service and the experiments' campaign; what an algorithm can plan
(its :class:`Capabilities`) is checked here once, in :meth:`Algorithm.refuse`,
in the spirit of omnimalloc's allocator registry.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gaplanner.deadline import Deadline
from gaplanner.errors import InputError
from gaplanner.plans.plan import Plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.baselines import best_fit_coalescing, first_fit, greedy_size
from gaplanner.search.exact import ExactSettings, exact_search
from gaplanner.search.exact.shared_lifetimes import merged_for_exact_search
from gaplanner.search.ga import Exchange, GASettings, ProgressCallback, StopCheck, run_ga
from gaplanner.search.memories.baselines import plan_order, spill_greedy, spill_greedy_arena
from gaplanner.search.memories.ga import memory_ga
from gaplanner.search.random_search import RandomSearchSettings, random_search
from gaplanner.search.side_by_side import ga_with_exact


@dataclass(frozen=True)
class Capabilities:
    """What an algorithm can plan, and what it can use."""

    #: Lifetimes as partial orders (multi-core graphs, vector clocks), not only intervals.
    vector_clocks: bool = True
    #: Blocks whose offset the input fixes.
    pinned_blocks: bool = True
    #: Several memories (a document's ``memories``): a block's memory is chosen too.
    memories: bool = False
    #: Devices' alignments and the memories they reach (a document's ``devices``).
    devices: bool = True
    #: Several workers (islands on Ray); an algorithm without them runs in this process.
    workers: bool = False
    #: The operator order searched too (not yet: issue 40).
    schedule_search: bool = False


@dataclass(frozen=True)
class Hooks:
    """What a caller passes beside the problem and settings: progress, stopping, workers."""

    on_progress: ProgressCallback | None = None
    should_stop: StopCheck | None = None
    workers: int | None = 1
    ray_address: str | None = None
    #: The run's deadline (:mod:`gaplanner.deadline`); None: the settings' time limit, from after loading.
    deadline: Deadline | None = None


Runner = Callable[[Problem, Any, Hooks], Plan]


@dataclass(frozen=True)
class Algorithm:
    """One algorithm: its name, its settings class (None: it takes none) and what it can plan."""

    name: str
    run: Runner
    settings: type | None = None
    capabilities: Capabilities = Capabilities()
    #: A baseline: :func:`gaplanner.solve.compare` plans with it beside the GA.
    baseline: bool = False

    def refuse(self, problem: Problem | None, settings: object | None) -> None:
        """Raise :class:`InputError` (naming the field) for settings or a problem this cannot take."""
        if settings is not None and self.settings is None:
            raise InputError(
                f"{self.name} takes no settings, got {type(settings).__name__}; pass None", "settings"
            )
        if settings is not None and not isinstance(settings, self.settings):  # type: ignore[arg-type]
            raise InputError(
                f"{self.name} takes {self.settings.__name__}, not {type(settings).__name__}",  # type: ignore[union-attr]
                "settings",
            )
        if problem is not None and problem.memories is not None and not self.capabilities.memories:
            names = ", ".join(a.name for a in ALGORITHMS.values() if a.capabilities.memories)
            raise InputError(f"{self.name} plans one arena; with memories choose from {names}", "algorithm")
        if problem is not None and problem.has_pinned and not self.capabilities.pinned_blocks:
            names = ", ".join(a.name for a in ALGORITHMS.values() if a.capabilities.pinned_blocks)
            raise InputError(
                f"{self.name} moves blocks up as the arena grows, so it cannot keep pinned blocks in place; "
                f"choose from {names}",
                "algorithm",
            )

    def can_plan(self, problem: Problem) -> bool:
        """Whether :meth:`refuse` lets this algorithm plan ``problem`` (with its default settings)."""
        try:
            self.refuse(problem, None)
        except InputError:
            return False
        return True


def lookup(name: str) -> Algorithm:
    """The algorithm called ``name``, or :class:`InputError` listing the names there are."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise InputError(
            f"unknown algorithm {name!r}; choose from {', '.join(ALGORITHMS)}", "algorithm"
        ) from None


# --- the runners: one per algorithm, each a short call into search/ -----------------------------------


def _time_left(settings: GASettings | ExactSettings, started: float) -> GASettings | ExactSettings:
    """``settings`` with what is left of their time limit since ``started`` (a little at least)."""
    limit = settings.time_limit or 0.0
    return replace(settings, time_limit=max(limit - (time.perf_counter() - started), 0.1 * limit))


def _merged(run: Runner, time_limit: Callable[[Any], float | None]) -> Runner:
    """``run`` on the problem with its blocks of one lifetime merged, where that lets the exact search
    take a problem too large for it whole (see :mod:`gaplanner.search.exact.shared_lifetimes`); the plan
    is expanded to the original. Merging counts against the time limit (the run's deadline, if given),
    and the expanded plan's verification is kept back from the search."""

    def merged_run(problem: Problem, settings: Any, hooks: Hooks) -> Plan:
        started = time.perf_counter()
        limit = time_limit(settings)
        deadline = hooks.deadline
        seconds = limit if deadline is None or limit is None else deadline.left()
        merged = merged_for_exact_search(problem, seconds) if seconds is not None else None
        if merged is None:
            return run(problem, settings, hooks)
        if deadline is not None:
            hooks = replace(hooks, deadline=deadline.keeping(verify_seconds(problem)))
        plan = run(merged.problem, _time_left(settings or ExactSettings(), started), hooks)
        return merged.original_plan(problem, plan, started)  # type: ignore[arg-type]

    return merged_run


def _islands_on_ray(
    problem: Problem, settings: GASettings | None, workers: int | None, ray_address: str | None
) -> bool:
    """Whether the GA's islands run on Ray workers (see :func:`~gaplanner.search.distributed.ray_pays_off`);
    else they run in this process, side by side with the exact probes."""
    if workers == 1:
        return False
    from gaplanner.search.distributed.cost import ray_pays_off  # imports no Ray

    ga = settings or GASettings()
    count = workers or os.cpu_count() or 1
    return ray_pays_off(problem, replace(ga, islands=max(ga.islands, count)), count, ray_address)


def _ga_arena(problem: Problem, settings: GASettings | None, hooks: Hooks) -> Plan:
    """The GA on one arena, with the exact probes beside it (:mod:`gaplanner.search.side_by_side`)."""
    workers = hooks.workers
    on_ray = _islands_on_ray(problem, settings, workers, hooks.ray_address)
    if workers != 1 and not on_ray:  # the islands in this process, with the exact probes beside them
        ga = settings or GASettings()
        settings = replace(ga, islands=max(ga.islands, workers or os.cpu_count() or 1))

    def genetic(
        ga_settings: GASettings | None, seeds: Sequence[np.ndarray], report: ProgressCallback | None,
        exchange: Exchange | None, stop: StopCheck | None, deadline: Deadline | None = None,
        plans: dict[str, Plan] | None = None,
    ) -> Plan:  # fmt: skip
        if on_ray:  # the islands on Ray start from the baselines' plans alone and trade nothing
            from gaplanner.search.distributed import solve_islands  # Ray stays optional

            return solve_islands(
                problem, ga_settings, workers=workers, ray_address=hooks.ray_address, on_progress=report,
                should_stop=stop, deadline=deadline,
            )  # fmt: skip
        return run_ga(
            problem, ga_settings, seed_offsets=seeds, on_progress=report, should_stop=stop, exchange=exchange,
            deadline=deadline, plans=plans,
        )  # fmt: skip

    hooks_ = (hooks.on_progress, hooks.should_stop)
    return ga_with_exact(
        problem, settings, genetic, *hooks_, side_by_side=not on_ray, deadline=hooks.deadline
    )


def _ga_time_limit(settings: GASettings | None) -> float | None:
    """The time limit the GA's exact probes share (None: no merging, the GA plans the blocks as given)."""
    if settings is None or settings.time_limit is None or settings.exact_share == 0:
        return None
    return settings.time_limit


_ga_arena_merged = _merged(_ga_arena, _ga_time_limit)


def _ga(problem: Problem, settings: GASettings | None, hooks: Hooks) -> Plan:
    if problem.memories is None:
        return _ga_arena_merged(problem, settings, hooks)
    if hooks.workers != 1:  # one search per worker, on Ray when it pays off
        from gaplanner.search.distributed.memories import solve_memories_on_workers  # Ray stays optional

        return solve_memories_on_workers(
            problem,
            settings,
            workers=hooks.workers,
            ray_address=hooks.ray_address,
            on_progress=hooks.on_progress,
            should_stop=hooks.should_stop,
            deadline=hooks.deadline,
        )
    progress, stop = hooks.on_progress, hooks.should_stop
    return memory_ga(problem, settings, on_progress=progress, should_stop=stop, deadline=hooks.deadline)


def _exact(problem: Problem, settings: ExactSettings | None, hooks: Hooks) -> Plan:
    return exact_search(
        problem,
        settings,
        on_progress=hooks.on_progress,
        should_stop=hooks.should_stop,
        deadline=hooks.deadline,
    )


def _first_fit(problem: Problem, settings: None, hooks: Hooks) -> Plan:
    if problem.memories is not None:
        return plan_order(problem, problem.start_order(), "first-fit")
    return first_fit(problem)


def _spill_greedy(problem: Problem, settings: None, hooks: Hooks) -> Plan:
    return spill_greedy_arena(problem) if problem.memories is None else spill_greedy(problem)


#: Every algorithm, in the order the CLI and ``compare`` list them; ``ga`` is the default.
ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("ga", _ga, GASettings, Capabilities(memories=True, workers=True)),
        Algorithm("first-fit", _first_fit, capabilities=Capabilities(memories=True), baseline=True),
        Algorithm(
            "best-fit-coalescing",
            lambda problem, settings, hooks: best_fit_coalescing(problem),
            capabilities=Capabilities(pinned_blocks=False),
            baseline=True,
        ),
        Algorithm("greedy-size", lambda problem, settings, hooks: greedy_size(problem), baseline=True),
        Algorithm(
            "random-search",
            lambda problem, settings, hooks: random_search(problem, settings, hooks.deadline),
            RandomSearchSettings,
        ),
        Algorithm("exact", _merged(_exact, lambda s: (s or ExactSettings()).time_limit), ExactSettings),
        Algorithm("spill-greedy", _spill_greedy, capabilities=Capabilities(memories=True)),
    )
}
