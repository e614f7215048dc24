"""One entry point for every planner: ``solve(problem, algorithm, settings)``.

The CLI, the REST service and the experiment runner call this and nothing
below it, in the spirit of pymoo's ``minimize(problem, algorithm, termination)``.
Algorithms are found by name in :data:`ALGORITHMS`; each takes its own
settings class (:class:`GASettings`, :class:`RandomSearchSettings`) or none
(the baselines), and refuses any other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from gaplanner.errors import InputError
from gaplanner.plans.memory_plan import MemoryPlan
from gaplanner.plans.plan import Plan
from gaplanner.problem.problem import Problem
from gaplanner.search.baselines import BASELINES
from gaplanner.search.exact.search import ExactSettings, exact_search
from gaplanner.search.exact.shared_lifetimes import Merged, merged_for_exact_search
from gaplanner.search.ga import Exchange, GASettings, ProgressCallback, StopCheck, run_ga
from gaplanner.search.random_search import RandomSearchSettings, random_search
from gaplanner.search.side_by_side import ga_with_exact

#: Every algorithm name ``solve`` accepts; ``ga`` is the default.
ALGORITHMS: tuple[str, ...] = ("ga", *BASELINES, "random-search", "exact", "spill-greedy")

#: The settings class of each algorithm that takes settings; the others take none.
SETTINGS: dict[str, type] = {
    "ga": GASettings,
    "random-search": RandomSearchSettings,
    "exact": ExactSettings,
}


def check_settings(algorithm: str, settings: object | None = None, names: Iterable[str] = ()) -> None:
    """Refuse an unknown algorithm, and settings the algorithm does not use, naming them.

    ``settings``: a settings object, which must be the algorithm's own class
    (the Python API). ``names``: settings a user gave by name (the CLI's
    flags), each of which must be a field of that class: ``--seed`` given to
    first-fit is refused, never silently ignored.
    """
    if algorithm not in ALGORITHMS:
        raise InputError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}", "algorithm")
    expected = SETTINGS.get(algorithm)
    for name in names:
        if expected is None or name not in {f.name for f in fields(expected)}:
            users = [a for a, kind in SETTINGS.items() if name in {f.name for f in fields(kind)}]
            takers = (
                f"only {', '.join(users)} {'does' if len(users) == 1 else 'do'}" if users else "none does"
            )
            raise InputError(f"{algorithm} does not use this setting ({takers})", name)
    if settings is None:
        return
    if expected is None:
        raise InputError(
            f"{algorithm} takes no settings, got {type(settings).__name__}; pass None", "settings"
        )
    if not isinstance(settings, expected):
        raise InputError(f"{algorithm} takes {expected.__name__}, not {type(settings).__name__}", "settings")


def settings_for(algorithm: str, options: Mapping[str, Any], *, refuse_unused: bool = False) -> Any:
    """The settings of ``algorithm`` from ``options``, taking the keys its settings class has.

    For front ends whose one set of options serves every algorithm (the
    service's options, with their defaults): keys the algorithm does not use
    are left out, and an algorithm without settings gets None. With
    ``refuse_unused`` (the CLI, whose ``options`` are what the user gave) such
    a key is refused instead, by :func:`check_settings`. The settings' own
    checks apply.
    """
    check_settings(algorithm, None, options if refuse_unused else ())
    kind = SETTINGS.get(algorithm)
    if kind is None:
        return None
    names = {f.name for f in fields(kind)}
    return kind(**{key: value for key, value in options.items() if key in names})


def solve(
    problem: Problem,
    algorithm: str = "ga",
    settings: GASettings | RandomSearchSettings | ExactSettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    workers: int | None = 1,
    ray_address: str | None = None,
) -> Plan | MemoryPlan:
    """A verified plan for ``problem`` from the named algorithm (one of :data:`ALGORITHMS`).

    A problem with memories gets a :class:`MemoryPlan`, see
    :mod:`gaplanner.search.memories.search`.

    ``settings``: the algorithm's settings object (None: its defaults); an
    algorithm refuses settings of another. ``on_progress`` / ``should_stop``
    see and stop the GA between generations. ``workers`` > 1 (``None``: this
    machine's cores) runs the GA as at least that many islands, on Ray workers
    when that pays off (``ray_address`` or ``RAY_ADDRESS`` names a cluster),
    see :mod:`gaplanner.search.distributed`.
    """
    check_settings(algorithm, settings)
    if problem.memories is not None or algorithm == "spill-greedy":
        from gaplanner.search.memories.search import solve_memories, spill_greedy_arena

        if problem.memories is None:
            return spill_greedy_arena(problem)
        if algorithm == "ga" and workers != 1:  # one search per worker, on Ray when it pays off
            from gaplanner.search.distributed.memories import solve_memories_on_workers  # Ray stays optional

            return solve_memories_on_workers(
                problem,
                settings,
                workers=workers,
                ray_address=ray_address,
                should_stop=should_stop,  # type: ignore[arg-type]
            )
        return solve_memories(problem, algorithm, settings, should_stop=should_stop)  # type: ignore[arg-type]
    if algorithm in ("ga", "exact"):
        started = time.perf_counter()
        merged = _merged_for_exact_search(problem, algorithm, settings)  # type: ignore[arg-type]
        if merged is not None:
            left = _time_left(settings or ExactSettings(), started)  # merging counts against the limit
            plan = solve(merged.problem, algorithm, left, on_progress=on_progress,
                         should_stop=should_stop, workers=workers, ray_address=ray_address)  # fmt: skip
            return merged.original_plan(problem, plan, started)  # type: ignore[arg-type]
    if algorithm == "ga":
        on_ray = _islands_on_ray(problem, settings, workers, ray_address)  # type: ignore[arg-type]
        if workers != 1 and not on_ray:  # the islands in this process, with the exact probes beside them
            ga = settings or GASettings()
            settings = replace(ga, islands=max(ga.islands, workers or os.cpu_count() or 1))

        def genetic(
            ga_settings: GASettings | None, seeds: Sequence[np.ndarray], report: ProgressCallback | None,
            exchange: Exchange | None, stop: StopCheck | None,
        ) -> Plan:  # fmt: skip
            if on_ray:  # the islands on Ray start from the baselines' plans alone and trade nothing
                from gaplanner.search.distributed import solve_islands  # Ray stays optional

                return solve_islands(
                    problem, ga_settings, workers=workers, ray_address=ray_address, on_progress=report,
                    should_stop=stop,
                )  # fmt: skip
            hooks = {"on_progress": report, "should_stop": stop, "exchange": exchange}
            return run_ga(problem, ga_settings, seed_offsets=seeds, **hooks)

        hooks = {"on_progress": on_progress, "should_stop": should_stop, "side_by_side": not on_ray}
        return ga_with_exact(problem, settings, genetic, **hooks)  # type: ignore[arg-type]
    if algorithm == "exact":
        hooks = {"on_progress": on_progress, "should_stop": should_stop}
        return exact_search(problem, settings, **hooks)  # type: ignore[arg-type]
    if algorithm == "random-search":
        return random_search(problem, settings)  # type: ignore[arg-type]
    return BASELINES[algorithm](problem)


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


def _merged_for_exact_search(
    problem: Problem, algorithm: str, settings: GASettings | ExactSettings | None
) -> Merged | None:
    """Blocks of one lifetime merged, where that lets the exact search take a problem too large for it
    (see :mod:`gaplanner.search.exact.shared_lifetimes`); not for the GA alone, which plans the blocks as
    given."""
    if algorithm == "exact":
        return merged_for_exact_search(problem, (settings or ExactSettings()).time_limit)
    if settings is None or settings.time_limit is None or settings.exact_share == 0:
        return None
    return merged_for_exact_search(problem, settings.time_limit)


def _time_left(settings: GASettings | ExactSettings, started: float) -> GASettings | ExactSettings:
    """``settings`` with what is left of their time limit since ``started`` (a little at least)."""
    limit = settings.time_limit or 0.0
    return replace(settings, time_limit=max(limit - (time.perf_counter() - started), 0.1 * limit))


@dataclass(frozen=True)
class ComparisonRow:
    """One algorithm's result in :func:`compare`."""

    algorithm: str
    peak: int
    ratio: float
    seconds: float
    optimal: bool


def compare(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
) -> list[ComparisonRow]:
    """Every baseline, then the GA (with ``settings``), on one problem."""
    if problem.memories is not None:
        raise InputError("compare plans one arena; plan an input with memories with 'plan'", "memories")
    rows = []
    usable = [name for name in BASELINES if not (problem.has_pinned and name == "best-fit-coalescing")]
    for algorithm in (*usable, "ga"):
        started = time.perf_counter()
        plan = solve(
            problem,
            algorithm,
            settings if algorithm == "ga" else None,
            on_progress=on_progress,
            should_stop=should_stop,
        )
        rows.append(
            ComparisonRow(algorithm, plan.peak, plan.ratio, time.perf_counter() - started, plan.optimal)
        )
    return rows
