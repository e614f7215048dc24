"""One entry point for every planner: ``solve(problem, algorithm, settings)``.

The CLI, the REST service and the experiment runner call this and nothing
below it, in the spirit of pymoo's ``minimize(problem, algorithm, termination)``.
Algorithms are found by name in :data:`gaplanner.registry.ALGORITHMS`; each takes
its own settings class (:class:`GASettings`, :class:`RandomSearchSettings`,
:class:`ExactSettings`) or none (the baselines), and refuses any other.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from gaplanner.deadline import Deadline
from gaplanner.errors import InputError
from gaplanner.plans.capacity import FitAnswer, answer_fit, asks_fit, fits_question
from gaplanner.plans.plan import Plan
from gaplanner.problem.problem import Problem
from gaplanner.registry import ALGORITHMS, Hooks, lookup
from gaplanner.search.exact import ExactSettings
from gaplanner.search.ga import GASettings, ProgressCallback, StopCheck
from gaplanner.search.random_search import RandomSearchSettings


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
    kind = lookup(algorithm).settings
    if kind is None:
        return None
    names = _setting_names(kind)
    return kind(**{key: value for key, value in options.items() if key in names})


def _setting_names(kind: type | None) -> set[str]:
    return set() if kind is None else {f.name for f in fields(kind)}


def check_settings(algorithm: str, settings: object | None = None, names: Iterable[str] = ()) -> None:
    """Refuse an unknown algorithm, and settings the algorithm does not use, naming them.

    ``settings``: a settings object, which must be the algorithm's own class
    (the Python API). ``names``: settings a user gave by name (the CLI's
    flags), each of which must be a field of that class: ``--seed`` given to
    first-fit is refused, never silently ignored.
    """
    chosen = lookup(algorithm)
    for name in names:
        if name not in _setting_names(chosen.settings):
            users = [a.name for a in ALGORITHMS.values() if name in _setting_names(a.settings)]
            takers = (
                f"only {', '.join(users)} {'does' if len(users) == 1 else 'do'}" if users else "none does"
            )
            raise InputError(f"{algorithm} does not use this setting ({takers})", name)
    chosen.refuse(None, settings)


def solve(
    problem: Problem,
    algorithm: str = "ga",
    settings: GASettings | RandomSearchSettings | ExactSettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    workers: int | None = 1,
    ray_address: str | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """A verified plan for ``problem`` from the named algorithm (one of :data:`ALGORITHMS`).

    A problem with memories gets a plan whose blocks carry their memory (see
    :class:`Plan` and :mod:`gaplanner.search.memories`).

    ``settings``: the algorithm's settings object (None: its defaults); an
    algorithm refuses settings of another, and a problem it cannot plan (see
    :class:`gaplanner.registry.Capabilities`). ``on_progress`` / ``should_stop``
    see and stop the search between generations. ``workers`` > 1 (``None``:
    this machine's cores) runs an algorithm that can use workers (the GA) as at
    least that many islands, on Ray workers when that pays off (``ray_address``
    or ``RAY_ADDRESS`` names a cluster), see :mod:`gaplanner.search.distributed`;
    the others run in this process. ``deadline``: when the whole run must end (see
    :mod:`gaplanner.deadline`; the command line's counts from its start); by default the settings'
    time limit, counted from after the compiled code is loaded. The GA, the exact search and random
    search spend it on everything they do, their plan's verification included.
    """
    chosen = lookup(algorithm)
    chosen.refuse(problem, settings)
    workers = workers if chosen.capabilities.workers else 1
    return chosen.run(problem, settings, Hooks(on_progress, should_stop, workers, ray_address, deadline))


@dataclass(frozen=True)
class Planned:
    """What planning an input gives: its plan, and for a does-it-fit question the answer."""

    plan: Plan | None
    fit: FitAnswer | None = None

    @property
    def fits(self) -> bool:
        """False only when a does-it-fit question was answered no."""
        return self.fit is None or self.fit.fits

    def to_dict(self) -> dict[str, Any]:
        """The answer's JSON when a question was asked, else the plan's."""
        if self.fit is not None:
            return self.fit.to_dict()
        assert self.plan is not None
        return self.plan.to_dict()


def plan_input(
    problem: Problem,
    algorithm: str = "ga",
    settings: GASettings | RandomSearchSettings | ExactSettings | None = None,
    *,
    capacity: int | None = None,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    workers: int | None = 1,
    ray_address: str | None = None,
    deadline: Deadline | None = None,
) -> Planned:
    """:func:`solve`, or the does-it-fit answer (:mod:`gaplanner.plans.capacity`) when the input asks.

    It asks with a ``capacity`` (``gaplanner plan --capacity``), with one
    memory that has a capacity, or with memories that all have one. The CLI
    and the service both plan through this.
    """
    problem, capacity = fits_question(problem, capacity)
    where = {"workers": workers, "ray_address": ray_address, "deadline": deadline}
    if not asks_fit(problem, capacity):
        plan = solve(problem, algorithm, settings, on_progress=on_progress, should_stop=should_stop, **where)
        return Planned(plan)

    def solve_one(p: Problem, s: Any, **callbacks: Any) -> Plan:
        return solve(p, algorithm, s, **callbacks, **where)

    answer = answer_fit(
        problem, capacity, solve_one, settings, on_progress=on_progress, should_stop=should_stop
    )
    return Planned(answer.plan, answer)


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
    """Every baseline, then the GA (with ``settings``), on one problem.

    Each algorithm has its own deadline: the settings' time limit, counted from its own start (its
    starting plans and verification included), so the comparison as a whole takes up to the sum of
    its rows' times; the baselines take no time limit.
    """
    if problem.memories is not None:
        raise InputError("compare plans one arena; plan an input with memories with 'plan'", "memories")
    rows = []
    usable = [a.name for a in ALGORITHMS.values() if a.baseline and a.can_plan(problem)]
    limit = (settings or GASettings()).time_limit
    for algorithm in (*usable, "ga"):
        started = time.perf_counter()
        plan = solve(
            problem,
            algorithm,
            settings if algorithm == "ga" else None,
            on_progress=on_progress,
            should_stop=should_stop,
            deadline=Deadline(limit, started) if algorithm == "ga" else None,
        )
        rows.append(
            ComparisonRow(algorithm, plan.peak, plan.ratio, time.perf_counter() - started, plan.optimal)
        )
    return rows
