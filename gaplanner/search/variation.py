"""Variation operators on allocation orders (permutations).

Every random choice comes from the caller's ``numpy.random.Generator``: no
operator touches Python's global ``random`` (which DEAP's own operators use),
so concurrent searches in one process stay reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.compiled import njit
from gaplanner.problem.bounds import load_profile
from gaplanner.problem.problem import Problem
from gaplanner.search.neighbours import uses_intervals, uses_order_index


@njit
def _ordered_crossover(first, second, cut_a, cut_b, child, taken):
    """Linear order crossover: ``first[a:b]`` in place, the rest in ``second``'s order."""
    taken[:] = False
    child[cut_a:cut_b] = first[cut_a:cut_b]
    for g in first[cut_a:cut_b]:
        taken[g] = True
    pos = 0
    for g in second:
        if taken[g]:
            continue
        if pos == cut_a:
            pos = cut_b
        child[pos] = g
        pos += 1


@njit
def _crossover_all(parents, pairs, cuts, children):
    taken = np.zeros(parents.shape[1], np.bool_)
    for i in range(len(pairs)):
        _ordered_crossover(
            parents[pairs[i, 0]], parents[pairs[i, 1]], cuts[i, 0], cuts[i, 1], children[i], taken
        )


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
    _crossover_all(parents, pairs, cuts, children)
    return children


# Mutation kinds, one per child (see :func:`mutate`).
PEAK_MOVE, SWAP, INSERTION, INVERSION = 0, 1, 2, 3
MUTATIONS = {"peak move": PEAK_MOVE, "swap": SWAP, "insertion": INSERTION, "inversion": INVERSION}


@njit
def _move(order, source, target):
    """Move the gene at ``source`` to ``target``, shifting the ones between."""
    gene = order[source]
    if source < target:
        order[source:target] = order[source + 1 : target + 1].copy()
    elif target < source:
        order[target + 1 : source + 1] = order[target:source].copy()
    order[target] = gene


@njit
def _peak_move(order, critical, u, v):
    """Move one critical block (``critical[block]``) to an earlier place in the order.

    The blocks ending at the peak are the ones to lower; placing one of them
    earlier lets first-fit find it a lower gap before the others fill it. The
    distance is uniform: favouring short moves, cheap to re-decode, did worse.
    """
    count = critical.sum()
    if count == 0:
        return
    pick = int(u * count)
    for source in range(len(order)):
        if critical[order[source]]:
            if pick == 0:
                if source > 0:
                    _move(order, source, int(v * source))
                return
            pick -= 1


@njit
def _mutate_rows(orders, rows, kinds, draws, critical):
    n = orders.shape[1]
    for r in range(len(rows)):
        order, u, v = orders[rows[r]], draws[r, 0], draws[r, 1]
        kind = kinds[r]
        if kind == PEAK_MOVE:
            _peak_move(order, critical[r], u, v)
        elif kind == SWAP:
            i, j = int(u * n), int(v * n)
            order[i], order[j] = order[j], order[i]
        elif kind == INSERTION:
            _move(order, int(u * n), int(v * n))
        else:
            i, j = int(u * (n + 1)), int(v * (n + 1))
            i, j = min(i, j), max(i, j)
            order[i:j] = order[i:j][::-1].copy()


def mutate(
    orders: np.ndarray, rows: np.ndarray, kinds: np.ndarray, critical: np.ndarray, rng: np.random.Generator
) -> None:
    """Mutate ``orders[rows]`` in place, row ``rows[r]`` by ``kinds[r]`` (one of :data:`MUTATIONS`).

    ``critical``: one boolean row per mutated order marking the blocks a peak
    move may pick (those that end at the peak of the order's parent).
    """
    draws = rng.random((len(rows), 2))
    _mutate_rows(orders, np.asarray(rows, np.int64), np.asarray(kinds, np.int64), draws, critical)


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
        return cls(problem.sizes, problem.lower, problem.upper, start_load, indptr, indices)


# A hole move draws two uniforms, then two per blocker it may move (at most this many blockers).
HOLE_BLOCKERS = 32


@njit
def _position(order, gene):
    for k in range(len(order)):
        if order[k] == gene:
            return k
    return -1


@njit
def _busiest_instant(c, lower, upper, start_load):
    """The start time within ``c``'s lifetime at which the most bytes are live."""
    t, most = lower[c], start_load[c]
    for s in range(len(lower)):
        if lower[c] <= lower[s] < upper[c] and start_load[s] > most:
            t, most = lower[s], start_load[s]
    return t


