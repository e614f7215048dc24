"""Decoding orders of interval problems without conflict pairs.

On a one-core (interval) problem two blocks conflict exactly when their
lifetimes overlap, so a block's placed neighbours can be found from the
lifetimes alone. The blocks are grouped by the length of their lifetime
(classes of lengths ``[2**c, 2**(c + 1))``) and ranked by start within a
class. A block ``b`` can overlap only the blocks of class ``c`` that start
before ``b`` ends and less than the class's longest lifetime before ``b``
starts: a contiguous run of ranks, found by two binary searches. A decode
scans those runs (their placed ranges sit in rank order, so the scan reads
memory in order and tests each with no branch), keeps the placed ones that
end after ``b`` starts, and places ``b`` among them. A run holds at most about
twice the neighbours of its class (a block of the class that starts in the
run but ended before ``b`` started is less than a class length away), so a
decode costs about what the pair-list decoder's gather does, and its memory is
O(n) whatever the number of conflicting pairs.

The gathered ranges are placed by the same rules as the pair-list decoder
(:mod:`gaplanner.search.decoder`): first-fit sweeps a few times, then sorts the
ranges by start and finishes in one pass; best-fit sorts them and scans the
gaps. Sorting uses ``argsort``, never packed keys, so any offset below
``2**63`` works at any block count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.native import _interval_decoder

NOT_PLACED = np.iinfo(np.int64).max
# First-fit sweeps the ranges at most this many times before it sorts them, if there are at least
# SORT_MIN_RANGES of them (as the pair-list decoder, gaplanner.search.decoder).
SWEEPS_BEFORE_SORT = 16
SORT_MIN_RANGES = 512


@dataclass(frozen=True)
class IntervalIndex:
    """The lifetimes grouped by length class and ranked by start: what every decode shares."""

    lower: np.ndarray  # int64 per block
    upper: np.ndarray  # int64 per block
    rank: np.ndarray  # int64 per block: its position by (class, start, index)
    sorted_lower: np.ndarray  # int64 per rank
    sorted_upper: np.ndarray  # int64 per rank
    classes: np.ndarray  # int64 (3, classes): each non-empty class's first rank, end rank, longest lifetime

    @classmethod
    def of(cls, lower: np.ndarray, upper: np.ndarray) -> IntervalIndex:
        lower = np.ascontiguousarray(lower, np.int64)
        upper = np.ascontiguousarray(upper, np.int64)
        length = np.maximum(upper - lower, 1)
        length_class = np.floor(np.log2(length.astype(np.float64))).astype(np.int64)
        by_rank = np.lexsort((np.arange(len(lower)), lower, length_class))
        rank = np.empty(len(lower), np.int64)
        rank[by_rank] = np.arange(len(lower))
        sorted_class = length_class[by_rank]
        firsts = np.flatnonzero(np.diff(sorted_class, prepend=-1))
        ends = np.append(firsts[1:], len(lower))
        longest = np.maximum.reduceat(length[by_rank], firsts) if len(lower) else firsts
        classes = np.ascontiguousarray(np.stack([firsts, ends, longest]).astype(np.int64))
        return cls(lower, upper, rank, lower[by_rank], upper[by_rank], classes)

    def arrays(self) -> tuple:
        return self.lower, self.upper, self.rank, self.sorted_lower, self.sorted_upper, self.classes


def decode_interval_population(
    orders, prefix, known, sizes, alignments, index, pinned, best_fit, offsets, chunks, threads
):  # fmt: skip
    """Decode every row of ``orders`` in parallel (rows ``c``, ``c + chunks``, ... per chunk, on
    ``threads`` threads): place each by first-fit (or best-fit) among the placed blocks live with it,
    after the ``pinned`` blocks and the first ``prefix[i]`` blocks at their offsets in ``known``;
    write ``offsets``, return the peaks."""
    return _interval_decoder.decode_interval_population(
        orders, prefix, known, sizes, alignments, index, pinned, best_fit, offsets, chunks, threads
    )
