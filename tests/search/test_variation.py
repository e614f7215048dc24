"""Operators on allocation orders: crossovers and mutations keep permutations and do what they say."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gaplanner.native import _variation
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search import variation as operators
from gaplanner.search.decoder import decode
from gaplanner.search.fitness import shared_prefix
from gaplanner.search.variation import (
    MUTATIONS,
    PEAK_MOVE,
    HoleGuide,
    mutate,
    ordered_crossover,
)


def random_problem(seed: int, n: int) -> object:
    rng = np.random.default_rng(seed)
    lower = rng.integers(0, 10, n)
    return problem_from_arrays(rng.integers(1, 10, n), lower, lower + rng.integers(1, 6, n))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_operators_keep_permutations(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    parents = np.array([rng.permutation(n) for _ in range(4)])
    pairs = rng.integers(0, 4, size=(6, 2))
    for keep_prefix in (True, False):
        for child in ordered_crossover(parents, pairs, rng, keep_prefix):
            assert sorted(child) == list(range(n))
    orders = np.array([rng.permutation(n) for _ in MUTATIONS])
    critical = rng.random((len(MUTATIONS), n)) < 0.3
    mutate(orders, np.arange(len(MUTATIONS)), np.array(list(MUTATIONS.values())), critical, rng)
    for order in orders:
        assert sorted(order) == list(range(n))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_hole_moves_keep_permutations(n: int, seed: int) -> None:
    problem = random_problem(seed, n)
    rng = np.random.default_rng(seed)
    parents = np.array([rng.permutation(n) for _ in range(6)])
    offsets = np.array([decode(problem, order) for order in parents])
    orders = parents.copy()
    operators.hole_moves(orders, np.arange(6), offsets, HoleGuide.for_problem(problem), rng)
    for order in orders:
        assert sorted(order) == list(range(n))


class _Fixed:
    """A generator whose draws are given (the hole move's uniforms, chosen by the test)."""

    def __init__(self, draws: np.ndarray) -> None:
        self.draws = draws

    def random(self, shape: tuple[int, int]) -> np.ndarray:
        return self.draws.reshape(shape)


def test_hole_move_puts_the_lid_before_its_blockers() -> None:
    """X [0,6) sits at 6 over a hole at 3-6 when it is live with Z [0,3): Y [3,5) and W [5,6), both
    live over [5,8) and pushed up by V, keep it out. The move puts X just before Y. Y, which covers
    the most of the hole, always moves on to an earlier place; W, covering half as much, moves when
    its draw is below 1/2."""
    sizes, lower, upper = np.array([1, 3, 2, 1, 3]), np.array([0, 0, 5, 5, 6]), np.array([6, 3, 8, 8, 8])
    problem = problem_from_arrays(sizes, lower, upper)
    x, z, y, w, v = range(5)
    parent = np.array([z, v, y, w, x])
    offsets = decode(problem, parent)
    assert offsets.tolist() == [6, 0, 3, 5, 0]
    g = HoleGuide.for_problem(problem)
    moved = []
    for w_draw in (0.99, 0.0):
        order, draws = parent.copy(), np.full(2 + 2 * operators.HOLE_BLOCKERS, 0.99)
        draws[:4], draws[4] = (0.0, 0.0, 0.99, 0.0), w_draw
        orders = order[None].copy()
        operators.hole_moves(orders, np.array([0]), offsets[None], g, _Fixed(draws))
        order = orders[0]
        moved.append(order.tolist())
    assert moved == [[y, z, v, x, w], [y, w, z, v, x]]


def test_ordered_crossover_keeps_a_slice_and_the_other_parents_order() -> None:
    parents = np.array([np.arange(10), np.arange(10)[::-1]])
    child = np.empty((1, 10), np.int64)
    _variation.crossover(parents, np.array([[0, 1]]), np.array([[3, 6]]), child)
    assert child[0].tolist() == [9, 8, 7, 3, 4, 5, 6, 2, 1, 0]


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_prefix_crossover_keeps_a_prefix_of_the_first_parent_and_the_second_ones_order(
    n: int, seed: int
) -> None:
    """Past the part it shares with its first parent, a child is the second parent's order of the
    other blocks."""
    rng = np.random.default_rng(seed)
    parents = np.array([rng.permutation(n) for _ in range(3)])
    pairs = rng.integers(0, 3, size=(30, 2))
    children = ordered_crossover(parents, pairs, rng)
    kept = shared_prefix(children, parents[pairs[:, 0]])
    for child, (first, second), b in zip(children, pairs, kept, strict=True):
        rest = [g for g in parents[second] if g not in set(parents[first][:b])]
        assert child[b:].tolist() == rest
    if n >= 10:  # the cuts are uniform over 0..n: thirty children do not all keep one length
        assert kept.max() > kept.min()


def test_peak_move_moves_a_critical_block_earlier() -> None:
    rng = np.random.default_rng(0)
    orders = np.tile(np.arange(8), (20, 1))
    critical = np.zeros((20, 8), bool)
    critical[:, 7] = True
    mutate(orders, np.arange(20), np.full(20, PEAK_MOVE), critical, rng)
    for order in orders:
        assert order[-1] != 7 and sorted(order) == list(range(8))
