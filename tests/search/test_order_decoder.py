"""The multi-core decoder without pairs (happens-before vectors) against the pair-list decoder."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.problem.problem import Problem, build_problem, problem_from_clocks
from gaplanner.search.decoder import Decoder
from tests.strategies import SETTINGS, graph_documents


@st.composite
def clock_problems(draw: st.DrawFn, max_buffers: int = 9) -> Problem:
    """Random vector clocks (not necessarily any program's), sizes, an alignment, some pinned blocks."""
    d = draw(st.integers(2, 4))
    n = draw(st.integers(1, max_buffers))
    lower = np.array([[draw(st.integers(0, 5)) for _ in range(d)] for _ in range(n)])
    upper = lower + np.array([[draw(st.integers(0, 3)) for _ in range(d)] for _ in range(n)])
    upper[np.arange(n), draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n))] += 1
    sizes = np.array(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)))
    alignment = draw(st.sampled_from([1, 2, 4]))
    free = problem_from_clocks(sizes, lower, upper, alignment=alignment)
    plan = Decoder.for_problem(free, pairs=True).decode(np.array(draw(st.permutations(range(n)))))
    pins = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return problem_from_clocks(sizes, lower, upper, alignment=alignment, offsets=np.where(pins, plan, -1))


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
