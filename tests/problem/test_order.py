"""Happens-before vectors give exactly the conflict pairs of each multi-core model's own definition."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.problem import order
from gaplanner.problem.bounds import max_load
from gaplanner.problem.order import OrderIndex, greatest_conflicting, order_degrees, order_pairs
from gaplanner.problem.problem import Problem, build_problem
from tests.oracles import graph_conflicts
from tests.strategies import SETTINGS, clock_problems, graph_documents


def _edges(indptr: np.ndarray, indices: np.ndarray) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return {(int(a), int(b)) for a, b in zip(rows, indices, strict=True) if a < b}


def _agree(problem: Problem, expected: set[tuple[int, int]]) -> None:
    """The vectors' pairs, degrees and greatest-neighbour values are those of the ``expected`` pairs."""
    assert problem.happens_before is not None
    index = OrderIndex.of(problem.happens_before)
    indptr, indices = order_pairs(index)
    assert _edges(indptr, indices) == expected
    degrees = np.zeros(problem.n, np.int64)
    for a, b in expected:
        degrees[[a, b]] += 1
    assert np.array_equal(order_degrees(index), degrees)
    assert all(np.all(np.diff(indices[indptr[b] : indptr[b + 1]]) > 0) for b in range(problem.n))
    values = np.arange(problem.n, dtype=np.int64) * 3 % 7
    greatest = [
        max([int(values[a + b - c]) for a, b in expected if c in (a, b)], default=-1)
        for c in range(problem.n)
    ]
    counted, found = greatest_conflicting(index.arrays(), values, np.full(problem.n, -1, np.int64))
    assert found.tolist() == greatest and np.array_equal(counted, degrees)


def _clock_pairs(problem: Problem) -> set[tuple[int, int]]:
    """The definition: neither buffer ends, in every component, at or before the other starts."""
    assert problem.clocks is not None
    lower, upper = problem.clocks.lower, problem.clocks.upper
    return {
        (a, b)
        for a, b in itertools.combinations(range(problem.n), 2)
        if not (upper[a] <= lower[b]).all() and not (upper[b] <= lower[a]).all()
    }


@SETTINGS
@given(clock_problems())
def test_clock_vectors_give_the_clock_conflicts(problem: Problem) -> None:
    _agree(problem, _clock_pairs(problem))


@SETTINGS
@given(graph_documents(max_ops=9))
def test_graph_vectors_give_the_partial_orders_conflicts(doc) -> None:
    problem = build_problem(doc)
    if problem.happens_before is not None:
        index = {bid: i for i, bid in enumerate(problem.ids)}
        pairs = {tuple(sorted(index[x] for x in pair)) for pair in graph_conflicts(doc)}
        _agree(problem, pairs)  # type: ignore[arg-type]


@SETTINGS
@given(clock_problems(max_buffers=12), st.integers(1, 3))
def test_points_past_the_chain_limit_are_scanned_whole(problem: Problem, chains: int) -> None:
    old = order.MAX_CHAINS
    order.MAX_CHAINS = chains  # few chains: most points land in the leftover group
    try:
        _agree(problem, _clock_pairs(problem))
    finally:
        order.MAX_CHAINS = old


def test_a_problem_too_large_for_its_pairs_is_bounded_and_checked_without_them(monkeypatch) -> None:
    import gaplanner.problem.problem as problem_module

    rng = np.random.default_rng(3)
    lower = rng.integers(0, 40, (300, 3))
    upper = lower + rng.integers(0, 6, (300, 3)) + np.eye(3, dtype=np.int64)[rng.integers(0, 3, 300)]
    sizes = rng.integers(1, 50, 300)
    monkeypatch.setattr(problem_module, "PAIR_ENTRIES_LIMIT", 0)
    large = problem_module.problem_from_clocks(sizes, lower, upper)
    assert not large.conflicts.built
    assert large.lower_bound == max_load(lower.sum(axis=1), upper.sum(axis=1), sizes)
    monkeypatch.undo()
    small = problem_module.problem_from_clocks(sizes, lower, upper)
    assert small.conflicts.built and small.lower_bound >= large.lower_bound
    assert np.array_equal(small.reuse_at, large.reuse_at)
