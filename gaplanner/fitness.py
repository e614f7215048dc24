"""Population fitness: decode every individual at once and score it.

An individual is an allocation order (a row of a 2-D int64 array). Its
scores are the *peak* of its first-fit placement (primary, minimised) and
seed 003's *contiguity of reuse* (secondary, maximised): in the sequence of
blocks sorted by the start address they were given, the share of adjacent
pairs in a reuse relation, i.e. not conflicting, with the later block not
larger than the earlier one, so it can sit in the space the earlier one held.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from gaplanner.placement import Decoder
from gaplanner.problem import Problem


@dataclass(frozen=True)
class Scores:
    """Fitness of a population, one entry (or row) per individual."""

    peaks: np.ndarray  # int64
    top_blocks: np.ndarray  # int64: how many blocks end at the peak
    contiguity: np.ndarray  # float64 in [0, 1]
    offsets: np.ndarray  # int64, (population, blocks)

    def ranking(self, use_top_blocks: bool = True, use_contiguity: bool = True) -> np.ndarray:
        """Individuals best first: by peak, then fewer blocks at the peak, then higher contiguity.

        Both tie-breaks are optional (for the ablation). Fewer blocks at the peak
        is a step towards a lower peak: each one moved down is one less to move.
        """
        keys = [self.peaks]
        if use_top_blocks:
            keys.insert(0, self.top_blocks)
        if use_contiguity:
            keys.insert(0, -self.contiguity)
        return np.lexsort(keys)

    def take(self, index: np.ndarray) -> Scores:
        return Scores(self.peaks[index], self.top_blocks[index], self.contiguity[index], self.offsets[index])

    def join(self, other: Scores) -> Scores:
        return Scores(
            np.concatenate([self.peaks, other.peaks]),
            np.concatenate([self.top_blocks, other.top_blocks]),
            np.concatenate([self.contiguity, other.contiguity]),
            np.concatenate([self.offsets, other.offsets]),
        )

    def put(self, index: np.ndarray, other: Scores) -> None:
        """Overwrite the individuals at ``index`` with ``other``'s."""
        self.peaks[index] = other.peaks
        self.top_blocks[index] = other.top_blocks
        self.contiguity[index] = other.contiguity
        self.offsets[index] = other.offsets


@nb.njit(cache=True, inline="always")
def _conflict(a, b, interval, lower, upper, indptr, sorted_indices):
    if interval:
        return lower[a] < upper[b] and lower[b] < upper[a]
    row = sorted_indices[indptr[a] : indptr[a + 1]]
    k = np.searchsorted(row, b)
    return k < len(row) and row[k] == b


@nb.njit(cache=True)
def _contiguity(address_orders, sizes, interval, lower, upper, indptr, sorted_indices):
    population, n = address_orders.shape
    result = np.zeros(population)
    if n < 2:
        return result
    for i in range(population):  # serial: too little work per individual to pay for threads
        seq = address_orders[i]
        reuse = 0
        for p in range(n - 1):
            a, b = seq[p], seq[p + 1]
            if sizes[b] <= sizes[a] and not _conflict(a, b, interval, lower, upper, indptr, sorted_indices):
                reuse += 1
        result[i] = reuse / (n - 1)
    return result


def address_order(orders: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each order re-sorted by the offsets it decoded to (ties keep their order).

    This is seed 003's step "pre-allocate, then sort by start address". First-fit
    decoding of the re-sorted order never places a block higher than before, so
    the step never worsens an individual.
    """
    ranks = np.argsort(np.take_along_axis(offsets, orders, axis=1), axis=1, kind="stable")
    return np.take_along_axis(orders, ranks, axis=1)


class PopulationFitness:
    """Scores whole populations of orders for one problem."""

    def __init__(self, problem: Problem, use_contiguity: bool = True) -> None:
        self.problem = problem
        self.decoder = Decoder.for_problem(problem)
        self.use_contiguity = use_contiguity
        self.evaluations = 0
        indptr, indices = problem.conflicts.indptr, problem.conflicts.indices
        self._sorted_indices = indices
        if use_contiguity and not problem.interval_conflicts:
            self._sorted_indices = np.concatenate(
                [np.sort(indices[indptr[i] : indptr[i + 1]]) for i in range(problem.n)]
            ).astype(np.int32)

    def __call__(self, orders: np.ndarray) -> tuple[np.ndarray, Scores]:
        """Decode ``orders``; return them re-sorted by address, and their scores."""
        orders = np.ascontiguousarray(orders, np.int64)
        peaks, offsets = self.decoder.decode_population(orders)
        self.evaluations += len(orders)
        by_address = address_order(orders, offsets)
        if self.use_contiguity:
            p = self.problem
            contiguity = _contiguity(
                by_address,
                p.sizes,
                p.interval_conflicts,
                p.lower,
                p.upper,
                p.conflicts.indptr,
                self._sorted_indices,
            )
        else:
            contiguity = np.zeros(len(orders))
        top_blocks = np.count_nonzero(offsets + self.problem.sizes == peaks[:, None], axis=1)
        return by_address, Scores(peaks, top_blocks, contiguity, offsets)
