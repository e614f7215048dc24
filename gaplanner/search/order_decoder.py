"""Decoding orders of multi-core problems without conflict pairs.

On a multi-core graph or a vector-clock problem a block's conflicts follow
from its happens-before vectors (:mod:`gaplanner.problem.order`): per group
of the :class:`~gaplanner.problem.order.OrderIndex` the blocks that may
conflict with it are one run of ranks, found by two binary searches. A decode
scans those runs, keeps the placed blocks that really conflict (tested
exactly, component by component), and places the block among them by the
pair-list decoder's rules (first-fit, or best-fit; the same functions as the
interval decoder), so it gives the pair-list decoder's offsets for the same
order, in memory O(n x components).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from gaplanner.compiled import njit
from gaplanner.problem.order import conflict, order_runs
from gaplanner.search.interval_decoder import NOT_PLACED, best_fit_offset, first_fit_offset


@njit
def order_workspace(n, groups):
    """One thread's arrays: the placed ranges by rank, the gathered ranges and the runs per group."""
    return np.empty((2, n), np.int64), np.empty((2, max(n, 1)), np.int64), np.empty((2, groups), np.int64)


@njit
def _gather(s, index, placed, runs, found):
    """Copy the placed ranges of the blocks conflicting with rank ``s`` into ``found``; their count."""
    _, acquire, release, _, groups = index
    count = 0
    for g in range(groups.shape[1]):
        for r in range(runs[0, g], runs[1, g]):
            if placed[0, r] != NOT_PLACED and r != s and conflict(release, acquire, r, s):
                found[0, count] = placed[0, r]
                found[1, count] = placed[1, r]
                count += 1
    return count


@njit
def decode_order_row(order, first, known, sizes, alignments, index, pinned, best_fit, work, offsets):
    """Place the blocks of ``order`` (see :func:`gaplanner.search.decoder.decode_row`); return the peak.

    The ``pinned`` blocks come first at their offsets in ``known``, then the
    first ``first`` blocks of the order at theirs; the rest by first-fit (or
    best-fit) among the placed blocks they conflict with. ``work``: an
    :func:`order_workspace`.
    """
    placed, found, runs = work
    rank = index[0]
    placed[0, :] = NOT_PLACED
    peak = 0
    for b in pinned:
        placed[0, rank[b]], placed[1, rank[b]] = known[b], known[b] + sizes[b]
        peak = max(peak, known[b] + sizes[b])
    for p in range(len(order)):
        b = order[p]
        s = rank[b]
        if placed[0, s] != NOT_PLACED:
            continue
        if p < first:
            offset = known[b]
        else:
            order_runs(s, index, runs)
            count = _gather(s, index, placed, runs, found)
            if best_fit:
                offset = best_fit_offset(sizes[b], alignments[b], found[0], found[1], count)
            else:
                offset = first_fit_offset(sizes[b], alignments[b], found[0], found[1], count)
        placed[0, s], placed[1, s] = offset, offset + sizes[b]
        peak = max(peak, offset + sizes[b])
    for b in range(len(sizes)):
        offsets[b] = placed[0, rank[b]]
    return peak


@njit(parallel=True)
def decode_order_population(
    orders, prefix, known, sizes, alignments, index, pinned, best_fit, offsets, chunks
):
    """Decode every row of ``orders`` in parallel, in ``chunks``; return the peaks."""
    peaks = np.empty(len(orders), np.int64)
    for c in nb.prange(chunks):
        work = order_workspace(len(sizes), index[4].shape[1])
        for i in range(c, len(orders), chunks):
            peaks[i] = decode_order_row(
                orders[i], prefix[i], known[i], sizes, alignments, index, pinned, best_fit, work, offsets[i]
            )
    return peaks
