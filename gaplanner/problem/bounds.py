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

import numpy as np

from gaplanner.compiled import njit


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


@njit
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
CLIQUE_WORK_BUDGET = 20_000_000
#: Beyond this many blocks the search is not tried: its adjacency matrix is quadratic in them.
MAX_CLIQUE_SEARCH_BLOCKS = 5_000


@njit
def _branching_nodes(adjacent, weights, candidates, target, budget):
    """The candidates a clique heavier than ``target`` (beyond the blocks chosen) must take one of.

    Greedy independent sets, each taking the least residual weight of its
    members from every member: a clique takes at most one block of a set, so
    the sets' minima summed bound its weight. Once that sum passes
    ``target``, only blocks whose weight is not yet used up can lift a clique
    above it (networkx's ``max_weight_clique``, weighted by splitting). Out of
    ``budget`` it stops early: the blocks left still hold every such clique.
    """
    m = len(candidates)
    residual = weights[candidates].copy()
    alive = np.ones(m, np.bool_)
    members = np.empty(m, np.int64)
    left, total = m, 0
    while left > 0 and budget[0] >= 0:
        budget[0] -= m
        k = 0
        for j in range(m):
            if not alive[j]:
                continue
            v = candidates[j]
            independent = True
            for q in range(k):
                if adjacent[v, candidates[members[q]]]:
                    independent = False
                    break
            if independent:
                members[k] = j
                k += 1
        least = residual[members[0]]
        for q in range(1, k):
            least = min(least, residual[members[q]])
        total += least
        if total > target:
            break
        for q in range(k):
            residual[members[q]] -= least
            if residual[members[q]] == 0:
                alive[members[q]] = False
                left -= 1
    return candidates[alive]


@njit
def _expand(adjacent, weights, candidates, weight, best, budget):
    """The heaviest clique weight found: ``best`` or a clique of ``weight`` plus some ``candidates``."""
    best = max(best, weight)
    budget[0] -= len(candidates)
    if budget[0] < 0 or len(candidates) == 0:
        return best
    branching = _branching_nodes(adjacent, weights, candidates, best - weight, budget)
    remaining = np.ones(adjacent.shape[0], np.bool_)
    for i in range(len(branching) - 1, -1, -1):
        v = branching[i]
        remaining[v] = False
        common = np.empty(len(candidates), np.int64)
        k = 0
        for w in candidates:
            if remaining[w] and adjacent[v, w]:
                common[k] = w
                k += 1
        best = _expand(adjacent, weights, common[:k], weight + weights[v], best, budget)
        if budget[0] < 0:
            return best
    return best


def heaviest_clique(sizes: np.ndarray, indptr: np.ndarray, indices: np.ndarray, known: int = 0,
                    budget: int = CLIQUE_WORK_BUDGET) -> int:  # fmt: skip
    """The weight of the heaviest clique of the conflict graph, or of the heaviest found within
    ``budget``; never below ``known``, a clique weight found before, which prunes from the start.

    A branch and bound whose bound splits weights over greedy independent sets
    (the search of networkx's ``max_weight_clique``, compiled), blocks taken
    most-conflicting first; every weight it returns is a real clique's. The
    budget counts the candidates looked at, summed over the search's sets and nodes.
    """
    n = len(sizes)
    if n == 0 or n > MAX_CLIQUE_SEARCH_BLOCKS:
        return known
    adjacent = np.zeros((n, n), np.bool_)
    adjacent[np.repeat(np.arange(n), np.diff(indptr)), indices] = True
    degrees = np.diff(indptr)
    candidates = np.argsort(-degrees, kind="stable").astype(np.int64)
    candidates = candidates[sizes[candidates] > 0]
    work = np.array([budget], np.int64)
    return int(_expand(adjacent, sizes.astype(np.int64), candidates, 0, int(known), work))
