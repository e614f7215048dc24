"""The multi-core decoder without pairs (happens-before vectors) against the pair-list decoder."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.problem import problem as problem_module
from gaplanner.problem.problem import Problem, build_problem, problem_from_clocks
from gaplanner.search.baselines import BASELINES
from gaplanner.search.decoder import Decoder
from gaplanner.search.fitness import PopulationFitness
from tests.strategies import SETTINGS, clock_problems, graph_documents


@st.composite
def graph_problems(draw: st.DrawFn) -> Problem:
    return build_problem(draw(graph_documents(max_ops=9)))


def _equal(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    return np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def _same_offsets(problem: Problem, orders: np.ndarray, prefix: int) -> None:
    pairs, vectors = Decoder.for_problem(problem, pairs=True), Decoder.for_problem(problem, pairs=False)
    assert vectors.order is not None and pairs.order is None
    for best_fit in (False, True):
        expected = pairs.decode_population(orders, best_fit)
        assert _equal(expected, vectors.decode_population(orders, best_fit))
        template = (np.full(len(orders), prefix), expected[1])  # decodes that start part-way agree too
        again = pairs.decode_population(orders, best_fit, template)
        assert _equal(again, vectors.decode_population(orders, best_fit, template))


def _orders(problem: Problem, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(problem.n) for _ in range(4)])


@SETTINGS
@given(clock_problems(), st.integers(0, 2**16), st.integers(0, 9))
def test_clock_problems_decode_to_the_pair_lists_offsets(problem: Problem, seed: int, prefix: int) -> None:
    assert problem.happens_before is not None and not problem.interval_conflicts
    _same_offsets(problem, _orders(problem, seed), min(prefix, problem.n))


@SETTINGS
@given(graph_problems(), st.integers(0, 2**16), st.integers(0, 9))
def test_graph_problems_decode_to_the_pair_lists_offsets(problem: Problem, seed: int, prefix: int) -> None:
    if problem.happens_before is None:  # one core: an interval problem
        assert problem.interval_conflicts
        return
    _same_offsets(problem, _orders(problem, seed), min(prefix, problem.n))


@st.composite
def multicore_makers(draw: st.DrawFn) -> Callable[[], Problem]:
    """A way to build one random multi-core problem (a graph or clocks) again and again."""
    if draw(st.booleans()):
        doc = draw(graph_documents(max_ops=9))
        return lambda: build_problem(doc)
    p = draw(clock_problems())
    assert p.clocks is not None
    return lambda: problem_from_clocks(
        p.sizes, p.clocks.lower, p.clocks.upper, alignment=int(p.alignments[0]), offsets=p.pinned
    )


@SETTINGS
@given(multicore_makers(), st.integers(0, 2**16))
def test_a_problem_too_large_for_its_pairs_plans_alike_without_them(make, seed: int) -> None:
    """Built as if its pairs were too many: no pair list is ever built, and every plan is the same."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(problem_module, "PAIR_ENTRIES_LIMIT", -1)
        large = make()
    small = make()
    if large.happens_before is None:
        return
    assert small.conflicts.built
    for name, baseline in BASELINES.items():
        if not (large.has_pinned and name == "best-fit-coalescing"):
            assert np.array_equal(baseline(large).offsets, baseline(small).offsets), name
    orders = _orders(large, seed)
    (_, large_scores), (_, small_scores) = (PopulationFitness(p)(orders.copy()) for p in (large, small))
    assert np.array_equal(large_scores.peaks, small_scores.peaks)
    assert np.array_equal(large_scores.offsets, small_scores.offsets)
    assert not large.conflicts.built
