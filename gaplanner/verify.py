"""Independent plan verification.

A plan is valid when every offset is a non-negative multiple of its block's
alignment, every block lies inside ``[0, peak)``, and no two conflicting
blocks share an address. For interval problems the last check does not use
the conflict graph at all: a sweep over time keeps the live blocks sorted by
address and compares each newcomer with its two address neighbours (if the
live blocks are pairwise disjoint, a newcomer overlapping any of them overlaps
one of those two). For multi-core graphs every conflict edge is checked.
"""

from __future__ import annotations

import bisect

import numpy as np

from gaplanner.errors import PlanError
from gaplanner.problem import Problem


def _describe(problem: Problem, a: int, b: int, offsets: np.ndarray) -> str:
    sa, sb = problem.sizes[a], problem.sizes[b]
    return (
        f"conflicting blocks {problem.ids[a]!r} [{offsets[a]}, {offsets[a] + sa}) and "
        f"{problem.ids[b]!r} [{offsets[b]}, {offsets[b] + sb}) overlap in memory"
    )


def _interval_overlap(problem: Problem, offsets: np.ndarray) -> str | None:
    n = problem.n
    # Events: ends (kind 0) before starts (kind 1) at the same time (half-open lifetimes).
    times = np.concatenate([problem.upper, problem.lower])
    kinds = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)])
    blocks = np.concatenate([np.arange(n), np.arange(n)])
    order = np.lexsort((blocks, kinds, times))
    live: list[tuple[int, int]] = []  # (offset, block), sorted
    ends = offsets + problem.sizes
    for e in order.tolist():
        b = int(blocks[e])
        key = (int(offsets[b]), b)
        if kinds[e] == 0:
            del live[bisect.bisect_left(live, key)]
            continue
        at = bisect.bisect_left(live, key)
        if at > 0 and ends[live[at - 1][1]] > key[0]:
            return _describe(problem, live[at - 1][1], b, offsets)
        if at < len(live) and live[at][0] < ends[b]:
            return _describe(problem, b, live[at][1], offsets)
        live.insert(at, key)
    return None


def _edge_overlap(problem: Problem, offsets: np.ndarray) -> str | None:
    a, b = problem.conflicts.edges()
    ends = offsets + problem.sizes
    clash = (offsets[a] < ends[b]) & (offsets[b] < ends[a])
    if clash.any():
        k = int(np.argmax(clash))
        return _describe(problem, int(a[k]), int(b[k]), offsets)
    return None


def find_violation(problem: Problem, offsets: np.ndarray, peak: int | None = None) -> str | None:
    """The first rule the plan breaks, in words, or None for a valid plan."""
    offsets = np.asarray(offsets)
    if offsets.shape != (problem.n,):
        return f"the plan has {offsets.size} offsets for {problem.n} blocks"
    if not np.issubdtype(offsets.dtype, np.integer):
        return "offsets must be integers"
    offsets = offsets.astype(np.int64)
    for name, bad in (
        ("is negative", offsets < 0),
        ("is not a multiple of its alignment", offsets % problem.alignments != 0),
    ):
        if bad.any():
            i = int(np.argmax(bad))
            return f"offset {offsets[i]} of block {problem.ids[i]!r} {name} ({problem.alignments[i]})"
    ends = offsets + problem.sizes
    if peak is not None and (outside := ends > peak).any():
        i = int(np.argmax(outside))
        return f"block {problem.ids[i]!r} ends at {ends[i]}, beyond the arena of {peak} bytes"
    if problem.interval_conflicts:
        return _interval_overlap(problem, offsets)
    return _edge_overlap(problem, offsets)


def verify(problem: Problem, offsets: np.ndarray, peak: int | None = None) -> None:
    """Raise :class:`PlanError` naming the first violation; return quietly for a valid plan."""
    violation = find_violation(problem, offsets, peak)
    if violation is not None:
        raise PlanError(violation)
