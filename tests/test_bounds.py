"""Lower bounds: max load and the clique bound against brute force, and never above an optimum."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaplanner import build_problem, load_problem
from gaplanner.bounds import load_profile, max_load
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
