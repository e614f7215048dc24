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

from gaplanner.documents.lifetimes import WORKSPACE_SUFFIX
from gaplanner.errors import InputError
from gaplanner.native import _baselines
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.problem.order import HappensBefore, OrderIndex
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


def best_fit_coalescing_offsets(problem: Problem) -> np.ndarray:
    """Best-fit-coalescing's offsets, unverified: what :func:`best_fit_coalescing` verifies (it refuses
    pinned blocks)."""
    step = int(np.lcm.reduce(problem.alignments))
    sizes, alignments = (np.ascontiguousarray(a, np.int64) for a in (problem.sizes, problem.alignments))
    if problem.interval_conflicts:
        lower, reuse_at = (np.ascontiguousarray(a, np.int64) for a in (problem.lower, problem.reuse_at))
        return _baselines.best_fit_coalescing(sizes, alignments, lower, reuse_at, step)
    order = np.ascontiguousarray(walk_order(problem), np.int64)
    return _baselines.best_fit_over_conflicts(sizes, alignments, order, *_conflict_source(problem), step)


def best_fit_coalescing(problem: Problem) -> Plan:
    if problem.has_pinned:
        raise InputError(
            "best-fit-coalescing moves blocks up as the arena grows, so it cannot keep pinned blocks in "
            "place; use first-fit, greedy-size or ga",
            "algorithm",
        )
    started = time.perf_counter()
    offsets = best_fit_coalescing_offsets(problem)
    return make_plan(problem, offsets, "best-fit-coalescing", started)


def _conflict_source(problem: Problem) -> tuple[np.ndarray, np.ndarray, tuple]:
    """``(indptr, indices, index)``: the pair list, or where a multi-core problem is decoded without it
    (:func:`uses_order_index`), an empty one and its happens-before index."""
    if uses_order_index(problem):
        assert problem.happens_before is not None
        empty = np.zeros(0, np.int64)
        return empty, empty.astype(np.int32), OrderIndex.of(problem.happens_before).arrays()
    placeholder = OrderIndex.of(HappensBefore(np.zeros((1, 1), np.int64), np.ones((1, 1), np.int64)))
    indptr = np.ascontiguousarray(problem.conflicts.indptr, np.int64)
    return indptr, problem.conflicts.indices, placeholder.arrays()


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
