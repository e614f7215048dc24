"""Lower bounds on the arena size.

No plan can be smaller than the total size of a set of mutually conflicting
blocks (they need pairwise disjoint address ranges). For interval lifetimes
the heaviest such set is the *max load*: the largest sum of sizes live at one
instant.

For a multi-core graph the conflict graph is not an interval graph, but the
max load over any linear extension of its happens-before order is still a
valid bound: if blocks ``a`` and ``b`` are both live at position ``t`` of the
extension, then (say) ``a``'s last reader is at or after ``t`` and ``b``'s
writer at or before ``t``, so ``a``'s readers cannot all happen before ``b``'s
writer (that would put them earlier in the extension), and the same with the
roles swapped: the blocks live at ``t`` conflict pairwise, a clique.

That clique need not be maximal in a partial order (blocks on another core,
concurrent with all of them, are not live at ``t`` in the extension), so
:func:`greedy_clique_bound` extends each instant's live set greedily with the
heaviest common neighbours. Any clique's total size is a valid bound.

Where those live sets are far from the heaviest clique (vector-clock programs,
whose threads run unsynchronised between barriers), :func:`heaviest_clique`
searches for it by branch and bound, starting from the greedy one; stopped by
its work budget, it still returns the heaviest clique it found.
"""

from __future__ import annotations

import numba as nb
import numpy as np


def max_load(lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray) -> int:
    """Largest sum of ``sizes`` over blocks live at one instant of ``[lower, upper)``."""
    if len(sizes) == 0:
        return 0
    times = np.concatenate([upper, lower])
    deltas = np.concatenate([-sizes, sizes]).astype(np.int64)
    # At equal times the ends come first: half-open lifetimes ending at t do not meet those starting at t.
    order = np.lexsort((np.r_[np.zeros(len(upper)), np.ones(len(lower))], times))
    return int(np.cumsum(deltas[order]).max())


def load_profile(lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the live bytes: ``(times, load)`` with ``load[i]`` on ``[times[i], times[i+1])``."""
    times = np.unique(np.concatenate([lower, upper]))
    change = np.zeros(len(times), np.int64)
    np.add.at(change, np.searchsorted(times, lower), sizes)
    np.add.at(change, np.searchsorted(times, upper), -sizes)
    return times, np.cumsum(change)


@nb.njit(cache=True)
def _greedy_clique_weight(lower, upper, sizes, indptr, indices):
    n = len(sizes)
    best = 0
    adjacent = np.zeros(n, np.int64)
    in_clique = np.zeros(n, np.bool_)
    for t in np.unique(lower):
        members = np.flatnonzero((lower <= t) & (upper > t))
        adjacent[:] = 0
        in_clique[:] = False
        weight = 0
        for m in members:
            in_clique[m] = True
            weight += sizes[m]
            for e in range(indptr[m], indptr[m + 1]):
                adjacent[indices[e]] += 1
        needed = len(members)
        while True:
            pick = -1
            for j in range(n):
                if not in_clique[j] and adjacent[j] == needed and (pick < 0 or sizes[j] > sizes[pick]):
                    pick = j
            if pick < 0:
                break
            in_clique[pick] = True
            weight += sizes[pick]
            needed += 1
            for e in range(indptr[pick], indptr[pick + 1]):
                adjacent[indices[e]] += 1
        best = max(best, weight)
    return best


def greedy_clique_bound(
    lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray, indptr: np.ndarray, indices: np.ndarray
) -> int:
    """Weight of the heaviest clique grown greedily from each instant's live set.

    ``lower``/``upper`` must be a linear extension's live ranges, so that each
    instant's live set is itself a clique of the conflict graph (see above).
    """
    if len(sizes) == 0:
        return 0
    return int(_greedy_clique_weight(lower, upper, sizes, indptr, indices))


#: The work :func:`heaviest_clique` does at most (candidates coloured, summed over its nodes), so that
#: building a problem stays fast.
CLIQUE_WORK_BUDGET = 2_000_000
#: Beyond this many blocks the search is not tried: its adjacency matrix is quadratic in them.
MAX_CLIQUE_SEARCH_BLOCKS = 5_000


@nb.njit(cache=True)
def _colour_bounds(adjacent, weights, candidates):
    """``candidates`` reordered by greedy colour classes (independent sets), and per position the sum,
    over the classes up to its own, of each class's heaviest weight: no clique among the candidates up
    to that position weighs more (it takes at most one block of each class)."""
    m = len(candidates)
    order = np.empty(m, np.int64)
    bound = np.empty(m, np.int64)
    coloured = np.zeros(m, np.bool_)
    placed, total = 0, 0
    while placed < m:
        first, heaviest = placed, 0
        for j in range(m):
            if coloured[j]:
                continue
            v = candidates[j]
            independent = True
            for q in range(first, placed):
                if adjacent[v, order[q]]:
                    independent = False
                    break
            if independent:
                order[placed] = v
                placed += 1
                coloured[j] = True
                heaviest = max(heaviest, weights[v])
        total += heaviest
        bound[first:placed] = total
    return order, bound


@nb.njit(cache=True)
def _expand(adjacent, weights, candidates, weight, best, budget):
    """The heaviest clique weight found: ``best`` or a clique of ``weight`` plus some ``candidates``."""
    budget[0] -= len(candidates)
    if budget[0] < 0:
        return best
    order, bound = _colour_bounds(adjacent, weights, candidates)
    for i in range(len(order) - 1, -1, -1):
        if weight + bound[i] <= best:
            return best
        v = order[i]
        grown = weight + weights[v]
        best = max(best, grown)
        below = order[:i]
        common = below[adjacent[v, below]]
        if len(common):
            best = _expand(adjacent, weights, common, grown, best, budget)
        if budget[0] < 0:
            return best
    return best


def heaviest_clique(sizes: np.ndarray, indptr: np.ndarray, indices: np.ndarray, known: int = 0,
                    budget: int = CLIQUE_WORK_BUDGET) -> int:  # fmt: skip
    """The weight of the heaviest clique of the conflict graph, or of the heaviest found within
    ``budget``; never below ``known``, a clique weight found before, which prunes from the start.

    A branch and bound with greedy colouring bounds (Carraghan and Pardalos's
    search, weighted); every weight it returns is a real clique's. The budget
    counts the candidates coloured, summed over the search's nodes.
    """
    n = len(sizes)
    if n == 0 or n > MAX_CLIQUE_SEARCH_BLOCKS:
        return known
    adjacent = np.zeros((n, n), np.bool_)
    adjacent[np.repeat(np.arange(n), np.diff(indptr)), indices] = True
    candidates = np.argsort(-sizes, kind="stable").astype(np.int64)
    work = np.array([budget], np.int64)
    return int(_expand(adjacent, sizes.astype(np.int64), candidates, 0, int(known), work))
