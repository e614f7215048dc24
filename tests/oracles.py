"""Brute-force references the tests compare the library against."""

from __future__ import annotations

import itertools

import numpy as np

from gaplanner.problem import Problem
from gaplanner.schema import Document


def happens_before(doc: Document) -> set[tuple[str, str]]:
    """All pairs (u, v) of operator ids with u strictly before v (transitive closure)."""
    ops = doc.operators or []
    edges: dict[str, set[str]] = {op.id: set() for op in ops}
    last: dict[int, str] = {}
    writer = {t: op.id for op in ops for t in op.outputs}
    for op in ops:
        if op.core in last:
            edges[last[op.core]].add(op.id)
        last[op.core] = op.id
        for t in op.inputs:
            if t in writer:
                edges[writer[t]].add(op.id)
    for s in doc.sync:
        edges[s.before].add(s.after)
    closure: set[tuple[str, str]] = set()
    for start in edges:
        stack, seen = list(edges[start]), set()
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(edges[v])
        closure |= {(start, v) for v in seen}
    return closure


def graph_conflicts(doc: Document) -> set[frozenset[str]]:
    """Conflicting tensor pairs by the definition: neither's readers all precede the other's writer.

    Model outputs (declared, else the tensors no operator reads) are read after every operator.
    """
    ops = doc.operators or []
    before = happens_before(doc)
    writer = {t: op.id for op in ops for t in op.outputs}
    readers: dict[str, set[str]] = {t.id: set() for t in doc.tensors or []}
    for op in ops:
        for t in op.inputs:
            readers[t].add(op.id)

    outputs = set(doc.outputs) if doc.outputs is not None else {t for t in writer if not readers[t]}

    def precedes(a: str, b: str) -> bool:
        if b not in writer or a in outputs:  # the caller reads an output after every operator
            return False
        done = readers[a] or {writer[a]}
        return all((r, writer[b]) in before for r in done)

    ids = [t.id for t in doc.tensors or []]
    return {
        frozenset((a, b))
        for a, b in itertools.combinations(ids, 2)
        if not precedes(a, b) and not precedes(b, a)
    }


def conflict_pairs(problem: Problem) -> set[frozenset[str]]:
    a, b = problem.conflicts.edges()
    return {frozenset((problem.ids[i], problem.ids[j])) for i, j in zip(a, b, strict=True)}


def _placed_neighbours(problem: Problem, offsets: np.ndarray, pairs: set, b: int) -> list[tuple[int, int]]:
    """Ranges of the blocks already placed (offset >= 0) that conflict with ``b``, by start."""
    return sorted(
        (int(offsets[j]), int(offsets[j] + problem.sizes[j]))
        for j in range(problem.n)
        if offsets[j] >= 0 and frozenset((problem.ids[b], problem.ids[j])) in pairs
    )


def first_fit_offsets(problem: Problem, order: tuple[int, ...]) -> np.ndarray:
    """Plain-Python first-fit decoding (alignment honoured)."""
    offsets = np.full(problem.n, -1, np.int64)
    pairs = conflict_pairs(problem)
    for b in order:
        candidate, align = 0, int(problem.alignments[b])
        for start, end in _placed_neighbours(problem, offsets, pairs, b):
            if start >= candidate + problem.sizes[b]:
                break
            candidate = max(candidate, -(-end // align) * align)
        offsets[b] = candidate
    return offsets


def best_fit_offsets(problem: Problem, order: tuple[int, ...]) -> np.ndarray:
    """Plain-Python best-fit decoding: the lowest of the smallest gaps that hold the block, else the top."""
    offsets = np.full(problem.n, -1, np.int64)
    pairs = conflict_pairs(problem)
    for b in order:
        align, size = int(problem.alignments[b]), int(problem.sizes[b])
        frontier, gaps = 0, []
        for start, end in _placed_neighbours(problem, offsets, pairs, b):
            aligned = -(-frontier // align) * align
            if start - aligned >= size:
                gaps.append((start - aligned, aligned))
            frontier = max(frontier, end)
        offsets[b] = min(gaps)[1] if gaps else -(-frontier // align) * align
    return offsets


def brute_force_peaks(problem: Problem) -> tuple[int, int]:
    """(best, worst) peak of first-fit decoding over every order. The best is the optimum."""
    peaks = [
        int((first_fit_offsets(problem, order) + problem.sizes).max())
        for order in itertools.permutations(range(problem.n))
    ]
    return min(peaks), max(peaks)


def address_order(orders: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each order re-sorted by the offsets it decoded to, ties in their order (numpy's stable sort)."""
    ranks = np.argsort(np.take_along_axis(offsets, orders, axis=1), axis=1, kind="stable")
    return np.take_along_axis(orders, ranks, axis=1)
