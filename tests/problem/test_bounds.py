"""Lower bounds: max load and the clique bound against brute force, and never above an optimum."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaplanner import build_problem, load_problem
from gaplanner.problem.bounds import greedy_clique_bound, heaviest_clique, load_profile, max_load
from gaplanner.problem.problem import problem_from_clocks
from tests.oracles import brute_force_peaks, conflict_pairs
from tests.strategies import SETTINGS, graph_documents


def live_bytes(lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray, t: int) -> int:
    return int(sizes[(lower <= t) & (t < upper)].sum())


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(1, 8), st.integers(1, 50)), min_size=1, max_size=15)
)
def test_max_load_and_profile_match_the_bytes_live_at_each_instant(blocks) -> None:
    lower = np.array([b[0] for b in blocks])
    upper = lower + np.array([b[1] for b in blocks])
    sizes = np.array([b[2] for b in blocks])
    every = [live_bytes(lower, upper, sizes, t) for t in range(int(upper.max()) + 1)]
    assert max_load(lower, upper, sizes) == max(every)
    times, load = load_profile(lower, upper, sizes)
    for k, t in enumerate(times):
        end = times[k + 1] if k + 1 < len(times) else t + 1
        assert all(load[k] == every[u] for u in range(int(t), int(end)))


def max_clique_weight(problem) -> int:
    pairs = conflict_pairs(problem)
    best = 0
    for r in range(1, problem.n + 1):
        for group in itertools.combinations(range(problem.n), r):
            ids = [problem.ids[i] for i in group]
            if all(frozenset(p) in pairs for p in itertools.combinations(ids, 2)):
                best = max(best, int(problem.sizes[list(group)].sum()))
    return best


@SETTINGS
@given(graph_documents(max_ops=5))
def test_the_graph_bound_is_a_clique_and_below_the_optimum(doc) -> None:
    problem = build_problem(doc)
    if problem.n > 7:
        return
    assert problem.lower_bound <= max_clique_weight(problem)  # the weight of some clique
    assert problem.lower_bound >= int(problem.sizes.max())  # one block alone is a clique
    best, _ = brute_force_peaks(problem)
    assert problem.lower_bound <= best


def test_known_bounds() -> None:
    assert load_problem("example:seed000_queue").lower_bound == 5120  # out1 + out3 + out4 at step 4
    graph = load_problem("example:multicore_fig1b")
    assert not graph.interval_conflicts and graph.lower_bound == max_clique_weight(graph)


def heaviest_by_enumeration(sizes: np.ndarray, adjacent: np.ndarray) -> int:
    n = len(sizes)
    return max(
        int(sizes[list(group)].sum())
        for r in range(1, n + 1)
        for group in itertools.combinations(range(n), r)
        if all(adjacent[a, b] for a, b in itertools.combinations(group, 2))
    )


@st.composite
def weighted_graphs(draw):
    n = draw(st.integers(1, 10))
    sizes = np.array(draw(st.lists(st.integers(1, 100), min_size=n, max_size=n)), np.int64)
    pairs = list(itertools.combinations(range(n), 2))
    chosen = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    adjacent = np.zeros((n, n), bool)
    for (a, b), edge in zip(pairs, chosen, strict=True):
        adjacent[a, b] = adjacent[b, a] = edge
    indptr = np.r_[0, np.cumsum(adjacent.sum(axis=1))].astype(np.int64)
    return sizes, adjacent, indptr, np.nonzero(adjacent)[1].astype(np.int64)


@SETTINGS
@given(weighted_graphs(), st.integers(1, 60))
def test_heaviest_clique_matches_enumeration_and_a_cut_search_still_returns_a_clique(graph, budget) -> None:
    sizes, adjacent, indptr, indices = graph
    exact = heaviest_by_enumeration(sizes, adjacent)
    assert heaviest_clique(sizes, indptr, indices) == exact
    cut = heaviest_clique(sizes, indptr, indices, budget=budget)  # a few nodes only: some clique's weight
    assert cut <= exact
    cliques = {
        int(sizes[list(group)].sum())
        for r in range(1, len(sizes) + 1)
        for group in itertools.combinations(range(len(sizes)), r)
        if all(adjacent[a, b] for a, b in itertools.combinations(group, 2))
    }
    assert cut in cliques | {0}


def test_a_vector_clock_bound_finds_a_clique_no_instant_holds() -> None:
    """Two threads: the live sets of the clocks' summed axis, even grown greedily, reach 8; the heaviest
    set of pairwise conflicting buffers weighs 9."""
    lower = np.array([[2, 0], [3, 0], [1, 2], [2, 1], [0, 2]])
    upper = np.array([[2, 1], [4, 0], [2, 2], [2, 2], [1, 2]])
    sizes = np.array([4, 3, 2, 3, 1])
    problem = problem_from_clocks(sizes, lower, upper)
    indptr, indices = problem.conflicts.indptr, problem.conflicts.indices
    assert greedy_clique_bound(problem.lower, problem.upper, sizes, indptr, indices) == 8
    assert problem.lower_bound == 9 == max_clique_weight(problem)
