"""The order search: a valid order, the certificate's numbers in order, repeatable for a seed."""

from __future__ import annotations

from hypothesis import given

from gaplanner.documents.schema import parse_document
from gaplanner.schedule import ScheduleSettings, search_schedule
from tests.schedule.graphs import graph_documents
from tests.schedule.oracle import best_order_bound, order_bound, topological_orders
from tests.strategies import SETTINGS

SMALL = ScheduleSettings(evaluations=2000, time_limit=30)


def fan_out(width: int = 4) -> dict:
    """Each branch makes a big tensor then shrinks it; branch by branch beats all big tensors at once."""
    tensors = [{"id": "x", "size": 1}] + [
        {"id": f"{kind}{i}", "size": size} for i in range(width) for kind, size in (("big", 10), ("small", 1))
    ]
    operators = [{"id": f"grow{i}", "inputs": ["x"], "outputs": [f"big{i}"]} for i in range(width)]
    operators += [{"id": f"shrink{i}", "inputs": [f"big{i}"], "outputs": [f"small{i}"]} for i in range(width)]
    tensors.append({"id": "y", "size": 1})
    operators.append({"id": "join", "inputs": [f"small{i}" for i in range(width)], "outputs": ["y"]})
    return {"tensors": tensors, "operators": operators}


def test_the_search_finds_the_branch_by_branch_order() -> None:
    doc = parse_document(fan_out())
    result = search_schedule(doc, settings=SMALL)
    assert result.given_bound == 41  # every big tensor at once, and x
    assert result.chosen_bound == order_bound(doc, result.order) == 14 == best_order_bound(doc)
    assert result.order_free_bound <= result.chosen_bound
    assert result.baselines["given"] == 41


@SETTINGS
@given(graph_documents(max_ops=7))
def test_the_chosen_order_is_valid_and_never_worse_than_a_baseline(doc) -> None:
    result = search_schedule(doc, settings=SMALL)
    assert result.order in {tuple(o) for o in topological_orders(doc)}
    assert result.chosen_bound == order_bound(doc, result.order)
    assert result.chosen_bound <= min(result.baselines.values())
    assert result.order_free_bound <= best_order_bound(doc) <= result.chosen_bound
    assert not result.optimal or result.chosen_bound == best_order_bound(doc)


def test_the_search_is_repeatable_for_a_seed() -> None:
    doc = parse_document(fan_out(6))
    first, second = (search_schedule(doc, settings=SMALL) for _ in range(2))
    assert first.order == second.order and first.evaluations == second.evaluations
