"""The heuristics every search is measured against; each returns a verified plan.

* ``first-fit`` — first-fit decoding of the execution order (start, then index).
* ``best-fit-coalescing`` — a walk over time: at each step the blocks whose
  lifetime ended return to a free list sorted by offset, adjacent free blocks
  coalesce, a new block takes the smallest free block that fits, and when none
  fits the largest free block is extended to the size needed, the arena grows
  by the difference and every block above it moves up. On a partial order
  (multi-core graphs, vector clocks) the walk allocates in one order consistent
  with happens-before (a graph's operator order: a split graph's step order),
  and the free list a block sees is the arena less the placed blocks it
  conflicts with: a placed block is released for it once all of the placed
  block's accesses surely happen before it is written. On a total order that is
  exactly the walk's free list (a test holds them equal).
* ``greedy-size`` — greedy by size as TFLite's and omnimalloc's planners do it:
  size descending (ties by earlier start, then index), each block at the
  lowest offset that fits among the placed blocks live with it (first-fit;
  putting it into the smallest gap instead leaves wider stacks at scale).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from gaplanner.compiled import njit
from gaplanner.documents.lifetimes import WORKSPACE_SUFFIX
from gaplanner.errors import InputError
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.problem.order import HappensBefore, OrderIndex, conflict, order_runs
from gaplanner.problem.problem import Problem
from gaplanner.search.decoder import decode
from gaplanner.search.neighbours import uses_order_index


def first_fit_order(problem: Problem) -> np.ndarray:
    return problem.start_order()


def greedy_size_order(problem: Problem) -> np.ndarray:
    return np.lexsort((np.arange(problem.n), problem.lower, -problem.sizes))


def first_fit(problem: Problem) -> Plan:
    """First-fit in execution order; ``decode_seconds`` tells a search what a decode costs."""
    started = time.perf_counter()
    offsets = decode(problem, first_fit_order(problem))
    decode_seconds = time.perf_counter() - started
    return make_plan(problem, offsets, "first-fit", started, decode_seconds=round(decode_seconds, 6))


def greedy_size(problem: Problem) -> Plan:
    started = time.perf_counter()
    offsets = decode(problem, greedy_size_order(problem))
    return make_plan(problem, offsets, "greedy-size", started)


@njit
def _align_up(x, alignment):
    return (x + alignment - 1) // alignment * alignment


@njit
def _free(free_start, free_end, count, start, end):
    """Insert [start, end) into the offset-sorted free list, coalescing neighbours."""
    at = np.searchsorted(free_start[:count], start)
    merge_prev = at > 0 and free_end[at - 1] == start
    merge_next = at < count and free_start[at] == end
    if merge_prev and merge_next:
        free_end[at - 1] = free_end[at]
        free_start[at : count - 1] = free_start[at + 1 : count].copy()
        free_end[at : count - 1] = free_end[at + 1 : count].copy()
        return count - 1
    if merge_prev:
        free_end[at - 1] = end
        return count
    if merge_next:
        free_start[at] = start
        return count
    free_start[at + 1 : count + 1] = free_start[at:count].copy()
    free_end[at + 1 : count + 1] = free_end[at:count].copy()
    free_start[at] = start
    free_end[at] = end
    return count + 1


@njit
def _take(free_start, free_end, count, k, offset, end):
    """Allocate [offset, end) out of free block k; keep what is left of it."""
    start, stop = free_start[k], free_end[k]
    free_start[k : count - 1] = free_start[k + 1 : count].copy()
    free_end[k : count - 1] = free_end[k + 1 : count].copy()
    count -= 1
    if offset > start:
        count = _free(free_start, free_end, count, start, offset)
    if stop > end:
        count = _free(free_start, free_end, count, end, stop)
    return count


@njit
def _best_fit_coalescing(sizes, alignments, lower, reuse_at, step):
    n = len(sizes)
    offsets = np.full(n, -1, np.int64)
    free_start = np.empty(2 * n + 2, np.int64)
    free_end = np.empty(2 * n + 2, np.int64)
    count = 0
    arena = 0
    by_start = np.argsort(lower, kind="mergesort")
    by_release = np.argsort(reuse_at, kind="mergesort")
    released = 0
    for b in by_start:
        t = lower[b]
        while released < n and reuse_at[by_release[released]] <= t:
            r = by_release[released]
            count = _free(free_start, free_end, count, offsets[r], offsets[r] + sizes[r])
            released += 1
        size, alignment = sizes[b], alignments[b]
        best, best_size = -1, np.iinfo(np.int64).max
        for k in range(count):
            usable = free_end[k] - _align_up(free_start[k], alignment)
            if size <= usable < best_size:
                best, best_size = k, usable
        if best < 0:
            largest, largest_size = -1, -1
            for k in range(count):
                if free_end[k] - free_start[k] > largest_size:
                    largest, largest_size = k, free_end[k] - free_start[k]
            if largest < 0:  # nothing free: an empty block at the top of the arena
                count = _free(free_start, free_end, count, arena, arena)
                largest = count - 1
            cut = free_end[largest]
            need = _align_up(free_start[largest], alignment) + size - cut
            shift = _align_up(need, step)
            for j in range(n):
                if offsets[j] >= cut:
                    offsets[j] += shift
            for k in range(count):
                if k != largest and free_start[k] >= cut:
                    free_start[k] += shift
                    free_end[k] += shift
            free_end[largest] = cut + shift
            arena += shift
            best = largest
        offset = _align_up(free_start[best], alignment)
        count = _take(free_start, free_end, count, best, offset, offset + size)
        offsets[b] = offset
    return offsets


@njit
def _grown(offsets, arena, gap_start, gap_end, size, alignment, step):
    """Extend the free gap ``[gap_start, gap_end)`` so ``size`` fits: every block from its end on
    moves up by the same amount (no two blocks come closer); the new arena."""
    shift = _align_up(_align_up(gap_start, alignment) + size - gap_end, step)
    for j in range(len(offsets)):
        if offsets[j] >= gap_end:
            offsets[j] += shift
    return arena + shift


@njit
def _placed_conflicts(b, offsets, sizes, indptr, indices, index, block_of, runs, starts, ends):
    """The ranges of ``b``'s placed conflicts, from the pair list, or (``indptr`` empty) from the
    happens-before vectors' index (:mod:`gaplanner.problem.order`); their count."""
    count = 0
    if len(indptr):
        for j in indices[indptr[b] : indptr[b + 1]]:
            if offsets[j] >= 0:
                starts[count], ends[count] = offsets[j], offsets[j] + sizes[j]
                count += 1
        return count
    rank, acquire, release, _, groups = index
    s = rank[b]
    order_runs(s, index, runs)
    for g in range(groups.shape[1]):
        for r in range(runs[0, g], runs[1, g]):
            j = block_of[r]
            if offsets[j] >= 0 and r != s and conflict(release, acquire, r, s):
                starts[count], ends[count] = offsets[j], offsets[j] + sizes[j]
                count += 1
    return count


