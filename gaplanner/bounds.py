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
