"""Plans for a chosen order: the document reordered, its blocks planned, schedule and certificate attached.

``schedule`` names where the order comes from: ``fixed`` (the document's own,
the default), ``search`` (:func:`~gaplanner.schedule.search_schedule`), or a
list of operator ids. The layout search then runs on the reordered document,
whose lifetimes, views and in-place chances follow the new order (the
planner's rules, recomputed from it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document
from gaplanner.errors import InputError
from gaplanner.plans.plan import Plan
from gaplanner.problem.pools import read_pool_document
from gaplanner.problem.problem import Problem, build_problem
from gaplanner.schedule.apply import apply_schedule
from gaplanner.schedule.choose import ScheduleResult, ScheduleSettings, search_schedule
from gaplanner.schedule.interleave import scheduled_pool
from gaplanner.solve import solve

#: The named schedules; any other value is an order of operator ids.
SCHEDULES: tuple[str, ...] = ("fixed", "search")

Schedule = str | Sequence[str]


def scheduled_problem(
    document: Document,
    schedule: Schedule = "fixed",
    rules: Rules | None = None,
    settings: ScheduleSettings | None = None,
    name: str | None = None,
) -> tuple[Problem, ScheduleResult | None]:
    """The problem of ``document`` run in the order ``schedule`` names, and the search's result if any."""
    if isinstance(schedule, str) and schedule not in SCHEDULES:
        raise InputError(
            f"must be {' or '.join(SCHEDULES)}, or a list of operator ids; got {schedule!r}", "schedule"
        )
    if schedule == "fixed":
        return build_problem(document, name, rules), None
    if document.memories is not None:
        raise InputError("an order is planned in one arena; this document has memories", "schedule")
    result = None
    if schedule == "search":
        result = search_schedule(document, rules, settings)
        order: Sequence[str] = result.order
    else:
        order = list(schedule)
    reordered = apply_schedule(document, order)
    return build_problem(reordered, name or document.name, rules), result


def with_schedule(plan: Plan, problem: Problem, result: ScheduleResult | None) -> Plan:
    """``plan`` carrying the order its problem runs the operators in and, if searched, the certificate."""
    if plan.memory_of is not None or problem.document is None:
        raise InputError("an order is planned in one arena", "schedule")
    order = tuple(op.id for op in problem.document.operators or [])
    return replace(plan, schedule=order, certificate=result)


def plan_document(
    document: Document,
    algorithm: str = "ga",
    settings: Any = None,
    *,
    schedule: Schedule = "fixed",
    schedule_settings: ScheduleSettings | None = None,
    rules: Rules | None = None,
    **solve_options: Any,
) -> Plan:
    """Plan a graph document with the operator order ``schedule`` names (see :mod:`gaplanner.schedule`).

    ``settings`` and ``solve_options`` go to :func:`gaplanner.solve` for the layout.
    """
    began = time.perf_counter()
    problem, result = scheduled_problem(document, schedule, rules, schedule_settings)
    plan = solve(problem, algorithm, settings, **solve_options)
    if schedule == "fixed":
        return plan
    return replace(with_schedule(plan, problem, result), elapsed=time.perf_counter() - began)


def plan_pool_document(
    data: dict[str, Any],
    algorithm: str = "ga",
    settings: Any = None,
    *,
    schedule: Schedule = "fixed",
    schedule_settings: ScheduleSettings | None = None,
    rules: Rules | None = None,
    **solve_options: Any,
) -> Plan:
    """Plan a pool document (``{"models": [...], ...}``) in the interleaving ``schedule`` names.

    ``fixed``: the document's own ``schedule``; ``search``: the interleaving of
    its models (``together: interleaved``) with the lowest bound found, the plan
    carrying it as ``schedule`` (``MODEL/operator`` ids, as a user gives one)
    and the certificate; a list of ids: that interleaving
    (:mod:`gaplanner.schedule.interleave`).
    """
    began = time.perf_counter()
    pool, models = read_pool_document(data)
    problem, result = scheduled_pool(pool, models, schedule, rules, schedule_settings)
    plan = solve(problem, algorithm, settings, **solve_options)
    if result is None:
        return plan
    return replace(with_interleaving(plan, result), elapsed=time.perf_counter() - began)


def with_interleaving(plan: Plan, result: ScheduleResult) -> Plan:
    """A pool's plan carrying its searched interleaving (``MODEL/operator`` ids) and certificate."""
    if plan.memory_of is not None:
        raise InputError("an order is planned in one arena", "schedule")
    return replace(plan, schedule=result.order, certificate=result)
