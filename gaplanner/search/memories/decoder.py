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

import numpy as np

from gaplanner import native
from gaplanner.native import _memories
from gaplanner.problem.problem import Problem

#: An infeasible order's cost.
INFEASIBLE = np.inf


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
        _memories.decode_population(
            orders, self.sizes, self.alignments, self.capacities, self.indptr, self.indices, self.allowed,
            self.pinned_memory, self.pinned_offset, memory_of, offsets, peaks, feasible, native.threads(),
        )  # fmt: skip
        safe = np.maximum(memory_of, 0)
        costs = np.take_along_axis(self.cost_table, safe.T, axis=1).T.sum(axis=1)
        costs = np.where(feasible, costs, INFEASIBLE)
        return Placements(memory_of, offsets, peaks, costs)
