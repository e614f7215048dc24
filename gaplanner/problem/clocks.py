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
conflicts with. The conflicts themselves come from the clocks as
happens-before vectors (:mod:`gaplanner.problem.order`), without pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.errors import InputError
from gaplanner.problem.bounds import greedy_clique_bound, heaviest_clique, max_load
from gaplanner.problem.conflicts import ConflictGraph


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
