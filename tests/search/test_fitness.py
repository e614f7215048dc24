"""Population fitness: peaks as the decoder gives them, excess and contiguity as defined, ranking."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gaplanner import load_problem
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.decoder import decode
from gaplanner.search.fitness import PopulationFitness, Scores, _sort_by_address, shared_prefix
from tests.oracles import address_order


def test_fitness_matches_decoding_and_sorting_by_address_keeps_the_offsets() -> None:
    problem = load_problem("example:multicore_fig1b")
    rng = np.random.default_rng(0)
    orders = np.array([rng.permutation(problem.n) for _ in range(20)])
    fitness = PopulationFitness(problem)
    by_address, scores = fitness(orders)
    for order, peak, offsets in zip(orders, scores.peaks, scores.offsets, strict=True):
        assert np.array_equal(decode(problem, order), offsets)
        assert peak == (offsets + problem.sizes).max()
    assert np.all((scores.contiguity >= 0) & (scores.contiguity <= 1))
    assert np.array_equal(by_address, address_order(orders, scores.offsets))
    again, rescored = fitness(by_address)
    assert np.array_equal(rescored.offsets, scores.offsets)
    assert np.array_equal(again, by_address)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200), st.integers(0, 2**32 - 1), st.integers(0, 400), st.integers(1, 8))
def test_sort_by_address_is_a_stable_sort(n, seed, moved, distinct) -> None:
    """Nearly sorted rows (the insertion path) and shuffled ones (the merge-sort fallback), with ties."""
    rng = np.random.default_rng(seed)
    offsets = rng.integers(0, distinct, n)
    order = np.argsort(offsets, kind="stable")
    for _ in range(moved):  # a few genes moved, as in a child; many moves make it random
        i, j = rng.integers(0, n, 2)
        order[[i, j]] = order[[j, i]]
    out = np.empty_like(order)
    _sort_by_address(order, offsets, out)
    assert np.array_equal(out, order[np.argsort(offsets[order], kind="stable")])


def test_ranking_breaks_equal_peaks_by_excess_then_contiguity() -> None:
    offsets = np.zeros((4, 1), np.int64)
    scores = Scores(
        peaks=np.array([7, 7, 6, 7]),
        excess=np.array([5.0, 2.0, 9.0, 2.0]),
        contiguity=np.array([0.9, 0.1, 0.0, 0.5]),
        offsets=offsets,
    )
    assert scores.ranking().tolist() == [2, 3, 1, 0]
    assert scores.ranking(use_excess=False).tolist() == [2, 0, 3, 1]
    assert scores.ranking(use_excess=False, use_contiguity=False).tolist() == [2, 0, 1, 3]


def excess_oracle(problem, offsets: np.ndarray) -> float:
    """Block area (bytes x lifetime, at least 1) above the lower bound, block by block."""
    total = 0.0
    for b in range(problem.n):
        top = offsets[b] + problem.sizes[b]
        above = top - max(offsets[b], problem.lower_bound)
        if above > 0:
            total += above * max(1, problem.upper[b] - problem.lower[b])
    return total


def contiguity_oracle(problem, by_address: np.ndarray) -> float:
    """Share of neighbours in address order where the second could sit in the first's space."""
    pairs = {frozenset(map(int, e)) for e in zip(*problem.conflicts.edges(), strict=True)}
    reuse = sum(
        1
        for a, b in itertools.pairwise(by_address)
        if problem.sizes[b] <= problem.sizes[a] and frozenset((int(a), int(b))) not in pairs
    )
    return reuse / (len(by_address) - 1) if len(by_address) > 1 else 0.0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.sampled_from(["intervals", "graph"]))
def test_excess_and_contiguity_match_their_definitions(seed: int, n: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    if kind == "graph":
        problem = load_problem("example:multicore_fig1b")
    else:
        lower = rng.integers(0, 10, n)
        problem = problem_from_arrays(rng.integers(1, 10, n), lower, lower + rng.integers(1, 6, n))
    orders = np.array([rng.permutation(problem.n) for _ in range(5)])
    by_address, scores = PopulationFitness(problem)(orders)
    for k in range(len(orders)):
        assert scores.excess[k] == excess_oracle(problem, scores.offsets[k])
        assert np.isclose(scores.contiguity[k], contiguity_oracle(problem, by_address[k]))
    without = PopulationFitness(problem, use_contiguity=False)(orders)[1]
    assert np.array_equal(without.peaks, scores.peaks) and not without.contiguity.any()


def test_a_known_prefix_keeps_its_offsets_and_counts_evaluations() -> None:
    problem = load_problem("zoo:googlenet@2")
    fitness = PopulationFitness(problem)
    rng = np.random.default_rng(1)
    parents, parent_scores = fitness(np.array([rng.permutation(problem.n) for _ in range(4)]))
    children = parents.copy()
    for child in children:  # keep the first half, shuffle the rest
        rng.shuffle(child[problem.n // 2 :])
    prefix = shared_prefix(children, parents)
    assert np.all(prefix >= problem.n // 2)
    _, known = fitness(children, (prefix, parent_scores.offsets))
    _, fresh = fitness(children)
    assert np.array_equal(known.offsets, fresh.offsets) and np.array_equal(known.peaks, fresh.peaks)
    assert fitness.evaluations == 12


def test_shared_prefix_counts_the_leading_genes_in_common() -> None:
    orders = np.array([[0, 1, 2, 3], [0, 1, 3, 2], [1, 0, 2, 3]])
    assert shared_prefix(orders, np.tile([0, 1, 2, 3], (3, 1))).tolist() == [4, 2, 0]
