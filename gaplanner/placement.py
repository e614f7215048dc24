"""Decoding an allocation order into offsets (the GA's hot path).

Blocks are placed one by one in the given order. *First-fit* puts a block at
the lowest aligned offset where it overlaps no already-placed conflicting
block; *best-fit* puts it into the smallest gap between placed conflicting
blocks that holds it (the top of the arena when none does).

Both gather the placed neighbours' address ranges. First-fit sweeps them,
jumping the candidate offset past every overlapping range until none
overlaps; best-fit sorts them by start (an in-place sort of packed integer
keys) and scans the gaps once. Cost: O(sum of degrees x log degree) per decode.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Numba's OpenMP threads spin while they wait. On a machine with other work that
# spinning cost two threads 3x the time of one (GA on MiniMalloc K, load ~4:
# 9k evaluations in 5 s against 25k on one thread); passive waiting gave 31k.
# Read by libgomp when the first parallel decode loads it; a user's setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba as nb
import numpy as np

from gaplanner.errors import InputError
from gaplanner.problem import Problem


@nb.njit(cache=True, inline="always")
def _align_up(x, alignment):
    return x if alignment == 1 else (x + alignment - 1) // alignment * alignment


@nb.njit(cache=True)
def _gather_placed(b, sizes, indptr, indices, offsets, starts, ends):
    """Copy the address ranges of b's placed neighbours into starts/ends; return their count.

    Branch-free: every neighbour is written and the count only advances for
    placed ones (offset >= 0), which avoids a mispredicted branch per edge.
    """
    count = 0
    for e in range(indptr[b], indptr[b + 1]):
        j = indices[e]
        offset = offsets[j]
        starts[count] = offset
        ends[count] = offset + sizes[j]
        count += offset >= 0
    return count


@nb.njit(cache=True)
def _sort_by_start(starts, count, keys, index_bits):
    """Fill keys with ``start << index_bits | k`` for k < count, sorted."""
    for k in range(count):
        keys[k] = (starts[k] << index_bits) | k
    keys[:count].sort()


@nb.njit(cache=True)
def _first_fit_offset(size, alignment, starts, ends, count):
    """Lowest aligned offset where [offset, offset + size) meets none of the ranges.

    Jump past every range overlapping the candidate (no offset below the highest
    of their ends fits) until none does. Branch-free, so the loop vectorizes; it
    beats sorting the ranges even for thousands of them (experiments/bench_decoder.py).
    """
    candidate = 0
    while True:
        top = candidate
        limit = candidate + size
        for p in range(count):
            hit = (starts[p] < limit) & (ends[p] > candidate)
            top = max(top, ends[p] if hit else candidate)
        if top == candidate:
            return candidate
        candidate = _align_up(top, alignment)


@nb.njit(cache=True)
def _best_fit_offset(size, alignment, starts, ends, count, keys, index_bits):
    _sort_by_start(starts, count, keys, index_bits)
    mask = (1 << index_bits) - 1
    frontier = 0
    best = -1
    best_gap = np.iinfo(np.int64).max
    for p in range(count):
        k = keys[p] & mask
        start = _align_up(frontier, alignment)
        gap = starts[k] - start
        if size <= gap < best_gap:
            best, best_gap = start, gap
        if ends[k] > frontier:
            frontier = ends[k]
    return best if best >= 0 else _align_up(frontier, alignment)


@nb.njit(cache=True)
def decode_into(order, sizes, alignments, indptr, indices, best_fit, index_bits, offsets, scratch):
    """Place blocks in ``order``; write offsets; return the peak. ``scratch``: (3, max degree)."""
    starts, ends, keys = scratch[0], scratch[1], scratch[2]
    offsets[:] = -1
    peak = 0
    for b in order:
        count = _gather_placed(b, sizes, indptr, indices, offsets, starts, ends)
        if best_fit:
            offset = _best_fit_offset(sizes[b], alignments[b], starts, ends, count, keys, index_bits)
        else:
            offset = _first_fit_offset(sizes[b], alignments[b], starts, ends, count)
        offsets[b] = offset
        if offset + sizes[b] > peak:
            peak = offset + sizes[b]
    return peak


@nb.njit(cache=True, parallel=True)
def decode_population_into(orders, sizes, alignments, indptr, indices, best_fit, index_bits, offsets):
    """Decode every row of ``orders`` (one individual each) in parallel; return peaks."""
    population = orders.shape[0]
    peaks = np.empty(population, np.int64)
    width = 1
    for b in range(len(sizes)):
        width = max(width, indptr[b + 1] - indptr[b])
    for i in nb.prange(population):
        scratch = np.empty((3, width), np.int64)
        peaks[i] = decode_into(
            orders[i], sizes, alignments, indptr, indices, best_fit, index_bits, offsets[i], scratch
        )
    return peaks


@dataclass(frozen=True)
class Decoder:
    """The arrays a decode needs, checked once per problem."""

    sizes: np.ndarray
    alignments: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    index_bits: int

    @classmethod
    def for_problem(cls, problem: Problem) -> Decoder:
        max_degree = max(1, int(problem.conflicts.degrees().max(initial=0)))
        index_bits = max(1, max_degree.bit_length())
        # Offsets stay below the sum of sizes plus alignment padding; keys pack offset and index.
        worst_offset = problem.total_size + int(problem.alignments.max()) * problem.n
        if worst_offset.bit_length() + index_bits > 62:
            raise InputError(
                f"offsets up to {worst_offset} with {max_degree} neighbours exceed the decoder's 62-bit keys",
                "sizes",
            )
        return cls(
            problem.sizes,
            problem.alignments,
            problem.conflicts.indptr,
            problem.conflicts.indices,
            index_bits,
        )

    def decode(self, order: np.ndarray, best_fit: bool = False) -> np.ndarray:
        """Offsets of one order."""
        return self.decode_population(order[None, :], best_fit)[1][0]

    def decode_population(self, orders: np.ndarray, best_fit: bool = False) -> tuple[np.ndarray, np.ndarray]:
        offsets = np.empty(orders.shape, np.int64)
        peaks = decode_population_into(
            orders,
            self.sizes,
            self.alignments,
            self.indptr,
            self.indices,
            best_fit,
            self.index_bits,
            offsets,
        )
        return peaks, offsets


def warm_up() -> None:
    """Load (or compile) the population decoder with a one-block problem."""
    one = np.zeros(1, np.int64)
    decode_population_into(
        np.zeros((1, 1), np.int64), one + 1, one + 1, np.zeros(2, np.int64), np.zeros(0, np.int32),
        False, 1, np.empty((1, 1), np.int64),
    )  # fmt: skip


def decode(problem: Problem, order: np.ndarray, *, best_fit: bool = False) -> np.ndarray:
    """Offsets of every block when placed in ``order`` (first-fit, or best-fit)."""
    order = np.ascontiguousarray(order, np.int64)
    if order.shape != (problem.n,) or not np.array_equal(np.sort(order), np.arange(problem.n)):
        raise ValueError("order must be a permutation of the block indices")
    return Decoder.for_problem(problem).decode(order, best_fit)


def decode_population(
    problem: Problem, orders: np.ndarray, *, best_fit: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Decode a population (2-D array, one order per row): ``(peaks, offsets)``."""
    return Decoder.for_problem(problem).decode_population(np.ascontiguousarray(orders, np.int64), best_fit)
