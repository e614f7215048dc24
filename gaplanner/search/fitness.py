"""Population fitness: decode every individual at once and score it.

An individual is an allocation order (a row of a 2-D int64 array). Its
scores, in the order they rank it:

1. the *peak* of its first-fit placement (minimised);
2. its *excess*: the area (bytes x lifetime) of block memory above the lower
   bound (minimised). Two plans with the same peak are rarely equally close to
   a lower one: the excess says how much must still come down, so selection
   has a slope to follow across the long plateaus of equal peaks;
3. its *contiguity of reuse* (maximised): in the sequence of blocks
   sorted by the start address they were given, the share of adjacent pairs
   in a reuse relation, i.e. not conflicting, with the later block not larger
   than the earlier one, so it can sit in the space the earlier one held.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner import native
from gaplanner.native import _fitness
from gaplanner.problem.problem import Problem
from gaplanner.search.decoder import Decoder, thread_chunks


@dataclass(frozen=True)
class Scores:
    """Fitness of a population, one entry (or row) per individual."""

    peaks: np.ndarray  # int64
    excess: np.ndarray  # float64: block area (bytes x lifetime) above the lower bound
    contiguity: np.ndarray  # float64 in [0, 1]
    offsets: np.ndarray  # int64, (population, blocks)

    def ranking(self, use_excess: bool = True, use_contiguity: bool = True) -> np.ndarray:
        """Individuals best first: by peak, then lower excess, then higher contiguity.

        Both tie-breaks are optional (for the ablation).
        """
        keys = [self.peaks]
        if use_excess:
            keys.insert(0, self.excess)
        if use_contiguity:
            keys.insert(0, -self.contiguity)
        return np.lexsort(keys)

    def take(self, index: np.ndarray) -> Scores:
        return Scores(self.peaks[index], self.excess[index], self.contiguity[index], self.offsets[index])

    def join(self, other: Scores) -> Scores:
        return Scores(
            np.concatenate([self.peaks, other.peaks]),
            np.concatenate([self.excess, other.excess]),
            np.concatenate([self.contiguity, other.contiguity]),
            np.concatenate([self.offsets, other.offsets]),
        )

    def put(self, index: np.ndarray, other: Scores) -> None:
        """Overwrite the individuals at ``index`` with ``other``'s."""
        self.peaks[index] = other.peaks
        self.excess[index] = other.excess
        self.contiguity[index] = other.contiguity
        self.offsets[index] = other.offsets


def _sort_by_address(order: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    """Write ``order`` stably sorted by ``offsets`` into ``out`` (insertion sort on the nearly sorted
    orders of children, a merge sort past a linear budget of moves)."""
    _fitness.sort_by_address(order, offsets, out)


class PopulationFitness:
    """Scores whole populations of orders for one problem."""

    def __init__(self, problem: Problem, use_contiguity: bool = True) -> None:
        self.problem = problem
        self.decoder = Decoder.for_problem(problem)
        self.use_contiguity = use_contiguity
        self.evaluations = 0
        # Contiguity reads the lifetimes on an interval problem, and on a multi-core problem decoded
        # without pairs those on its time axis (a tie-break only: the pairs are what it cannot hold).
        pairs = not problem.interval_conflicts and self.decoder.order is None
        indptr, indices = np.zeros(1, np.int64), np.zeros(0, np.int32)
        if pairs:
            indptr, indices = problem.conflicts.indptr, problem.conflicts.indices
        sorted_indices = indices
        if use_contiguity and pairs:
            sorted_indices = np.concatenate(
                [np.sort(indices[indptr[i] : indptr[i + 1]]) for i in range(problem.n)]
            ).astype(np.int32)
        # Lifetime lengths on the problem's time axis (a graph's: positions in a linear extension of
        # its operators), at least 1 so that every block's bytes above the bound count.
        self._durations = np.maximum(problem.upper - problem.lower, 1).astype(np.float64)
        self._contiguity_args = (
            problem.sizes, not pairs, problem.lower, problem.upper, indptr, sorted_indices
        )  # fmt: skip
        self._intervals = self.decoder.intervals.arrays() if self.decoder.intervals is not None else None

    def __call__(
        self, orders: np.ndarray, known: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, Scores]:
        """Decode ``orders``; return them re-sorted by address, and their scores.

        ``known``: ``(prefix, offsets)``: the first ``prefix[i]`` blocks of
        ``orders[i]`` are those of an individual already scored, with offsets
        ``offsets[i]`` (a child's parent, say); they keep them and only the rest
        of the row is decoded.
        """
        orders = np.ascontiguousarray(orders, np.int64)
        population = len(orders)
        d = self.decoder
        offsets = np.empty(orders.shape, np.int64)
        if known is None:
            known = (np.zeros(population, np.int64), offsets)
        scores = Scores(np.empty(population, np.int64), np.empty(population), np.zeros(population), offsets)
        by_address = np.empty_like(orders)
        if d.order is not None:
            scores.peaks[:], _ = d.decode_population(orders, template=known, out=offsets)
            _fitness.score_decoded(
                orders, offsets, d.sizes, self._durations, self.problem.lower_bound, self._contiguity_args,
                self.use_contiguity, by_address, scores.excess, scores.contiguity, thread_chunks(population),
                native.threads(),
            )  # fmt: skip
            self.evaluations += population
            return by_address, scores
        known_offsets = d.known_offsets(np.ascontiguousarray(known[1], np.int64))
        scored = (
            self._durations, self.problem.lower_bound, self._contiguity_args, self.use_contiguity,
            by_address, offsets, scores.peaks, scores.excess, scores.contiguity, thread_chunks(population),
            native.threads(),
        )  # fmt: skip
        prefix = np.ascontiguousarray(known[0], np.int64)
        if d.intervals is not None:
            _fitness.score_lifetimes(orders, prefix, known_offsets, d.sizes, d.alignments, self._intervals,
                                     d.pinned, True, *scored)  # fmt: skip
        else:
            _fitness.score_pairs(orders, prefix, known_offsets, d.sizes, d.alignments, d.indptr, d.indices,
                                 d.pinned, d.index_bits, d.sentinel, True, *scored)  # fmt: skip
        self.evaluations += population
        return by_address, scores


def shared_prefix(orders: np.ndarray, templates: np.ndarray) -> np.ndarray:
    """Per row, how many leading genes ``orders`` has in common with ``templates``."""
    differs = orders != templates
    return np.where(differs.any(axis=1), differs.argmax(axis=1), orders.shape[1])
