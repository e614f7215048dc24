"""The order-free bound never exceeds the best order, found by trying every order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.documents.rules import Rules
from gaplanner.schedule.bounds import surely_live
from gaplanner.schedule.cuts import cut_bound
from gaplanner.schedule.dag import build_dag, topological_order
from gaplanner.schedule.exact import solve_parts
from gaplanner.schedule.memory import build_blocks
from tests.schedule.graphs import graph_documents
from tests.schedule.oracle import best_order_bound, order_bound
from tests.strategies import SETTINGS


@SETTINGS
@given(graph_documents(max_ops=8))
def test_order_free_bound_is_below_every_order(doc) -> None:
    dag = build_dag(doc)
    bound = surely_live(dag, build_blocks(doc), topological_order(dag)).bound
    assert bound <= best_order_bound(doc)


@SETTINGS
@given(graph_documents(max_ops=7))
def test_order_free_bound_without_inplace(doc) -> None:
    rules = Rules(inplace="never")
    dag = build_dag(doc)
    bound = surely_live(dag, build_blocks(doc, rules), topological_order(dag)).bound
    assert bound <= best_order_bound(doc, rules)


def test_a_chain_bound_is_exact() -> None:
    """In a chain every operator is a cut: the bound is the one order's bound."""
    from gaplanner.documents.schema import parse_document

    doc = parse_document(
        {
            "tensors": [{"id": t, "size": s} for t, s in [("x", 4), ("a", 3), ("b", 5)]],
            "operators": [
                {"id": "f", "inputs": ["x"], "outputs": ["a"]},
                {"id": "g", "inputs": ["a"], "outputs": ["b"]},
            ],
        }
    )
    dag = build_dag(doc)
    live = surely_live(dag, build_blocks(doc), topological_order(dag))
    assert live.bound == 8 and live.cut.all()


def test_a_graph_input_read_late_and_a_kept_output_are_surely_live_throughout() -> None:
    """The input ``x`` is live from the first operator to its reader, the output ``y`` from its writer to
    the end: both count at every operator between, so the bound is the one order's peak."""
    from gaplanner.documents.schema import parse_document

    doc = parse_document(
        {
            "tensors": [{"id": t, "size": s} for t, s in [("x", 10), ("t", 5), ("y", 2), ("z", 1)]],
            "inputs": ["x"],
            "outputs": ["y", "z"],
            "operators": [
                {"id": "f", "inputs": [], "outputs": ["y"]},
                {"id": "g", "inputs": ["y"], "outputs": ["t"]},
                {"id": "h", "inputs": ["t", "x"], "outputs": ["z"]},
            ],
        }
    )
    dag = build_dag(doc)
    live = surely_live(dag, build_blocks(doc), topological_order(dag))
    assert live.load.tolist() == [12, 17, 18] and live.bound == 18 == order_bound(doc, ["f", "g", "h"])


@pytest.mark.slow
@SETTINGS
@given(graph_documents(max_ops=8), st.sampled_from(["auto", "never"]))
def test_exact_parts_equal_the_best_order(doc, inplace) -> None:
    """Split at the cuts and solved part by part, the bound is the best order's, and so is the order's."""
    rules = Rules(inplace=inplace)
    dag = build_dag(doc)
    blocks = build_blocks(doc, rules)
    given_order = topological_order(dag)
    parts = solve_parts(dag, blocks, given_order, surely_live(dag, blocks, given_order))
    assert parts.exact
    best = best_order_bound(doc, rules)
    assert parts.bound == best
    assert order_bound(doc, [dag.ids[k] for k in parts.order], rules) == best


@SETTINGS
@given(graph_documents(max_ops=8), st.integers(0, 1))
def test_parts_past_the_state_budget_keep_the_reachability_bound(doc, states) -> None:
    """A budget below a part's two sets (``exact_states`` 0 is allowed) solves none: each keeps its bound."""
    dag = build_dag(doc)
    blocks = build_blocks(doc)
    given_order = topological_order(dag)
    live = surely_live(dag, blocks, given_order)
    parts = solve_parts(dag, blocks, given_order, live, state_limit=states)
    assert parts.solved == 0 and (parts.order == given_order).all()
    assert parts.bound == max(int(live.load.max()), blocks.kept_bytes, blocks.pinned_top)


@SETTINGS
@given(graph_documents(max_ops=8), st.sampled_from(["auto", "never"]))
def test_the_cut_bound_is_below_every_order(doc, inplace) -> None:
    rules = Rules(inplace=inplace)
    dag = build_dag(doc)
    blocks = build_blocks(doc, rules)
    assert cut_bound(dag, blocks, np.arange(dag.n), seconds=60) <= best_order_bound(doc, rules)


def test_the_cut_bound_sees_a_tensor_recomputed_early_or_late() -> None:
    """x or its copy y is live while g runs, whichever order: reachability alone misses it."""
    from gaplanner.documents.schema import parse_document

    doc = parse_document(
        {
            "tensors": [{"id": t, "size": s} for t, s in [("x", 8), ("y", 8), ("a", 1), ("b", 1), ("z", 1)]],
            "operators": [
                {"id": "f", "inputs": [], "outputs": ["x", "a"]},
                {"id": "copy", "inputs": ["x"], "outputs": ["y"]},
                {"id": "g", "inputs": ["a"], "outputs": ["b"]},
                {"id": "h", "inputs": ["b", "y"], "outputs": ["z"]},
            ],
        }
    )
    dag = build_dag(doc)
    blocks = build_blocks(doc)
    g = dag.ids.index("g")
    assert surely_live(dag, blocks, topological_order(dag)).load[g] == 2
    assert cut_bound(dag, blocks, np.array([g]), seconds=60) == 10 <= best_order_bound(doc)


def test_the_cut_bound_sees_a_chain_of_free_operators() -> None:
    """x becomes y then z by operators free to run before or after g; one of the three is live at g."""
    from gaplanner.documents.schema import parse_document

    doc = parse_document(
        {
            "tensors": [
                {"id": t, "size": s} for t, s in [("x", 8), ("y", 8), ("z", 8), ("a", 1), ("b", 1), ("w", 1)]
            ],
            "operators": [
                {"id": "f", "inputs": [], "outputs": ["x", "a"]},
                {"id": "t1", "inputs": ["x"], "outputs": ["y"]},
                {"id": "t2", "inputs": ["y"], "outputs": ["z"]},
                {"id": "g", "inputs": ["a"], "outputs": ["b"]},
                {"id": "h", "inputs": ["b", "z"], "outputs": ["w"]},
            ],
        }
    )
    dag = build_dag(doc)
    blocks = build_blocks(doc)
    g = dag.ids.index("g")
    assert cut_bound(dag, blocks, np.array([g]), seconds=60) == 10 <= best_order_bound(doc)


def test_an_inplace_write_over_a_tensor_read_later_saves_nothing() -> None:
    """g may write y over x only where x dies; h reads x after g in every order."""
    from gaplanner.documents.schema import parse_document

    doc = parse_document(
        {
            "tensors": [{"id": t, "size": s} for t, s in [("x", 8), ("y", 8), ("z", 1)]],
            "operators": [
                {"id": "f", "inputs": [], "outputs": ["x"]},
                {"id": "g", "inputs": ["x"], "outputs": ["y"], "inplace": {"y": "x"}},
                {"id": "h", "inputs": ["x", "y"], "outputs": ["z"]},
            ],
        }
    )
    dag = build_dag(doc)
    blocks = build_blocks(doc)
    assert cut_bound(dag, blocks, np.array([dag.ids.index("g")]), seconds=60) == 16
