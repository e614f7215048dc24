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

import numpy as np

from gaplanner import native
from gaplanner.errors import InputError
from gaplanner.native import _decoder
from gaplanner.problem.order import OrderIndex
from gaplanner.problem.problem import Problem
from gaplanner.search.interval_decoder import IntervalIndex, decode_interval_population
from gaplanner.search.neighbours import padded_neighbours, pair_free_index, worst_end
from gaplanner.search.order_decoder import decode_order_population

INT32_SENTINEL = np.iinfo(np.int32).max // 2
INT64_SENTINEL = np.iinfo(np.int64).max // 2
# First-fit sorts a block's ranges after this many sweeps if it has SORT_MIN_RANGES (first_fit_deep).
SWEEPS_BEFORE_SORT = 16
SORT_MIN_RANGES = 512


def thread_chunks(rows: int) -> int:
    """How many chunks a parallel loop over ``rows`` rows is cut into: a few per thread.

    Each chunk allocates one workspace and decodes rows ``c``,
    ``c + chunks``, ...; more chunks than threads lets a thread that the
    machine slows down hand rows to the others.
    """
    return max(1, min(rows, 4 * native.threads()))


def decode_population_into(
    orders, prefix, known, sizes, alignments, indptr, indices, pinned, best_fit, index_bits, sentinel,
    offsets, chunks, threads,
):  # fmt: skip
    """Decode every row of ``orders`` in parallel, rows ``c``, ``c + chunks``, ... per chunk on ``threads``
    threads, into ``offsets``; return the peaks.

    The ``pinned`` blocks (indices; their offsets are in ``known`` too) come
    first, at their fixed offsets, wherever the order puts them. Then the first
    ``prefix[i]`` blocks of row ``i`` take their offsets from ``known[i]``; the
    rest are placed by first-fit (or best-fit) after them. ``sizes`` and
    ``alignments`` are int32 or int64 (the range table's type), ``indices`` uint32.
    """
    return _decoder.decode_population_into(
        orders, prefix, known, sizes, alignments, indptr, indices, pinned, best_fit, index_bits, sentinel,
        offsets, chunks, threads,
    )  # fmt: skip


@dataclass(frozen=True)
class Decoder:
    """The arrays a decode needs, checked once per problem.

    Sizes and the range table are int32 when every offset fits, else int64.
    Neighbour indices are unsigned (uint32): the gather needs no wraparound test.
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
                best_fit, offsets, thread_chunks(len(orders)), native.threads(),
            )  # fmt: skip
            return peaks, offsets
        if self.intervals is not None:
            peaks = decode_interval_population(
                orders, prefix, known, self.sizes, self.alignments, self.intervals.arrays(), self.pinned,
                best_fit, offsets, thread_chunks(len(orders)), native.threads(),
            )  # fmt: skip
            return peaks, offsets
        peaks = decode_population_into(
            orders, prefix, known,
            self.sizes, self.alignments, self.indptr, self.indices, self.pinned,
            best_fit, self.index_bits, self.sentinel, offsets, thread_chunks(len(orders)), native.threads(),
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
