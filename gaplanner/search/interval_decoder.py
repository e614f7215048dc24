"""Decoding orders of interval problems without conflict pairs.

On a one-core (interval) problem two blocks conflict exactly when their
lifetimes overlap, so a block's placed neighbours can be found from the
lifetimes alone. The blocks are grouped by the length of their lifetime
(classes of lengths ``[2**c, 2**(c + 1))``) and ranked by start within a
class. A block ``b`` can overlap only the blocks of class ``c`` that start
before ``b`` ends and less than the class's longest lifetime before ``b``
starts: a contiguous run of ranks, found by two binary searches. A decode
scans those runs (their placed ranges sit in rank order, so the scan reads
memory in order and tests each with no branch), keeps the placed ones that
end after ``b`` starts, and places ``b`` among them. A run holds at most about
twice the neighbours of its class (a block of the class that starts in the
run but ended before ``b`` started is less than a class length away), so a
decode costs about what the pair-list decoder's gather does, and its memory is
O(n) whatever the number of conflicting pairs.

The gathered ranges are placed by the same rules as the pair-list decoder
(:mod:`gaplanner.search.decoder`): first-fit sweeps a few times, then sorts the
ranges by start and finishes in one pass; best-fit sorts them and scans the
gaps. Sorting uses ``argsort``, never packed keys, so any offset below
``2**63`` works at any block count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from gaplanner.compiled import njit

NOT_PLACED = np.iinfo(np.int64).max
# First-fit sweeps the ranges at most this many times before it sorts them, if there are at least
# SORT_MIN_RANGES of them (as the pair-list decoder, gaplanner.search.decoder).
SWEEPS_BEFORE_SORT = 16
SORT_MIN_RANGES = 512


@njit(inline="always")
def _align_up(x, alignment):
    return x if alignment == 1 else (x + alignment - 1) // alignment * alignment


@njit(inline="always")
def _sweep(size, alignment, starts, ends, count, sweeps):
    """Jump the candidate (from 0) past every range overlapping it, at most ``sweeps`` times.

    Branch-free, so the loop vectorizes. Returns ``(candidate, fits)``.
    """
    candidate = 0
    for _ in range(sweeps):
        top, limit = candidate, candidate + size
        for k in range(count):
            hit = (starts[k] < limit) & (ends[k] > candidate)
            top = max(top, ends[k] if hit else candidate)
        if top == candidate:
            return candidate, True
        candidate = _align_up(top, alignment)
    return candidate, False


@dataclass(frozen=True)
class IntervalIndex:
    """The lifetimes grouped by length class and ranked by start: what every decode shares."""

    lower: np.ndarray  # int64 per block
    upper: np.ndarray  # int64 per block
    rank: np.ndarray  # int64 per block: its position by (class, start, index)
    sorted_lower: np.ndarray  # int64 per rank
    sorted_upper: np.ndarray  # int64 per rank
    classes: np.ndarray  # int64 (3, classes): each non-empty class's first rank, end rank, longest lifetime

    @classmethod
    def of(cls, lower: np.ndarray, upper: np.ndarray) -> IntervalIndex:
        lower = np.ascontiguousarray(lower, np.int64)
        upper = np.ascontiguousarray(upper, np.int64)
        length = np.maximum(upper - lower, 1)
        length_class = np.floor(np.log2(length.astype(np.float64))).astype(np.int64)
        by_rank = np.lexsort((np.arange(len(lower)), lower, length_class))
        rank = np.empty(len(lower), np.int64)
        rank[by_rank] = np.arange(len(lower))
        sorted_class = length_class[by_rank]
        firsts = np.flatnonzero(np.diff(sorted_class, prepend=-1))
        ends = np.append(firsts[1:], len(lower))
        longest = np.maximum.reduceat(length[by_rank], firsts) if len(lower) else firsts
        classes = np.ascontiguousarray(np.stack([firsts, ends, longest]).astype(np.int64))
        return cls(lower, upper, rank, lower[by_rank], upper[by_rank], classes)

    def arrays(self) -> tuple:
        return self.lower, self.upper, self.rank, self.sorted_lower, self.sorted_upper, self.classes


@njit
def interval_workspace(n, classes):
    """One thread's arrays: the placed ranges by rank, the gathered ranges and the runs per class."""
    return np.empty((2, n), np.int64), np.empty((2, max(n, 1)), np.int64), np.empty((2, classes), np.int64)


