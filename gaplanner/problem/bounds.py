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

from gaplanner.native import _bounds


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


def greedy_clique_bound(
    lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray, indptr: np.ndarray, indices: np.ndarray
) -> int:
    """Weight of the heaviest clique grown greedily from each instant's live set.

    ``lower``/``upper`` must be a linear extension's live ranges, so that each
    instant's live set is itself a clique of the conflict graph (see above).
    """
    if len(sizes) == 0:
        return 0
    lower, upper, sizes, indptr = (np.ascontiguousarray(a, np.int64) for a in (lower, upper, sizes, indptr))
    indices = np.ascontiguousarray(indices, np.int32 if indices.dtype == np.int32 else np.int64)
    return int(_bounds.greedy_clique(lower, upper, sizes, indptr, indices))


#: The work :func:`heaviest_clique` does at most (candidates coloured, summed over its nodes), so that
#: building a problem stays fast.
CLIQUE_WORK_BUDGET = 20_000_000
#: Beyond this many blocks the search is not tried: its adjacency matrix is quadratic in them.
MAX_CLIQUE_SEARCH_BLOCKS = 5_000


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
    return int(_bounds.heaviest_clique(adjacent, sizes.astype(np.int64), candidates, int(known), work))
