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

import numba as nb
import numpy as np

from gaplanner.compiled import njit
from gaplanner.problem.problem import Problem
from gaplanner.search.decoder import Decoder, decode_row, thread_chunks, workspace
from gaplanner.search.interval_decoder import decode_interval_row, interval_workspace


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


@njit(inline="always")
def _conflict(a, b, interval, lower, upper, indptr, sorted_indices):
    if interval:
        return lower[a] < upper[b] and lower[b] < upper[a]
    row = sorted_indices[indptr[a] : indptr[a + 1]]
    k = np.searchsorted(row, b)
    return k < len(row) and row[k] == b


@njit
def _contiguity(seq, sizes, interval, lower, upper, indptr, sorted_indices):
    """Share of adjacent pairs of ``seq`` (blocks by address) in a reuse relation."""
    if len(seq) < 2:
        return 0.0
    reuse = 0
    for p in range(len(seq) - 1):
        a, b = seq[p], seq[p + 1]
        if sizes[b] <= sizes[a] and not _conflict(a, b, interval, lower, upper, indptr, sorted_indices):
            reuse += 1
    return reuse / (len(seq) - 1)


@njit
def _sort_by_address(order, offsets, out):
    """Write ``order`` stably sorted by ``offsets`` into ``out``.

    A child's order is its parent's address order with a few genes moved, so
    it is nearly sorted by its own offsets: insertion sort runs in close to
    linear time there, far faster than a merge sort. Orders
    far from sorted (random ones) fall back to the merge sort once the moves
    pass a linear budget.
    """
    n = len(order)
    keys = np.empty(n, offsets.dtype)
    budget = 16 * n
    for k in range(n):
        b = order[k]
        key, j = offsets[b], k
        while j > 0 and keys[j - 1] > key:
            keys[j] = keys[j - 1]
            out[j] = out[j - 1]
            j -= 1
        keys[j] = key
        out[j] = b
        budget -= k - j
        if budget < 0:
            out[:] = order[np.argsort(offsets[order], kind="mergesort")]
            return


@njit(parallel=True, nogil=True)
def _score_pairs(
    orders, prefix, known, sizes, alignments, indptr, indices, pinned, index_bits, sentinel, first_fit,
    durations, floor, contiguity_args, use_contiguity, by_address, offsets, peaks, excess, contiguity, chunks,
):  # fmt: skip
    """Decode each order from the pair list, re-sort it by address and score it (in parallel).

    Re-sorting by address is the reuse-ordering step "pre-allocate, then sort
    by start address". First-fit decoding of the re-sorted order gives every block the
    offset it had: each block's blockers (the placed neighbours that ruled out
    lower offsets) lie below it, so they still come first, and the blocks now
    placed before it that were not lie below it too, in space it did not use.
    So an individual's stored offsets are exactly those of its stored order,
    which lets a child be decoded from where it departs from its parent.
    ``first_fit`` is always true; it is an argument, not the constant, because
    numba compiles a second copy of the decoder for a constant argument.
    """
    for c in nb.prange(chunks):
        work = workspace(sizes, indptr)
        for i in range(c, len(orders), chunks):
            peaks[i] = decode_row(
                orders[i], prefix[i], known[i], sizes, alignments, indptr, indices, pinned,
                not first_fit, index_bits, sentinel, work, offsets[i],
            )  # fmt: skip
            _score_row(i, orders, offsets, sizes, durations, floor, contiguity_args, use_contiguity,
                       by_address, excess, contiguity)  # fmt: skip


@njit(parallel=True, nogil=True)
def _score_lifetimes(
    orders, prefix, known, sizes, alignments, intervals, pinned, first_fit,
    durations, floor, contiguity_args, use_contiguity, by_address, offsets, peaks, excess, contiguity, chunks,
):  # fmt: skip
    """:func:`_score_pairs` for a decoder that places from the lifetimes (``intervals``: its index arrays)."""
    for c in nb.prange(chunks):
        work = interval_workspace(len(sizes), intervals[5].shape[1])
        for i in range(c, len(orders), chunks):
            peaks[i] = decode_interval_row(
                orders[i], prefix[i], known[i], sizes, alignments, intervals, pinned, not first_fit, work,
                offsets[i],
            )  # fmt: skip
            _score_row(i, orders, offsets, sizes, durations, floor, contiguity_args, use_contiguity,
                       by_address, excess, contiguity)  # fmt: skip


@njit(inline="always")
def _score_row(i, orders, offsets, sizes, durations, floor, contiguity_args, use_contiguity, by_address,
               excess, contiguity):  # fmt: skip
    """Re-sort row ``i`` by address; its bytes above the floor weighted by lifetime; its contiguity."""
    row = offsets[i]
    _sort_by_address(orders[i], row, by_address[i])
    above = 0.0
    for b in range(len(row)):
        end = row[b] + sizes[b]
        if end > floor:
            above += float(end - max(row[b], floor)) * durations[b]
    excess[i] = above
    if use_contiguity:
        contiguity[i] = _contiguity(by_address[i], *contiguity_args)


@njit(parallel=True, nogil=True)
def _score_decoded(orders, offsets, sizes, durations, floor, contiguity_args, use_contiguity, by_address,
                   excess, contiguity, chunks):  # fmt: skip
    """Score rows decoded already (by the multi-core decoder without pairs), as :func:`_score_pairs`."""
    for c in nb.prange(chunks):
        for i in range(c, len(orders), chunks):
            _score_row(i, orders, offsets, sizes, durations, floor, contiguity_args, use_contiguity,
                       by_address, excess, contiguity)  # fmt: skip


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
            _score_decoded(
                orders, offsets, d.sizes, self._durations, self.problem.lower_bound, self._contiguity_args,
                self.use_contiguity, by_address, scores.excess, scores.contiguity, thread_chunks(population),
            )  # fmt: skip
            self.evaluations += population
            return by_address, scores
        known_offsets = d.known_offsets(np.ascontiguousarray(known[1], np.int64))
        scored = (
            self._durations, self.problem.lower_bound, self._contiguity_args, self.use_contiguity,
            by_address, offsets, scores.peaks, scores.excess, scores.contiguity, thread_chunks(population),
        )  # fmt: skip
        prefix = np.ascontiguousarray(known[0], np.int64)
        if d.intervals is not None:
            _score_lifetimes(orders, prefix, known_offsets, d.sizes, d.alignments, self._intervals, d.pinned,
                             True, *scored)  # fmt: skip
        else:
            _score_pairs(orders, prefix, known_offsets, d.sizes, d.alignments, d.indptr, d.indices, d.pinned,
                         d.index_bits, d.sentinel, True, *scored)  # fmt: skip
        self.evaluations += population
        return by_address, scores


def shared_prefix(orders: np.ndarray, templates: np.ndarray) -> np.ndarray:
    """Per row, how many leading genes ``orders`` has in common with ``templates``."""
    differs = orders != templates
    return np.where(differs.any(axis=1), differs.argmax(axis=1), orders.shape[1])
