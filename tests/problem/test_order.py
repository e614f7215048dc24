"""Happens-before vectors give exactly the conflict pairs of each multi-core model's own definition."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.problem import order
from gaplanner.problem.order import OrderIndex, greatest_conflicting, order_degrees, order_pairs
from gaplanner.problem.problem import Problem, build_problem
from tests.search.test_order_decoder import clock_problems
from tests.strategies import SETTINGS, graph_documents


def _edges(indptr: np.ndarray, indices: np.ndarray) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return {(int(a), int(b)) for a, b in zip(rows, indices, strict=True) if a < b}


def _agree(problem: Problem) -> None:
    assert problem.happens_before is not None
    index = OrderIndex.of(problem.happens_before)
    indptr, indices = order_pairs(index)
    assert _edges(indptr, indices) == set(zip(*(e.tolist() for e in problem.conflicts.edges()), strict=True))
    assert np.array_equal(order_degrees(index), problem.conflicts.degrees())
    assert all(np.all(np.diff(indices[indptr[b] : indptr[b + 1]]) > 0) for b in range(problem.n))
    values = np.arange(problem.n, dtype=np.int64) * 3 % 7
    floor = np.full(problem.n, -1, np.int64)
    expected = [
        max([int(values[j]) for j in problem.conflicts.neighbors(b)], default=-1) for b in range(problem.n)
    ]
    assert greatest_conflicting(index.arrays(), values, floor).tolist() == expected


@SETTINGS
@given(clock_problems())
def test_clock_vectors_give_the_clock_conflicts(problem: Problem) -> None:
    _agree(problem)


@SETTINGS
@given(graph_documents(max_ops=9))
def test_graph_vectors_give_the_partial_orders_conflicts(doc) -> None:
    problem = build_problem(doc)
    if problem.happens_before is not None:
        _agree(problem)


@SETTINGS
@given(clock_problems(max_buffers=12), st.integers(1, 3))
def test_points_past_the_chain_limit_are_scanned_whole(problem: Problem, chains: int) -> None:
    old = order.MAX_CHAINS
    order.MAX_CHAINS = chains  # few chains: most points land in the leftover group
    try:
        _agree(problem)
    finally:
        order.MAX_CHAINS = old