@njit
def _hole_move(order, offsets, sizes, lower, upper, start_load, indptr, indices, draws):
    """Lower the block over a hole at the peak's busiest instant below the blocks that keep it out.

    A critical block (one ending at the peak) is drawn; at the busiest instant
    of its lifetime the live blocks are sorted by address, and a gap between
    them (a hole: bytes free at that instant) is drawn, with probability its
    share of the free bytes. The block right above the hole (the lid) would
    drop into it but for its *blockers*: neighbours that use the hole's
    addresses at other times. The lid moves to just before the first of them in
    the order, so that first-fit places the blockers around it, and blockers
    move on to random earlier places, to look for room elsewhere: the one
    covering the most of the hole always, each other one with probability the
    bytes of the hole it covers over that most.

    (The hole that matters is often a large one under a few large blockers,
    beside small holes: drawing holes by their bytes and moving the big
    blockers surely reaches it far more often than uniform draws.) With no hole, the
    critical block itself moves to a random earlier place (a peak move).
    """
    n = len(order)
    peak, critical = 0, 0
    for b in range(n):
        peak = max(peak, offsets[b] + sizes[b])
    for b in range(n):
        critical += offsets[b] + sizes[b] == peak
    pick, c = int(draws[0] * critical), -1
    for b in range(n):
        if offsets[b] + sizes[b] == peak:
            if pick == 0:
                c = b
                break
            pick -= 1
    t = _busiest_instant(c, lower, upper, start_load)
    live = np.flatnonzero((lower <= t) & (upper > t))
    live = live[np.argsort(offsets[live], kind="mergesort")]
    free, front = 0, 0
    for b in live:
        free += max(0, offsets[b] - front)
        front = max(front, offsets[b] + sizes[b])
    if free == 0:
        source = _position(order, c)
        _move(order, source, int(draws[1] * source))
        return
    pick, front, lid, bottom = draws[1] * free, 0, -1, 0
    for b in live:
        if offsets[b] > front:
            pick -= offsets[b] - front
            if pick < 0:
                lid, bottom = b, front
                break
        front = max(front, offsets[b] + sizes[b])
    if lid < 0:  # rounding left the draw past the last hole
        lid, bottom = _last_hole(live, offsets, sizes)
    top = offsets[lid]
    blockers = np.empty(HOLE_BLOCKERS, np.int64)
    overlaps = np.empty(HOLE_BLOCKERS, np.int64)
    count, first, widest = 0, _position(order, lid), 1
    from_lifetimes = len(indptr) == 0  # no pair list: the neighbours are the lifetimes overlapping the lid's
    for e in range(n if from_lifetimes else indptr[lid + 1] - indptr[lid]):
        j = e if from_lifetimes else indices[indptr[lid] + e]
        if from_lifetimes and (j == lid or lower[j] >= upper[lid] or upper[j] <= lower[lid]):
            continue
        if count < HOLE_BLOCKERS and offsets[j] < top and offsets[j] + sizes[j] > bottom:
            blockers[count] = j
            overlaps[count] = min(offsets[j] + sizes[j], top) - max(offsets[j], bottom)
            widest = max(widest, overlaps[count])
            count += 1
            first = min(first, _position(order, j))
    _move(order, _position(order, lid), first)
    for m in range(count):
        if draws[2 + 2 * m] * widest < overlaps[m]:
            _move(order, _position(order, blockers[m]), int(draws[3 + 2 * m] * first))


@njit
def _last_hole(live, offsets, sizes):
    """The block over the highest hole among ``live`` (sorted by address), and the hole's bottom."""
    front, lid, bottom = 0, -1, 0
    for b in live:
        if offsets[b] > front:
            lid, bottom = b, front
        front = max(front, offsets[b] + sizes[b])
    return lid, bottom


@njit
def _hole_move_rows(orders, rows, offsets, sizes, lower, upper, start_load, indptr, indices, draws):
    for r in range(len(rows)):
        _hole_move(orders[rows[r]], offsets[r], sizes, lower, upper, start_load, indptr, indices, draws[r])


def hole_moves(
    orders: np.ndarray, rows: np.ndarray, offsets: np.ndarray, guide: HoleGuide, rng: np.random.Generator
) -> None:
    """Hole-move ``orders[rows]`` in place; ``offsets[r]``: the placement of row ``rows[r]``'s parent."""
    draws = rng.random((len(rows), 2 + 2 * HOLE_BLOCKERS))
    g = guide
    _hole_move_rows(
        orders, np.asarray(rows, np.int64), offsets, g.sizes, g.lower, g.upper, g.start_load,
        g.indptr, g.indices, draws,
    )  # fmt: skip
