"""The campaign's searched-order cases: small graphs planned with ``schedule="search"``, checked by rule.

For each layout algorithm the plan must name every operator once, in an order
that keeps every dependency (the writer before its readers, each ``after``
edge); its offsets must keep the rules (experiments/oracle.py) for the
document run in that order; and, against the brute-force optimum over every
order of the operators (the oracle's optimum of each order, the least of
them): no peak below it, no order-free bound above it, ``optimal`` only at it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from experiments import oracle

#: Layout algorithms planned on the searched order (the others plan the same order the same way).
LAYOUTS = ("first-fit", "greedy-size", "ga", "exact")
#: The order search's budget: counted in evaluations, so a case replays exactly.
ORDER_SEARCH = {"evaluations": 300, "population": 8, "time_limit": 5.0, "cut_seconds": 0.5}
#: The brute force tries at most this many orders.
MAX_ORDERS = 120


def add_order_edges(doc: dict[str, Any], rng: np.random.Generator) -> None:
    """Now and then an ``after`` edge between two operators (the given order keeps it)."""
    ops = doc["operators"]
    if len(ops) > 2 and rng.random() < 0.4:
        i, j = sorted(int(v) for v in rng.choice(len(ops), 2, replace=False))
        ops[j]["after"] = [ops[i]["id"]]


def _predecessors(doc: dict[str, Any]) -> dict[str, set[str]]:
    """The operators each one must follow: the writers of its inputs and its ``after`` edges."""
    writer = {t: op["id"] for op in doc["operators"] for t in op.get("outputs", [])}
    return {
        op["id"]: {writer[t] for t in op.get("inputs", []) if t in writer} | set(op.get("after", []))
        for op in doc["operators"]
    }


def orders(doc: dict[str, Any]) -> Iterator[list[str]]:
    """Every order of the operators that keeps their dependencies."""
    before = _predecessors(doc)

    def extend(prefix: list[str]) -> Iterator[list[str]]:
        if len(prefix) == len(before):
            yield list(prefix)
        for op in before:
            if op not in prefix and before[op] <= set(prefix):
                yield from extend([*prefix, op])

    yield from extend([])


def broken_dependency(doc: dict[str, Any], schedule: list[str]) -> str | None:
    """Why ``schedule`` is not a valid order of ``doc``'s operators (None: it is)."""
    before = _predecessors(doc)
    if sorted(schedule) != sorted(before):
        return f"schedule {schedule} does not name each of {sorted(before)} once"
    done: set[str] = set()
    for op in schedule:
        if not before[op] <= done:
            return f"{op} runs before {sorted(before[op] - done)}"
        done.add(op)
    return None


def reordered(doc: dict[str, Any], schedule: list[str]) -> dict[str, Any]:
    by_id = {op["id"]: op for op in doc["operators"]}
    return {**doc, "operators": [by_id[op] for op in schedule]}


def best_over_orders(doc: dict[str, Any], rules: dict[str, Any]) -> int | None:
    """The brute-force optimum over every valid order (None: too many orders or blocks to try)."""
    best = None
    for count, order in enumerate(orders(doc)):
        reading = oracle.graph_reading(reordered(doc, order), **rules)
        if count >= MAX_ORDERS or oracle.free_blocks(reading) > 6:
            return None
        peak = oracle.optimum(reading)[0]
        best = peak if best is None else min(best, peak)
    return best


def check_searched_orders(case: dict[str, Any], seed: int, tally: Any, fail: Callable) -> None:
    """Plan the case's graph with a searched order by each layout algorithm and check every plan."""
    from gaplanner.documents.rules import Rules
    from gaplanner.documents.schema import parse_document
    from gaplanner.errors import InputError
    from gaplanner.schedule import ScheduleSettings
    from gaplanner.schedule.planning import plan_document
    from gaplanner.solve import settings_for

    doc, rules = case["document"], case["rules"]
    try:
        document = parse_document(doc)
    except InputError:
        tally.refused += 1
        return
    best = best_over_orders(doc, rules)
    tally.with_optimum += best is not None
    order_settings = ScheduleSettings(**ORDER_SEARCH, seed=seed)
    for algorithm in LAYOUTS:
        options = {"seed": seed} if algorithm != "first-fit" and algorithm != "greedy-size" else {}
        if algorithm == "ga":
            options |= {"generations": 3, "population": 8, "islands": 1, "time_limit": None,
                        "stall_generations": None}  # fmt: skip
        elif algorithm == "exact":
            options = {"time_limit": 0.5}
        try:
            plan = plan_document(document, algorithm, settings_for(algorithm, options), schedule="search",
                                 schedule_settings=order_settings, rules=Rules(**rules))  # fmt: skip
        except InputError:
            tally.refused += 1
            return
        except Exception as exc:  # any other exception is a finding
            tally.crashes += 1
            fail("crash", f"{algorithm}, searched order", f"{type(exc).__name__}: {exc}")
            continue
        tally.plans += 1
        tally.scheduled_plans += 1
        for what, detail in scheduled_findings(doc, rules, plan, best):
            name = {"invalid": "invalid", "false optimal": "false_optimal", "below optimum": "below_optimum",
                    "bound above optimum": "bound_above_optimum"}[what]  # fmt: skip
            setattr(tally, name, getattr(tally, name) + 1)
            fail(what, f"{algorithm}, searched order", detail)


def scheduled_findings(doc: dict[str, Any], rules: dict[str, Any], plan: Any, best: int | None) -> list:
    """What is wrong with a plan of a searched order, given the best peak over every order (None: unknown)."""
    schedule = list(plan.schedule or ())
    if (broken := broken_dependency(doc, schedule)) is not None:
        return [("invalid", broken)]
    reading = oracle.graph_reading(reordered(doc, schedule), **rules)
    found = []
    if (broken := oracle.violation(reading, plan.tensor_offsets(), plan.peak)) is not None:
        found.append(("invalid", f"in the order {schedule}: {broken}"))
    if best is None:
        return found
    order_free = plan.certificate.order_free_bound
    if plan.peak < best:
        found.append(("below optimum", f"peak {plan.peak} < best over every order {best}"))
    if order_free > best:
        found.append(("bound above optimum", f"order-free bound {order_free} > best over every order {best}"))
    if plan.optimal and plan.peak != best:
        found.append(("false optimal", f"claims optimal at {plan.peak}, best over every order {best}"))
    return found
