"""Variation operators on allocation orders (permutations).

Every random choice comes from the caller's ``numpy.random.Generator``: no
operator touches Python's global ``random`` (which DEAP's own operators use),
so concurrent searches in one process stay reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.native import _variation
from gaplanner.problem.bounds import load_profile
from gaplanner.problem.problem import Problem
from gaplanner.search.neighbours import uses_intervals, uses_order_index


def ordered_crossover(
    parents: np.ndarray, pairs: np.ndarray, rng: np.random.Generator, keep_prefix: bool = True
) -> np.ndarray:
    """One child per row of ``pairs`` (indices into ``parents``): a part of the first parent kept in
    place, the other blocks in the second parent's order.

    ``keep_prefix``: the part kept is a random prefix, ``first[:b]`` (one cut);
    otherwise a random slice ``first[a:b]`` (two cuts). A parent's order is
    sorted by address, so its prefix is the bottom of its memory: the child
    keeps those blocks where they were, and decoding it starts at ``b`` from
    the parent's offsets. The prefix is the default: side by side on
    MiniMalloc's challenging set it gave lower peaks than the slice (see
    docs/decisions.md).
    """
    n = parents.shape[1]
    if keep_prefix:
        cuts = np.zeros((len(pairs), 2), np.int64)
        cuts[:, 1] = rng.integers(0, n + 1, size=len(pairs))
    else:
        cuts = np.sort(rng.integers(0, n + 1, size=(len(pairs), 2)), axis=1)
    children = np.empty((len(pairs), n), np.int64)
    _variation.crossover(
        np.ascontiguousarray(parents, np.int64), np.ascontiguousarray(pairs, np.int64), cuts, children
    )
    return children


# Mutation kinds, one per child (see :func:`mutate`).
PEAK_MOVE, SWAP, INSERTION, INVERSION = 0, 1, 2, 3
MUTATIONS = {"peak move": PEAK_MOVE, "swap": SWAP, "insertion": INSERTION, "inversion": INVERSION}


def mutate(
    orders: np.ndarray, rows: np.ndarray, kinds: np.ndarray, critical: np.ndarray, rng: np.random.Generator
) -> None:
    """Mutate ``orders[rows]`` in place, row ``rows[r]`` by ``kinds[r]`` (one of :data:`MUTATIONS`).

    ``critical``: one boolean row per mutated order marking the blocks a peak
    move may pick (those that end at the peak of the order's parent). A peak move takes one of them
    to a uniformly drawn earlier place, so that first-fit finds it a lower gap before the others
    fill it (favouring short moves, cheap to re-decode, did worse).
    """
    draws = rng.random((len(rows), 2))
    rows, kinds = (np.ascontiguousarray(a, np.int64) for a in (rows, kinds))
    _variation.mutate(orders, rows, kinds, draws, np.ascontiguousarray(critical, np.bool_))


@dataclass(frozen=True)
class HoleGuide:
    """What a hole move reads of a problem: sizes, lifetimes, conflicts and the load at each block's start."""

    sizes: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    start_load: np.ndarray  # bytes live at each block's start time
    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def for_problem(cls, problem: Problem) -> HoleGuide:
        times, load = load_profile(problem.lower, problem.upper, problem.sizes)
        start_load = load[np.searchsorted(times, problem.lower)]
        # As the decoder: no pair list, the lifetimes give the neighbours (on a multi-core problem too
        # large for its pairs, those on its time axis: a move's guess, never a placement).
        if uses_intervals(problem) or uses_order_index(problem):
            indptr, indices = np.zeros(0, np.int64), np.zeros(0, np.int32)
        else:
            indptr, indices = problem.conflicts.indptr, problem.conflicts.indices
        ints = (
            np.ascontiguousarray(a, np.int64)
            for a in (problem.sizes, problem.lower, problem.upper, start_load)
        )
        return cls(*ints, np.ascontiguousarray(indptr, np.int64), np.ascontiguousarray(indices, np.int32))


# A hole move draws two uniforms, then two per blocker it may move (at most this many blockers).
HOLE_BLOCKERS = 32


def hole_moves(
    orders: np.ndarray, rows: np.ndarray, offsets: np.ndarray, guide: HoleGuide, rng: np.random.Generator
) -> None:
    """Hole-move ``orders[rows]`` in place; ``offsets[r]``: the placement of row ``rows[r]``'s parent.

    Each lowers the block over a hole at the peak's busiest instant below the blocks that keep it
    out. A critical block (one ending at the peak) is drawn; at the busiest instant of its lifetime
    the live blocks are sorted by address, and a gap between them (a hole: bytes free at that
    instant) is drawn, with probability its share of the free bytes. The block right above the hole
    (the lid) would drop into it but for its *blockers*: neighbours that use the hole's addresses at
    other times. The lid moves to just before the first of them in the order, so that first-fit
    places the blockers around it, and blockers move on to random earlier places, to look for room
    elsewhere: the one covering the most of the hole always, each other one with probability the
    bytes of the hole it covers over that most. (The hole that matters is often a large one under a
    few large blockers, beside small holes: drawing holes by their bytes and moving the big blockers
    reaches it far more often than uniform draws.) With no hole, the critical block itself moves to
    a random earlier place (a peak move).
    """
    draws = rng.random((len(rows), 2 + 2 * HOLE_BLOCKERS))
    g = guide
    rows, offsets = (np.ascontiguousarray(a, np.int64) for a in (rows, offsets))
    _variation.hole_moves(
        orders, rows, offsets, g.sizes, g.lower, g.upper, g.start_load, g.indptr, g.indices, draws
    )