@njit
def _best_fit_over_conflicts(sizes, alignments, order, indptr, indices, index, step):
    """Best-fit-coalescing where the free list of each block is the arena less its placed conflicts.

    The gaps between the placed blocks a block conflicts with, up to the arena's
    top, scanned in order of offset: adjacent free space is one gap (coalesced).
    The conflicts come from the pair list, or (``indptr`` empty) from ``index``.
    """
    n = len(sizes)
    offsets = np.full(n, -1, np.int64)
    starts, ends = np.empty(n, np.int64), np.empty(n, np.int64)
    block_of = np.empty(len(index[0]), np.int64)
    block_of[index[0]] = np.arange(len(index[0]))
    runs = np.empty((2, index[4].shape[1]), np.int64)
    arena = 0
    for b in order:
        count = _placed_conflicts(b, offsets, sizes, indptr, indices, index, block_of, runs, starts, ends)
        by_start = np.argsort(starts[:count])
        size, alignment = sizes[b], alignments[b]
        best, best_size = -1, np.iinfo(np.int64).max
        largest_start, largest_end = arena, arena  # nothing free: an empty gap at the top
        frontier = 0
        for p in range(count + 1):
            gap_end = starts[by_start[p]] if p < count else arena
            if gap_end > frontier:
                usable = gap_end - _align_up(frontier, alignment)
                if size <= usable < best_size:
                    best, best_size = frontier, usable
                if gap_end - frontier > largest_end - largest_start:
                    largest_start, largest_end = frontier, gap_end
            if p < count:
                frontier = max(frontier, ends[by_start[p]])
        if best < 0:
            arena = _grown(offsets, arena, largest_start, largest_end, size, alignment, step)
            best = largest_start
        offsets[b] = _align_up(best, alignment)
    return offsets


