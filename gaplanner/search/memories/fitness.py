"""Fitness across memories: decode a population of orders with the memories' decoder and score it.

The GA's islands (:mod:`gaplanner.search.ga.island`) call this as they call
one arena's :class:`~gaplanner.search.fitness.PopulationFitness`: orders in,
orders and scores out. An order ranks by its access cost first (an order that
places some block nowhere costs infinity), then by its peaks summed over the
memories.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.search.memories.decoder import MemoryDecoder


@dataclass(frozen=True)
class MemoryScores:
    """Decoded orders, one entry (or row) per individual: where each block went, and the scores."""

    memory_of: np.ndarray  # int64, (population, blocks)
    offsets: np.ndarray  # int64, (population, blocks), within each block's memory
    memory_peaks: np.ndarray  # int64, (population, memories)
    costs: np.ndarray  # float64: the access cost, infinite where some block fits nowhere

    @property
    def peaks(self) -> np.ndarray:
        """Each individual's bytes used, summed over the memories."""
        return self.memory_peaks.sum(axis=1)

    def ranking(self, use_excess: bool = True, use_contiguity: bool = True) -> np.ndarray:
        """Individuals best first: least cost, then least peak (one arena's tie-breaks do not apply)."""
        return np.lexsort((self.peaks, self.costs))

    def take(self, index: np.ndarray) -> MemoryScores:
        return MemoryScores(
            self.memory_of[index], self.offsets[index], self.memory_peaks[index], self.costs[index]
        )

    def join(self, other: MemoryScores) -> MemoryScores:
        return MemoryScores(
            *(np.concatenate([getattr(self, f), getattr(other, f)]) for f in FIELDS)  # type: ignore[arg-type]
        )

    def put(self, index: np.ndarray, other: MemoryScores) -> None:
        """Overwrite the individuals at ``index`` with ``other``'s."""
        for f in FIELDS:
            getattr(self, f)[index] = getattr(other, f)


FIELDS = ("memory_of", "offsets", "memory_peaks", "costs")


class MemoryFitness:
    """Decodes and scores populations across the memories; counts the orders it decoded."""

    def __init__(self, decoder: MemoryDecoder) -> None:
        self.decoder = decoder
        self.evaluations = 0

    def __call__(
        self, orders: np.ndarray, known: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, MemoryScores]:
        """The orders (as given: this decoder does not re-sort them) and their scores.

        ``known`` (what one arena's fitness reuses of a parent's decoding) is not
        used: every order is decoded whole.
        """
        orders = np.ascontiguousarray(np.atleast_2d(orders), np.int64)
        placed = self.decoder.decode(orders)
        self.evaluations += len(orders)
        return orders, MemoryScores(placed.memory_of, placed.offsets, placed.peaks, placed.costs)
