"""Decoding an allocation order into offsets (the GA's hot path).

Blocks are placed one by one in the given order. *First-fit* puts a block at
the lowest aligned offset where it overlaps no already-placed conflicting
block; *best-fit* puts it into the smallest gap between placed conflicting
blocks that holds it (the top of the arena when none does).

Both gather the placed neighbours' address ranges, sort them by start (an
insertion sort for the usual short lists, a merge sort for long ones) and
scan once. Cost: O(sum of degrees x log degree) per decode.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from gaplanner.problem import Problem

_INSERTION_SORT_LIMIT = 24


@nb.njit(cache=True, inline="always")
def _align_up(x, alignment):
    return (x + alignment - 1) // alignment * alignment


@nb.njit(cache=True)
def _placed_neighbours(b, sizes, indptr, indices, offsets, starts, ends):
    """Fill starts/ends with the placed neighbours of b, sorted by start; return their count."""
    count = 0
    for k in range(indptr[b], indptr[b + 1]):
        j = indices[k]
        if offsets[j] >= 0:
            starts[count] = offsets[j]
            ends[count] = offsets[j] + sizes[j]
            count += 1
    if count <= _INSERTION_SORT_LIMIT:
        for p in range(1, count):
            s, e = starts[p], ends[p]
            q = p
            while q > 0 and starts[q - 1] > s:
                starts[q] = starts[q - 1]
                ends[q] = ends[q - 1]
                q -= 1
            starts[q] = s
            ends[q] = e
    else:
        perm = np.argsort(starts[:count], kind="mergesort")
        sorted_ends = ends[:count][perm]
        starts[:count] = starts[:count][perm]
        ends[:count] = sorted_ends
    return count


@nb.njit(cache=True)
def _first_fit_offset(size, alignment, starts, ends, count):
    candidate = 0
    for p in range(count):
        if starts[p] >= candidate + size:
            break
        if ends[p] > candidate:
            candidate = _align_up(ends[p], alignment)
    return candidate


@nb.njit(cache=True)
def _best_fit_offset(size, alignment, starts, ends, count):
    frontier = 0
    best = -1
    best_gap = np.iinfo(np.int64).max
    for p in range(count):
        start = _align_up(frontier, alignment)
        gap = starts[p] - start
        if size <= gap < best_gap:
            best, best_gap = start, gap
        if ends[p] > frontier:
            frontier = ends[p]
    return best if best >= 0 else _align_up(frontier, alignment)


@nb.njit(cache=True)
def decode_into(order, sizes, alignments, indptr, indices, best_fit, offsets, starts, ends):
    """Place blocks in ``order``; write offsets; return the peak. Scratch arrays: max degree."""
    offsets[:] = -1
    peak = 0
    for b in order:
        count = _placed_neighbours(b, sizes, indptr, indices, offsets, starts, ends)
        if best_fit:
            offset = _best_fit_offset(sizes[b], alignments[b], starts, ends, count)
        else:
            offset = _first_fit_offset(sizes[b], alignments[b], starts, ends, count)
        offsets[b] = offset
        if offset + sizes[b] > peak:
            peak = offset + sizes[b]
    return peak


@nb.njit(cache=True, parallel=True)
def decode_population_into(orders, sizes, alignments, indptr, indices, best_fit, offsets):
    """Decode every row of ``orders`` (one individual each) in parallel; return peaks."""
    population = orders.shape[0]
    peaks = np.empty(population, np.int64)
    max_degree = 1
    for b in range(len(sizes)):
        max_degree = max(max_degree, indptr[b + 1] - indptr[b])
    for i in nb.prange(population):
        starts = np.empty(max_degree, np.int64)
        ends = np.empty(max_degree, np.int64)
        peaks[i] = decode_into(
            orders[i], sizes, alignments, indptr, indices, best_fit, offsets[i], starts, ends
        )
    return peaks


def decode(problem: Problem, order: np.ndarray, *, best_fit: bool = False) -> np.ndarray:
    """Offsets of every block when placed in ``order`` (first-fit, or best-fit)."""
    order = np.ascontiguousarray(order, np.int64)
    if order.shape != (problem.n,) or not np.array_equal(np.sort(order), np.arange(problem.n)):
        raise ValueError("order must be a permutation of the block indices")
    offsets = np.empty(problem.n, np.int64)
    scratch = max(1, int(problem.conflicts.degrees().max(initial=0)))
    decode_into(
        order,
        problem.sizes,
        problem.alignments,
        problem.conflicts.indptr,
        problem.conflicts.indices,
        best_fit,
        offsets,
        np.empty(scratch, np.int64),
        np.empty(scratch, np.int64),
    )
    return offsets


def decode_population(
    problem: Problem, orders: np.ndarray, *, best_fit: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Decode a population (2-D array, one order per row): ``(peaks, offsets)``."""
    orders = np.ascontiguousarray(orders, np.int64)
    offsets = np.empty(orders.shape, np.int64)
    peaks = decode_population_into(
        orders,
        problem.sizes,
        problem.alignments,
        problem.conflicts.indptr,
        problem.conflicts.indices,
        best_fit,
        offsets,
    )
    return peaks, offsets
