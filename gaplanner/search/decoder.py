"""Decoding an allocation order into offsets (the GA's hot path).

Blocks are placed one by one in the given order. *First-fit* puts a block at
the lowest aligned offset where it overlaps no already-placed conflicting
block; *best-fit* puts it into the smallest gap between placed conflicting
blocks that holds it (the top of the arena when none does).

The placed blocks' address ranges live in one ``(2, n + 1)`` table, a column
per block, where a block not yet placed holds a sentinel range above every
offset. First-fit copies the ranges of all of a block's neighbours, placed or
not (no test per edge), and sweeps them, jumping the candidate offset past
every overlapping range until none overlaps; the neighbour lists are padded
to whole unrolled vectors, so each sweep is a vector loop with no tail. A block
with hundreds of ranges stacked deep finishes in one pass over them sorted by
start instead. Best-fit keeps only the placed neighbours, sorts them by start
(an in-place sort of packed integer keys) and scans the gaps once. The
arithmetic is int32 when every offset fits, which halves the memory traffic
and doubles the SIMD width (``experiments/bench_decoder.py``).

A decode may start part-way through an order: when the first ``k`` blocks of
an order are those of an order already decoded, their offsets are copied from
it and only the rest is placed (:meth:`Decoder.decode_population`'s
``template``). This is exact because first-fit places each block by the
ranges of the blocks before it alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from gaplanner.compiled import njit
from gaplanner.errors import InputError
from gaplanner.problem.order import OrderIndex
from gaplanner.problem.problem import Problem
from gaplanner.search import kernels
from gaplanner.search.interval_decoder import IntervalIndex, decode_interval_population
from gaplanner.search.neighbours import padded_neighbours, pair_free_index, worst_end
from gaplanner.search.order_decoder import decode_order_population

INT32_SENTINEL = np.iinfo(np.int32).max // 2
INT64_SENTINEL = np.iinfo(np.int64).max // 2
# First-fit sorts a block's ranges after this many sweeps if it has SORT_MIN_RANGES (_first_fit_deep).
SWEEPS_BEFORE_SORT = 16
SORT_MIN_RANGES = 512


@njit(inline="always", error_model="numpy")
def _align_up(x, alignment):
    return x if alignment == 1 else (x + alignment - 1) // alignment * alignment


@njit(inline="always", error_model="numpy")
def _gather(indices, start, count, placed, starts, ends):
    """Copy the ranges of the ``count`` neighbours from ``indices[start]`` on, placed or not.

    A block not placed yet holds the sentinel range, which no sweep hits, so
    first-fit needs no test per edge here: the copy is three loads and two
    stores, and the sweeps run over whole vectors (the lists are padded to
    ``NEIGHBOUR_LANES``). ``start`` is unsigned, so the index is too: no
    negative-index wraparound test per edge.
    """
    for k in range(count):
        j = indices[start + np.uint64(k)]
        starts[k] = placed[0, j]
        ends[k] = placed[1, j]


@njit(inline="always", error_model="numpy")
def _gather_placed(indices, start, count, placed, starts, ends):
    """Copy the ranges of the placed neighbours only; return their count.

    For the paths that sort the ranges (best-fit, a block with many of them),
    where the unplaced ones would cost more than the test. Every row is copied
    and the count only advances past placed ones: no branch per edge.
    """
    sentinel, placed_count = placed[0, placed.shape[1] - 1], 0
    for k in range(count):
        j = indices[start + np.uint64(k)]
        starts[placed_count] = placed[0, j]
        ends[placed_count] = placed[1, j]
        placed_count += placed[0, j] != sentinel
    return placed_count


@njit(inline="always", error_model="numpy")
def _sort_by_start(starts, count, keys, index_bits):
    """Fill ``keys[:count]`` with ``start << index_bits | k``, sorted: the ranges in order of start."""
    for k in range(count):
        keys[k] = (np.int64(starts[k]) << index_bits) | k
    keys[:count].sort()


@njit(inline="always", error_model="numpy")
def _sweep(size, alignment, starts, ends, count, candidate, sweeps):
    """Jump the candidate past every range overlapping it, at most ``sweeps`` times.

    No offset below the highest end of the ranges overlapping the candidate
    fits, so the candidate moves there, until no range overlaps it. Branch-free,
    so the loop vectorizes. Returns ``(candidate, fits)``.
    """
    # Numba widens int32 arithmetic to int64: cast back so the sweep compares int32 lanes.
    narrow = starts.dtype.type
    candidate = narrow(candidate)
    for _ in range(sweeps):
        top = candidate
        limit = narrow(candidate + size)
        for k in range(count):
            hit = (starts[k] < limit) & (ends[k] > candidate)
            top = max(top, ends[k] if hit else candidate)
        if top == candidate:
            return candidate, True
        candidate = narrow(_align_up(top, alignment))
    return candidate, False


@njit(inline="always", error_model="numpy")
def _first_fit_offset(size, alignment, starts, ends, count):
    """Lowest aligned offset where ``[offset, offset + size)`` meets none of the ranges."""
    return _sweep(size, alignment, starts, ends, count, 0, count + 1)[0]  # each jump passes a range


@njit(error_model="numpy")
def _first_fit_deep(size, alignment, starts, ends, count, index_bits, scratch):
    """First-fit for a block with many ranges: a few sweeps, then one pass in order of start.

    Each sweep climbs one layer of a stack of ranges, and the long-lived blocks
    of a large graph sit under stacks hundreds of layers deep, where most of a
    decode's range tests go to the few blocks that need many sweeps. So a
    block with ``SORT_MIN_RANGES`` or more ranges sweeps ``SWEEPS_BEFORE_SORT``
    times, then finishes in one pass over the ranges still above the
    candidate, sorted by start. A block with fewer ranges sweeps to the end:
    sorting them costs more than the sweeps it saves.
    """
    candidate, fits = _sweep(size, alignment, starts, ends, count, 0, SWEEPS_BEFORE_SORT)
    if fits:
        return candidate
    return _first_fit_by_start(size, alignment, starts, ends, count, candidate, index_bits, scratch)


@njit(error_model="numpy")
def _first_fit_by_start(size, alignment, starts, ends, count, candidate, index_bits, scratch):
    """First-fit from ``candidate``, in one pass over the ranges ending above it in order of start."""
    above, spare, buckets = scratch[0], scratch[1], scratch[2]
    live = 0
    for k in range(count):
        above[live] = k
        live += ends[k] > candidate
    _sort_indices(above, live, starts, index_bits, spare, buckets)
    candidate = np.int64(candidate)
    for p in range(live):
        k = above[p]
        if starts[k] >= candidate + size:
            break
        if ends[k] > candidate:
            candidate = _align_up(np.int64(ends[k]), alignment)
    return candidate


@njit(error_model="numpy")
def _sort_indices(index, count, keys, index_bits, spare, buckets):
    """Sort ``index[:count]`` (each below ``2**index_bits``) by ``keys[index]``.

    A counting pass into about ``count`` buckets of equal width, then an insertion
    sort that moves keys within their buckets. Keys bunched into a few buckets
    would make that quadratic: past a linear budget of moves, sort packed
    ``key << index_bits | index`` integers instead.
    """
    if count < 2:
        return
    low, high = INT64_SENTINEL, 0
    for p in range(count):
        low = min(low, np.int64(keys[index[p]]))
        high = max(high, np.int64(keys[index[p]]))
    shift = 0
    while (high - low) >> shift >= count:
        shift += 1
    firsts = np.zeros(((high - low) >> shift) + 2, np.int64)
    for p in range(count):
        buckets[p] = (np.int64(keys[index[p]]) - low) >> shift
        firsts[buckets[p] + 1] += 1
    for d in range(len(firsts) - 1):
        firsts[d + 1] += firsts[d]
    for p in range(count):
        spare[firsts[buckets[p]]] = index[p]
        firsts[buckets[p]] += 1
    budget = 8 * count
    for p in range(1, count):
        k = spare[p]
        key, q = keys[k], p
        while q > 0 and keys[spare[q - 1]] > key:
            spare[q] = spare[q - 1]
            q -= 1
        spare[q] = k
        budget -= p - q
        if budget < 0:
            for r in range(count):
                spare[r] = (np.int64(keys[index[r]]) << index_bits) | index[r]
            spare[:count].sort()
            for r in range(count):
                index[r] = spare[r] & ((1 << index_bits) - 1)
            return
    index[:count] = spare[:count]


@njit(error_model="numpy")
def _best_fit_offset(size, alignment, starts, ends, count, keys, index_bits):
    """Offset of the smallest gap between the ranges that holds ``size`` (else their top)."""
    _sort_by_start(starts, count, keys, index_bits)
    mask = (1 << index_bits) - 1
    frontier, best, best_gap = 0, -1, np.iinfo(np.int64).max
    for p in range(count):
        k = keys[p] & mask
        start = _align_up(frontier, alignment)
        gap = starts[k] - start
        if size <= gap < best_gap:
            best, best_gap = start, gap
        frontier = max(frontier, np.int64(ends[k]))
    return best if best >= 0 else _align_up(frontier, alignment)


@njit(error_model="numpy")
def workspace(sizes, indptr):
    """The arrays one thread's decodes write into, reused row after row.

    ``placed`` holds the placed blocks' ranges, starts in row 0 and ends in row
    1; column ``n`` is the never-placed block the neighbour lists are padded
    with. Allocating them per thread, not per row, keeps allocation out of the
    hot loop.
    """
    n = len(sizes)
    width = 1
    for b in range(n):
        width = max(width, indptr[b + 1] - indptr[b])
    placed = np.empty((2, n + 1), sizes.dtype)
    return placed, np.empty(width, sizes.dtype), np.empty(width, sizes.dtype), np.empty((3, width), np.int64)


@njit(error_model="numpy")
def _sorting_offset(
    size, alignment, indices, start, degree, best_fit, index_bits, placed, starts, ends, scratch
):
    """Offset of a block by best-fit, or by first-fit when it has many neighbours.

    Both sort the ranges, so they gather the placed neighbours only. Kept out
    of :func:`decode_row`'s loop, which stays small for the common case.
    """
    count = _gather_placed(indices, start, degree, placed, starts, ends)
    if best_fit:
        return _best_fit_offset(size, alignment, starts, ends, count, scratch[0], index_bits)
    if count >= SORT_MIN_RANGES:
        return _first_fit_deep(size, alignment, starts, ends, count, index_bits, scratch)
    return _first_fit_offset(size, alignment, starts, ends, count)


@njit(error_model="numpy")
def decode_row(
    order, first, known, sizes, alignments, indptr, indices, pinned, best_fit, index_bits, sentinel, work,
    offsets,
):  # fmt: skip
    """Place the blocks of ``order``; write every block's offset; return the peak.

    The ``pinned`` blocks (indices; their offsets are in ``known`` too) come
    first, at their fixed offsets, wherever the order puts them. Then the first
    ``first`` blocks of the order take their offsets from ``known``; the rest
    are placed by first-fit (or best-fit) after them. ``work``: a :func:`workspace`.
    """
    placed, starts, ends, scratch = work
    placed[:] = sentinel
    peak = 0
    for b in pinned:
        placed[0, b] = known[b]
        placed[1, b] = known[b] + sizes[b]
        peak = max(peak, np.int64(placed[1, b]))
    for b in order[:first]:
        placed[0, b] = known[b]
        placed[1, b] = known[b] + sizes[b]
        peak = max(peak, np.int64(placed[1, b]))
    for p in range(first, len(sizes)):
        b = np.uint32(order[p])  # unsigned block indices: no negative-index wraparound in the gather
        if len(pinned) and placed[0, b] != sentinel:
            continue
        start = np.uint64(indptr[b])  # where b's neighbour list starts in ``indices``
        degree = indptr[b + np.uint32(1)] - indptr[b]
        if not best_fit and degree < SORT_MIN_RANGES:
            _gather(indices, start, degree, placed, starts, ends)
            offset = _first_fit_offset(sizes[b], alignments[b], starts, ends, degree)
        else:
            offset = _sorting_offset(
                sizes[b], alignments[b], indices, start, degree, best_fit, index_bits,
                placed, starts, ends, scratch,
            )  # fmt: skip
        placed[0, b] = offset
        placed[1, b] = offset + sizes[b]
        peak = max(peak, np.int64(offset + sizes[b]))
    offsets[:] = placed[0, : len(sizes)]
    return peak


def thread_chunks(rows: int) -> int:
    """How many chunks a parallel loop over ``rows`` rows is cut into: a few per thread.

    Each chunk allocates one :func:`workspace` and decodes rows ``c``,
    ``c + chunks``, ...; more chunks than threads lets a thread that the
    machine slows down hand rows to the others.
    """
    return max(1, min(rows, 4 * nb.get_num_threads()))


@njit(parallel=True, error_model="numpy")
def decode_population_into(
    orders, prefix, known, sizes, alignments, indptr, indices, pinned, best_fit, index_bits, sentinel,
    offsets, chunks,
):  # fmt: skip
    """Decode every row of ``orders`` in parallel, in ``chunks`` (see :func:`decode_row`); return peaks."""
    peaks = np.empty(len(orders), np.int64)
    for c in nb.prange(chunks):
        work = workspace(sizes, indptr)
        for i in range(c, len(orders), chunks):
            peaks[i] = decode_row(
                orders[i], prefix[i], known[i], sizes, alignments, indptr, indices, pinned,
                best_fit, index_bits, sentinel, work, offsets[i],
            )  # fmt: skip
    return peaks


@dataclass(frozen=True)
class Decoder:
    """The arrays a decode needs, checked once per problem.

    Sizes and the range table are int32 when every offset fits, else int64.
    Neighbour indices are unsigned: numba then skips the wraparound test of
    negative indices in the gather.
    The neighbour lists are padded to multiples of ``NEIGHBOUR_LANES``.
    ``pinned`` lists the blocks with a fixed offset, ``pinned_offsets`` has it
    (-1 for the others). ``intervals``: set when the blocks are placed from their
    lifetimes, not from a pair list (then ``indptr``/``indices`` are empty and the
    arrays int64); ``order``: the same for a multi-core problem, placed from its
    happens-before vectors (see :func:`~gaplanner.search.neighbours.pair_free_index`).
    """

    sizes: np.ndarray
    alignments: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    index_bits: int
    sentinel: int
    pinned: np.ndarray
    pinned_offsets: np.ndarray
    intervals: IntervalIndex | None = None
    order: OrderIndex | None = None

    def known_offsets(self, known: np.ndarray) -> np.ndarray:
        """``known`` with every pinned block's fixed offset written in (a copy if it changes)."""
        if not len(self.pinned):
            return known
        known = known.copy()
        known[:, self.pinned] = self.pinned_offsets[self.pinned]
        return known

    @classmethod
    def for_problem(cls, problem: Problem, population: bool = True, pairs: bool | None = None) -> Decoder:
        """The decoder of ``problem``'s orders; ``population=False``: of one order (see uses_intervals).

        ``pairs``: True to decode from the pair list, False without (see :func:`pair_free_index`).
        """
        kernels.prepare()  # before the first parallel decode in this process
        pinned = np.flatnonzero(problem.pinned >= 0).astype(np.int64)
        index = pair_free_index(problem, population, pairs)
        if index is not None:
            kind = (index, None) if isinstance(index, IntervalIndex) else (None, index)
            empty = np.zeros(0, np.int64)
            return cls(problem.sizes, problem.alignments, empty, empty.astype(np.uint32), 0, 0, pinned,
                       problem.pinned, *kind)  # fmt: skip
        degrees = problem.conflicts.degrees()
        max_degree = max(1, int(degrees.max(initial=0)))
        index_bits = max(1, max_degree.bit_length())
        top = worst_end(problem)
        if top.bit_length() + index_bits > 62:  # partial orders only: interval problems decode from lifetimes
            raise InputError(
                f"offsets up to {top} with {max_degree} neighbours exceed the decoder's 62-bit keys", "sizes"
            )
        narrow = top < INT32_SENTINEL
        dtype, sentinel = (np.int32, INT32_SENTINEL) if narrow else (np.int64, INT64_SENTINEL)
        indptr, indices = padded_neighbours(problem.conflicts.indptr, problem.conflicts.indices)
        sizes, alignments = problem.sizes.astype(dtype), problem.alignments.astype(dtype)
        return cls(sizes, alignments, indptr, indices, index_bits, sentinel, pinned, problem.pinned)

    def decode(self, order: np.ndarray, best_fit: bool = False) -> np.ndarray:
        """Offsets of one order."""
        return self.decode_population(order[None, :], best_fit)[1][0]

    def decode_population(
        self,
        orders: np.ndarray,
        best_fit: bool = False,
        template: tuple[np.ndarray, np.ndarray] | None = None,
        out: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(peaks, offsets)`` of every row of ``orders``.

        ``template``: ``(prefix, offsets)``, where the first ``prefix[i]`` blocks of
        ``orders[i]`` are the first ``prefix[i]`` of an order that decoded to
        ``offsets[i]``; those blocks keep their offsets and only the rest is placed.
        ``out``: an int64 array of ``orders``' shape to write the offsets into (it may be the
        template's offsets).
        """
        orders = np.ascontiguousarray(orders, np.int64)
        offsets = np.empty(orders.shape, np.int64) if out is None else out
        if template is None:
            prefix, known = np.zeros(len(orders), np.int64), offsets
        else:
            prefix, known = template
        known = self.known_offsets(np.ascontiguousarray(known, np.int64))
        prefix = np.ascontiguousarray(prefix, np.int64)
        if self.order is not None:
            peaks = decode_order_population(
                orders, prefix, known, self.sizes, self.alignments, self.order.arrays(), self.pinned,
                best_fit, offsets, thread_chunks(len(orders)),
            )  # fmt: skip
            return peaks, offsets
        if self.intervals is not None:
            peaks = decode_interval_population(
                orders, prefix, known, self.sizes, self.alignments, self.intervals.arrays(), self.pinned,
                best_fit, offsets, thread_chunks(len(orders)),
            )  # fmt: skip
            return peaks, offsets
        peaks = decode_population_into(
            orders, prefix, known,
            self.sizes, self.alignments, self.indptr, self.indices, self.pinned,
            best_fit, self.index_bits, self.sentinel, offsets, thread_chunks(len(orders)),
        )  # fmt: skip
        return peaks, offsets


def decode(problem: Problem, order: np.ndarray, *, best_fit: bool = False) -> np.ndarray:
    """Offsets of every block when placed in ``order`` (first-fit, or best-fit)."""
    order = np.ascontiguousarray(order, np.int64)
    if order.shape != (problem.n,) or not np.array_equal(np.sort(order), np.arange(problem.n)):
        raise ValueError("order must be a permutation of the block indices")
    return Decoder.for_problem(problem, population=False).decode(order, best_fit)


def decode_population(
    problem: Problem, orders: np.ndarray, *, best_fit: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Decode a population (2-D array, one order per row): ``(peaks, offsets)``."""
    return Decoder.for_problem(problem).decode_population(orders, best_fit)