@njit
def _runs(b, index, runs):
    """Fill ``runs`` with the first and end rank, per class, of the blocks that may overlap ``b``."""
    lower, upper, _, sorted_lower, _, classes = index
    for c in range(classes.shape[1]):
        first, end = classes[0, c], classes[1, c]
        run = sorted_lower[first:end]
        runs[0, c] = first + np.searchsorted(run, lower[b] - classes[2, c], side="right")
        runs[1, c] = first + np.searchsorted(run, upper[b], side="left")


@njit
def _gather(after, sorted_upper, placed, runs, found):
    """Copy the placed ranges of the runs' blocks that end after ``after`` into ``found``; their count."""
    starts, ends, found_starts, found_ends = placed[0], placed[1], found[0], found[1]
    count = 0
    for c in range(runs.shape[1]):
        for r in range(runs[0, c], runs[1, c]):
            found_starts[count] = starts[r]
            found_ends[count] = ends[r]
            count += (sorted_upper[r] > after) & (starts[r] != NOT_PLACED)
    return count


@njit
def first_fit_offset(size, alignment, starts, ends, count):
    """Lowest aligned offset clear of the ``count`` ranges.

    Sweeps, and if the ranges are many and the block is still not placed after
    ``SWEEPS_BEFORE_SORT`` sweeps (under a stack of them), finishes in one
    pass sorted by start.
    """
    sweeps = count + 1 if count < SORT_MIN_RANGES else SWEEPS_BEFORE_SORT  # each jump passes a range
    candidate, fits = _sweep(size, alignment, starts, ends, count, sweeps)
    if fits:
        return candidate
    above = np.flatnonzero(ends[:count] > candidate)  # only these can still move the candidate
    for k in above[np.argsort(starts[above])]:
        if starts[k] >= candidate + size:
            break
        if ends[k] > candidate:
            candidate = _align_up(ends[k], alignment)
    return candidate


@njit
def best_fit_offset(size, alignment, starts, ends, count):
    """Offset of the smallest gap between the ranges that holds ``size`` (the lowest such), else their top."""
    frontier, best, best_gap = 0, -1, np.iinfo(np.int64).max
    for k in np.argsort(starts[:count], kind="mergesort"):
        start = _align_up(frontier, alignment)
        gap = starts[k] - start
        if size <= gap < best_gap:
            best, best_gap = start, gap
        frontier = max(frontier, ends[k])
    return best if best >= 0 else _align_up(frontier, alignment)


@njit(inline="always")
def _place(placed, rank, b, offset, size):
    placed[0, rank[b]] = offset
    placed[1, rank[b]] = offset + size
    return offset + size


@njit
def decode_interval_row(order, first, known, sizes, alignments, index, pinned, best_fit, work, offsets):
    """Place the blocks of ``order`` (see :func:`gaplanner.search.decoder.decode_row`); return the peak.

    The ``pinned`` blocks come first at their offsets in ``known``, then the
    first ``first`` blocks of the order at theirs; the rest by first-fit (or
    best-fit) among the placed blocks live with them. ``work``: an
    :func:`interval_workspace`.
    """
    placed, found, runs = work
    lower, rank, sorted_upper = index[0], index[2], index[4]
    placed[0, :] = NOT_PLACED
    peak = 0
    for b in pinned:
        peak = max(peak, _place(placed, rank, b, known[b], sizes[b]))
    for p in range(len(order)):
        b = order[p]
        if placed[0, rank[b]] != NOT_PLACED:
            continue
        if p < first:
            offset = known[b]
        else:
            _runs(b, index, runs)
            count = _gather(lower[b], sorted_upper, placed, runs, found)
            if best_fit:
                offset = best_fit_offset(sizes[b], alignments[b], found[0], found[1], count)
            else:
                offset = first_fit_offset(sizes[b], alignments[b], found[0], found[1], count)
        peak = max(peak, _place(placed, rank, b, offset, sizes[b]))
    for b in range(len(sizes)):
        offsets[b] = placed[0, rank[b]]
    return peak


@njit(parallel=True)
def decode_interval_population(
    orders, prefix, known, sizes, alignments, index, pinned, best_fit, offsets, chunks
):  # fmt: skip
    """Decode every row of ``orders`` in parallel, in ``chunks``; return the peaks."""
    peaks = np.empty(len(orders), np.int64)
    for c in nb.prange(chunks):
        work = interval_workspace(len(sizes), index[5].shape[1])
        for i in range(c, len(orders), chunks):
            peaks[i] = decode_interval_row(
                orders[i], prefix[i], known[i], sizes, alignments, index, pinned, best_fit, work, offsets[i]
            )
    return peaks
