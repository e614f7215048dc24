"""Dependencies: cycles and orders that break them are refused in one line naming the operator."""

from __future__ import annotations

import pytest

from gaplanner.documents.schema import parse_document
from gaplanner.errors import InputError
from gaplanner.schedule import apply_schedule, search_schedule
from gaplanner.schedule.dag import build_dag


def diamond(**extra: object) -> dict:
    return {
        "tensors": [{"id": t, "size": 4} for t in ("x", "a", "b", "c")],
        "operators": [
            {"id": "f", "inputs": ["x"], "outputs": ["a"]},
            {"id": "g", "inputs": ["a"], "outputs": ["b"]},
            {"id": "h", "inputs": ["a"], "outputs": ["c"]},
        ],
        **extra,
    }


def test_edges_come_from_data_and_after() -> None:
    data = diamond()
    data["operators"][1]["after"] = ["h"]
    dag = build_dag(parse_document(data))
    assert sorted(dag.successors(0).tolist()) == [1, 2]
    assert dag.predecessors(1).tolist() == [0, 2]


def test_an_after_cycle_names_an_operator_on_it() -> None:
    data = diamond()
    data["operators"][0]["after"] = ["g"]
    with pytest.raises(InputError) as caught:
        search_schedule(parse_document(data))
    message = str(caught.value)
    assert "\n" not in message
    assert message == "operators: the dependencies have a cycle through operator 'f': 'f' -> 'g' -> 'f'"


def test_an_order_reading_too_early_names_the_operator_and_the_input() -> None:
    doc = parse_document(diamond())
    with pytest.raises(
        InputError, match=r"schedule\[0\]: operator 'g' reads 'a' before operator 'f' writes it"
    ):
        apply_schedule(doc, ["g", "f", "h"])


def test_an_order_breaking_an_after_edge_names_both_operators() -> None:
    data = diamond()
    data["operators"][2]["after"] = ["g"]
    with pytest.raises(
        InputError, match=r"schedule\[1\]: operator 'h' runs before operator 'g', which it must"
    ):
        apply_schedule(parse_document(data), ["f", "h", "g"])


@pytest.mark.parametrize(
    ("order", "message"),
    [
        (["f", "g"], "schedule: operator 'h' is not in the order"),
        (["f", "g", "g", "h"], r"schedule\[2\]: operator 'g' is listed twice"),
        (["f", "g", "k"], r"schedule\[2\]: no operator 'k' in the document"),
    ],
)
def test_an_order_must_list_every_operator_once(order: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        apply_schedule(parse_document(diamond()), order)


def test_a_document_order_breaking_a_dependency_is_refused_for_search() -> None:
    data = diamond()
    data["operators"] = [data["operators"][1], data["operators"][0], data["operators"][2]]
    with pytest.raises(
        InputError, match=r"operators\[0\]: operator 'g' reads 'a' before operator 'f' writes it"
    ):
        search_schedule(parse_document(data))


def test_apply_schedule_lists_the_operators_in_that_order() -> None:
    doc = apply_schedule(parse_document(diamond()), ["f", "h", "g"])
    assert [op.id for op in doc.operators or []] == ["f", "h", "g"]


def test_an_unknown_after_operator_is_named() -> None:
    from gaplanner.problem.problem import build_problem

    data = diamond()
    data["operators"][1]["after"] = ["nope"]
    with pytest.raises(InputError, match=r"operators\[1\]\.after\[0\]: unknown operator id 'nope'"):
        build_problem(parse_document(data))


def test_a_listed_order_breaking_a_dependency_is_refused_when_fixed() -> None:
    from gaplanner.problem.problem import build_problem

    data = diamond()
    data["operators"] = [data["operators"][1], data["operators"][0], data["operators"][2]]
    with pytest.raises(InputError) as caught:
        build_problem(parse_document(data))
    assert str(caught.value) == "operators[0].inputs[0]: operator 'g' reads 'a' before operator 'f' writes it"


def test_a_fixed_order_names_a_cycle_from_its_first_operator() -> None:
    from gaplanner.problem.problem import build_problem

    data = diamond()
    data["operators"][0]["after"] = ["h"]
    with pytest.raises(InputError) as caught:
        build_problem(parse_document(data))
    message = "operators: the happens-before order has a cycle through operator 'f': 'f' -> 'h' -> 'f'"
    assert str(caught.value) == message
