"""Placing blocks across memories: an order in, each block's memory and offset out.

Blocks are taken in the order given (blocks pinned to an offset first, then
those restricted to some memories, by a pin or by the devices using them,
then the others). Each goes into the fastest memory it may use where it fits within
that memory's capacity, at the lowest aligned offset clear of every
conflicting block already in that memory (first-fit there), else into the
next memory. An order for which some block fits nowhere (the last memory has
a capacity too) is infeasible.

With costs that grow from memory to memory, some order reaches every cheapest
placement: take its fast-memory blocks by offset, then the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from gaplanner.compiled import njit
from gaplanner.problem.problem import Problem

#: An infeasible order's cost.
INFEASIBLE = np.inf


@njit
def _first_fit(size, alignment, starts, ends, count):
    """Lowest aligned offset where ``[offset, offset + size)`` meets none of the ranges."""
    order = np.argsort(starts[:count], kind="mergesort")
    candidate = 0
    for p in range(count):
        k = order[p]
        if starts[k] >= candidate + size:
            break
        if ends[k] > candidate:
            candidate = (ends[k] + alignment - 1) // alignment * alignment
    return candidate


@njit
def decode_memories_row(
    order, sizes, alignments, capacities, indptr, indices, allowed, pinned_memory, pinned_offset,
    memory_of, offsets, peaks,
):  # fmt: skip
    """Place the blocks of ``order`` (see the module docstring); return whether every block fits.

    ``alignments``, ``allowed``: ``(blocks, memories)``; ``capacities``: -1 for unbounded.
    Writes ``memory_of``, ``offsets`` and each memory's ``peaks``.
    """
    n, memories = len(sizes), len(capacities)
    memory_of[:] = -1
    peaks[:] = 0
    width = 1
    for b in range(n):
        width = max(width, indptr[b + 1] - indptr[b])
    starts = np.empty(width, np.int64)
    ends = np.empty(width, np.int64)
    for b in range(n):
        if pinned_offset[b] >= 0:
            m = max(pinned_memory[b], 0)
            memory_of[b], offsets[b] = m, pinned_offset[b]
            peaks[m] = max(peaks[m], offsets[b] + sizes[b])
    for p in range(2 * n):  # blocks restricted to some memories first: they have fewer to go to
        b = order[p % n]
        if memory_of[b] >= 0 or (p < n) == allowed[b].all():
            continue
        for m in range(memories):
            if not allowed[b, m] or (capacities[m] >= 0 and sizes[b] > capacities[m]):
                continue
            count = 0
            for e in range(indptr[b], indptr[b + 1]):
                j = indices[e]
                if memory_of[j] == m:
                    starts[count], ends[count] = offsets[j], offsets[j] + sizes[j]
                    count += 1
            offset = _first_fit(sizes[b], alignments[b, m], starts, ends, count)
            if capacities[m] < 0 or offset + sizes[b] <= capacities[m]:
                memory_of[b], offsets[b] = m, offset
                peaks[m] = max(peaks[m], offset + sizes[b])
                break
        if memory_of[b] < 0:
            return False
    return True


@njit(parallel=True)
def _decode_population(
    orders, sizes, alignments, capacities, indptr, indices, allowed, pinned_memory, pinned_offset,
    memory_of, offsets, peaks, feasible,
):  # fmt: skip
    for i in nb.prange(len(orders)):
        feasible[i] = decode_memories_row(
            orders[i], sizes, alignments, capacities, indptr, indices, allowed, pinned_memory,
            pinned_offset, memory_of[i], offsets[i], peaks[i],
        )  # fmt: skip


@dataclass(frozen=True)
class Placements:
    """Decoded orders: per row each block's memory and offset, each memory's peak, the cost."""

    memory_of: np.ndarray
    offsets: np.ndarray
    peaks: np.ndarray
    costs: np.ndarray

    def keys(self) -> np.ndarray:
        """Row indices best first: least cost, then the smallest sum of peaks."""
        return np.lexsort((self.peaks.sum(axis=1), self.costs))


@dataclass(frozen=True)
class MemoryDecoder:
    """The arrays a decode across memories needs, built once per problem."""

    sizes: np.ndarray
    alignments: np.ndarray
    capacities: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    allowed: np.ndarray
    pinned_memory: np.ndarray
    pinned_offset: np.ndarray
    cost_table: np.ndarray

    @classmethod
    def for_problem(cls, problem: Problem) -> MemoryDecoder:
        system = problem.memories
        if system is None:
            raise ValueError("the problem lists no memories")
        return cls(
            problem.sizes.astype(np.int64),
            system.alignment_table(problem.alignments),
            system.capacities,
            problem.conflicts.indptr.astype(np.int64),
            problem.conflicts.indices.astype(np.int64),
            np.ascontiguousarray(system.allowed, np.bool_),
            system.pinned_memory.astype(np.int64),
            problem.pinned.astype(np.int64),
            system.cost_table(),
        )

    def decode(self, orders: np.ndarray) -> Placements:
        """Decode every row of ``orders`` (one order of the block indices per row)."""
        orders = np.ascontiguousarray(np.atleast_2d(orders), np.int64)
        rows, n = orders.shape
        memory_of = np.empty((rows, n), np.int64)
        offsets = np.empty((rows, n), np.int64)
        peaks = np.empty((rows, len(self.capacities)), np.int64)
        feasible = np.empty(rows, np.bool_)
        _decode_population(
            orders, self.sizes, self.alignments, self.capacities, self.indptr, self.indices, self.allowed,
            self.pinned_memory, self.pinned_offset, memory_of, offsets, peaks, feasible,
        )  # fmt: skip
        safe = np.maximum(memory_of, 0)
        costs = np.take_along_axis(self.cost_table, safe.T, axis=1).T.sum(axis=1)
        costs = np.where(feasible, costs, INFEASIBLE)
        return Placements(memory_of, offsets, peaks, costs)