def walk_order(problem: Problem) -> np.ndarray:
    """The blocks in the order a walk allocates them: by first write, ties by index.

    A graph's first writes are positions in its operator list, which a split
    graph lays out step by step (each step's per-core copies, then its
    combines); graph inputs come first. Otherwise, the problem's time axis.
    """
    doc, tensors = problem.document, problem.tensors
    if doc is None or tensors is None or not doc.is_graph:
        return np.lexsort((np.arange(problem.n), problem.lower))
    written: dict[str, int] = {}
    for k, op in enumerate(doc.operators or []):
        written.update(dict.fromkeys(op.outputs, k))
        if op.workspace is not None:
            written[op.id + WORKSPACE_SUFFIX] = k
    first = np.full(problem.n, np.iinfo(np.int64).max)
    np.minimum.at(first, tensors.block_of, [written.get(tid, -1) for tid in tensors.ids])
    return np.lexsort((np.arange(problem.n), first))


def best_fit_coalescing(problem: Problem) -> Plan:
    if problem.has_pinned:
        raise InputError(
            "best-fit-coalescing moves blocks up as the arena grows, so it cannot keep pinned blocks in "
            "place; use first-fit, greedy-size or ga",
            "algorithm",
        )
    started = time.perf_counter()
    step = int(np.lcm.reduce(problem.alignments))
    sizes, alignments = problem.sizes, problem.alignments
    if problem.interval_conflicts:
        offsets = _best_fit_coalescing(sizes, alignments, problem.lower, problem.reuse_at, step)
    else:
        offsets = _best_fit_over_conflicts(
            sizes, alignments, walk_order(problem), *_conflict_source(problem), step
        )
    return make_plan(problem, offsets, "best-fit-coalescing", started)


def _conflict_source(problem: Problem) -> tuple[np.ndarray, np.ndarray, tuple]:
    """``(indptr, indices, index)``: the pair list, or where a multi-core problem is decoded without it
    (:func:`uses_order_index`), an empty one and its happens-before index."""
    if uses_order_index(problem):
        assert problem.happens_before is not None
        empty = np.zeros(0, np.int64)
        return empty, empty.astype(np.int32), OrderIndex.of(problem.happens_before).arrays()
    placeholder = OrderIndex.of(HappensBefore(np.zeros((1, 1), np.int64), np.ones((1, 1), np.int64)))
    return problem.conflicts.indptr, problem.conflicts.indices, placeholder.arrays()


BASELINES: dict[str, Callable[[Problem], Plan]] = {
    "first-fit": first_fit,
    "best-fit-coalescing": best_fit_coalescing,
    "greedy-size": greedy_size,
}


def baseline_plans(problem: Problem) -> dict[str, Plan]:
    """The plan of every baseline that can plan ``problem`` (best-fit-coalescing moves pinned blocks)."""
    return {
        name: baseline(problem)
        for name, baseline in BASELINES.items()
        if not (problem.has_pinned and baseline is best_fit_coalescing)
    }
