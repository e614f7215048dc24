"""Brute-force references the tests compare the library against."""

from __future__ import annotations

import itertools

import numpy as np

from gaplanner.documents.schema import Document
from gaplanner.problem.problem import Problem


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


# --- The runtime's memory rules (docs/formats.md), written out pair by pair -------------------------

START, END = "<start>", "<end>"


class RulesOracle:
    """Brute-force reading of a graph under the runtime's rules: who is live when, who may share."""

    def __init__(self, doc: Document, rules) -> None:
        self.doc, self.rules = doc, rules
        ops = doc.operators or []
        self.closure = happens_before(doc)
        self.sizes = {t.id: t.nbytes for t in doc.tensors or []}
        self.sizes.update({op.id + "#workspace": op.workspace for op in ops if op.workspace})
        self.touched: dict[str, set[str]] = {t: set() for t in self.sizes}
        written, read = set(), set()
        self.written_by = {op.id: set(op.outputs) for op in ops}
        for op in ops:
            for t in [*op.inputs, *op.outputs]:
                self.touched[t].add(op.id)
            written.update(op.outputs)
            read.update(op.inputs)
            if op.workspace:
                self.touched[op.id + "#workspace"].add(op.id)
        for t in (t.id for t in doc.tensors or []):
            if t not in written:
                self.touched[t].add(START)
        outputs = doc.outputs if doc.outputs is not None else [t for t in written if t not in read]
        if rules.keep_outputs:
            for t in outputs:
                self.touched[t].add(END)
        self.view_of = {out: host for op in ops for out, host in op.views.items()} if rules.views else {}
        self.inplace = [
            (out, host, op.id)
            for op in ops
            for out, hosts in op.inplace.items()
            for host in ([hosts] if isinstance(hosts, str) else hosts)
        ]

    def before(self, p: str, q: str) -> bool:
        if p == END or q == START:
            return False
        return p == START or q == END or (p, q) in self.closure

    def view_root(self, t: str) -> str:
        while t in self.view_of:
            t = self.view_of[t]
        return t

    def apart_in_time(self, x: str, y: str) -> bool:
        tx, ty = self.touched[x], self.touched[y]
        x_first = all(self.before(p, q) for p in tx for q in ty)
        return x_first or all(self.before(q, p) for p in tx for q in ty)

    def inplace_ok(self, out: str, host: str, at: str) -> bool:
        """The host's bytes may be taken by ``out`` at operator ``at``."""
        if self.sizes[out] > self.sizes[host] or self.rules.inplace == "never":
            return False
        side = [t for t in self.sizes if self.view_root(t) == self.view_root(host)]
        if any(t in self.written_by.get(at, ()) for t in side):  # the operator also writes a view of it
            return False
        return all(p == at or self.before(p, at) for t in side for p in self.touched[t])

    def violation(self, offsets: dict[str, int]) -> str | None:
        """The first broken rule of a plan (tensor id -> offset), pair by pair."""
        ids = list(self.sizes)
        for t in ids:
            if t in self.view_of and offsets[t] != offsets[self.view_root(t)]:
                return f"view {t} moved"
        for x, y in itertools.combinations(ids, 2):
            if offsets[x] >= offsets[y] + self.sizes[y] or offsets[y] >= offsets[x] + self.sizes[x]:
                continue
            if self.view_root(x) == self.view_root(y) or self.apart_in_time(x, y):
                continue
            groups = {self.view_root(x), self.view_root(y)}
            if any(
                {self.view_root(o), self.view_root(h)} == groups
                and offsets[o] == offsets[h]
                and self.inplace_ok(o, h, at)
                for o, h, at in self.inplace
            ):
                continue
            return f"{x} and {y} share memory while both live"
        return None

    def optimum(self) -> int:
        """The smallest arena over every legal set of in-place writes taken, by first-fit over all orders."""
        chances = [c for c in self.inplace if self.inplace_ok(*c)]
        best = None
        for k in range(len(chances) + 1):
            for taken in itertools.combinations(chances, k):
                outs, hosts = [o for o, _, _ in taken], [self.view_root(h) for _, h, _ in taken]
                if len(set(outs)) < len(outs) or len(set(hosts)) < len(hosts):
                    continue
                peak = self._optimum_with(taken)
                best = peak if best is None else min(best, peak)
        assert best is not None
        return best

    def _optimum_with(self, taken: tuple) -> int:
        group = {t: self.view_root(t) for t in self.sizes}
        for out, host, _ in taken:  # the output's bytes are the host's: one group
            old, new = group[out], group[host]
            group = {t: new if g == old else g for t, g in group.items()}
        names = sorted(set(group.values()))
        members = {g: [t for t in self.sizes if group[t] == g] for g in names}
        size = {g: max(self.sizes[t] for t in members[g]) for g in names}
        clash = {
            (a, b)
            for a in names
            for b in names
            if a != b and any(not self.apart_in_time(x, y) for x in members[a] for y in members[b])
        }
        best = None
        for order in itertools.permutations(names):
            placed: dict[str, int] = {}
            for g in order:
                ranges = sorted((placed[h], placed[h] + size[h]) for h in placed if (g, h) in clash)
                offset = 0
                for start, end in ranges:
                    if start >= offset + size[g]:
                        break
                    offset = max(offset, end)
                placed[g] = offset
            peak = max(placed[g] + size[g] for g in names)
            best = peak if best is None else min(best, peak)
        assert best is not None
        return best
