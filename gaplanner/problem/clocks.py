"""Vector-clock lifetimes: buffers of multi-stream programs (omnimalloc's CSV).

A time is a vector clock, one component per thread or stream (``3:0:2``). Buffer
``a`` is done before ``b`` starts when ``a``'s end is at or before ``b``'s start
in every component; two buffers may share memory only then (or the other way
round). With one component this is MiniMalloc's half-open lifetimes.

The searches need one time axis as well: the sum of a clock's components
grows along every happens-before chain, so it orders the buffers as some
single stream could have run them. Buffers live at one instant of that axis
conflict pairwise (a buffer done before another ends, by sum, before the other
starts), so the max load over it is a lower bound. Two conflicting buffers
may still not meet on that axis, so each buffer's space is released (for the
time walk of best-fit-coalescing) only after the start of every buffer it
conflicts with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.errors import InputError
from gaplanner.problem.bounds import greedy_clique_bound, heaviest_clique, max_load
from gaplanner.problem.conflicts import ConflictGraph

#: Pairs compared at once when building the conflicts (bounds the temporary arrays).
_ROWS_PER_CHUNK = 256


@dataclass(frozen=True)
class Clocks:
    """Each buffer's start and end clock, ``(n, components)`` int64 arrays."""

    lower: np.ndarray
    upper: np.ndarray

    @property
    def components(self) -> int:
        return self.lower.shape[1]


def check_clocks(lower: np.ndarray, upper: np.ndarray) -> None:
    """Every end must come after its start: at or after it in each component, and not equal."""
    after = (upper >= lower).all(axis=1) & (upper != lower).any(axis=1)
    if (bad := np.flatnonzero(~after)).size:
        i = bad[0]
        raise InputError(
            f"upper ({format_clock(upper[i])}) must come after lower ({format_clock(lower[i])}) "
            "in every component",
            f"buffers[{i}].upper",
        )


def format_clock(clock: np.ndarray) -> str:
    return ":".join(str(int(c)) for c in clock)


def clock_conflicts(clocks: Clocks) -> ConflictGraph:
    """Buffers conflict unless one ends at or before the other starts in every component."""
    n = len(clocks.lower)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for first in range(0, n, _ROWS_PER_CHUNK):
        block = slice(first, min(n, first + _ROWS_PER_CHUNK))
        a_first = (clocks.upper[block, None, :] <= clocks.lower[None, :, :]).all(axis=2)
        b_first = (clocks.upper[None, :, :] <= clocks.lower[block, None, :]).all(axis=2)
        clash = ~(a_first | b_first)
        np.fill_diagonal(clash[:, first : block.stop], False)
        r, c = np.nonzero(clash)
        rows.append(r + first)
        cols.append(c)
    row, col = np.concatenate(rows), np.concatenate(cols).astype(np.int32)
    order = np.argsort(row, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    return ConflictGraph(indptr, col[order])


def time_axis(clocks: Clocks, conflicts: ConflictGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lower, upper, reuse_at)`` on the summed axis (see the module doc)."""
    lower, upper = clocks.lower.sum(axis=1), clocks.upper.sum(axis=1)
    reuse_at = upper.copy()
    for b in range(len(lower)):
        neighbours = conflicts.neighbors(b)
        if len(neighbours):
            reuse_at[b] = max(reuse_at[b], int(lower[neighbours].max()) + 1)
    return lower, upper, reuse_at


def clock_bound(lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray, conflicts: ConflictGraph) -> int:
    """The heaviest clique: grown from each instant's live set on the summed axis, then searched for.

    Threads run unsynchronised between their barriers, so the buffers that can be
    live together are rarely all live at one instant of any single axis: the live
    sets miss much of the heaviest clique, which :func:`heaviest_clique` finds.
    """
    greedy = max(
        max_load(lower, upper, sizes),
        greedy_clique_bound(lower, upper, sizes, conflicts.indptr, conflicts.indices),
    )
    return heaviest_clique(sizes, conflicts.indptr, conflicts.indices, known=greedy)
