"""Conflicts: exactly the pairs of blocks that must not share memory, by interval overlap or by the
happens-before definition, against brute-force references."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from gaplanner import build_problem, load_problem
from gaplanner.problem.conflicts import conflicts_from_intervals
from tests.oracles import conflict_pairs, graph_conflicts
from tests.strategies import SETTINGS, graph_documents, interval_problems


@SETTINGS
@given(interval_problems(max_blocks=12))
def test_interval_conflicts_are_exactly_the_overlapping_pairs(problem) -> None:
    expected = {
        frozenset((problem.ids[i], problem.ids[j]))
        for i in range(problem.n)
        for j in range(i + 1, problem.n)
        if problem.lower[i] < problem.upper[j] and problem.lower[j] < problem.upper[i]
    }
    assert conflict_pairs(problem) == expected


@SETTINGS
@given(graph_documents())
def test_graph_conflicts_follow_the_happens_before_definition(doc) -> None:
    problem = build_problem(doc)
    assert conflict_pairs(problem) == graph_conflicts(doc)


@SETTINGS
@given(graph_documents())
def test_conflicting_blocks_overlap_on_their_reuse_intervals(doc) -> None:
    """The time walk of best-fit-coalescing is only safe if this holds."""
    problem = build_problem(doc)
    index = {bid: i for i, bid in enumerate(problem.ids)}
    for pair in conflict_pairs(problem):
        a, b = (index[x] for x in pair)
        assert problem.lower[a] < problem.reuse_at[b] and problem.lower[b] < problem.reuse_at[a]


def test_a_large_interval_graph_matches_the_pairwise_definition() -> None:
    """Degrees, edge list and edge count of 400 random lifetimes against the quadratic definition."""
    rng = np.random.default_rng(0)
    lower = rng.integers(0, 2_000, 400)
    upper = lower + rng.integers(1, 60, 400)
    graph = conflicts_from_intervals(lower, upper)
    overlap = (lower[:, None] < upper[None, :]) & (lower[None, :] < upper[:, None])
    np.fill_diagonal(overlap, False)
    assert graph.degrees().tolist() == overlap.sum(axis=1).tolist()
    a, b = graph.edges()
    assert sorted(zip(a.tolist(), b.tolist(), strict=True)) == sorted(
        zip(*np.nonzero(np.triu(overlap)), strict=True)
    )
    assert graph.edge_count == int(np.triu(overlap).sum())
    for i in (0, 17, 399):
        assert sorted(graph.neighbors(i).tolist()) == np.flatnonzero(overlap[i]).tolist()


def test_the_worked_example_s_conflicts() -> None:
    """Six operators in a queue: each output conflicts with the outputs live at the same time."""
    problem = load_problem("example:seed000_queue")
    expected = {("out0", "out1"), ("out0", "out2"), ("out1", "out2"), ("out1", "out3"), ("out1", "out4"),
                ("out2", "out3"), ("out3", "out4"), ("out4", "out5")}  # fmt: skip
    assert conflict_pairs(problem) == {frozenset(pair) for pair in expected}
