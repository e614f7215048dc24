"""The operators' dependencies: what any order that runs the model must respect.

An operator depends on the writer of each tensor it reads (data edges), on the
operators it names in ``after`` (side effects, in-place mutation, I/O) and on
``sync`` edges between cores. A core's program order is *not* a dependency:
it is what the schedule chooses.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gaplanner.documents.schema import Document
from gaplanner.errors import InputError


@dataclass(frozen=True)
class Dag:
    """Operators (in document order) and their dependency edges, as CSR arrays.

    ``reason[e]`` says why edge ``e`` of the successor lists exists: the tensor
    id read (data), or ``""`` for an ``after`` or ``sync`` edge.
    """

    ids: tuple[str, ...]
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    pred_reason: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.ids)

    def successors(self, k: int) -> np.ndarray:
        return self.succ_idx[self.succ_ptr[k] : self.succ_ptr[k + 1]]

    def predecessors(self, k: int) -> np.ndarray:
        return self.pred_idx[self.pred_ptr[k] : self.pred_ptr[k + 1]]


def _edges(doc: Document) -> dict[tuple[int, int], str]:
    """(before, after) -> the tensor that makes it a dependency ("" for ordering edges).

    Ids that do not resolve are skipped here: the document's own checks name them.
    """
    ops = doc.operators or []
    index = {op.id: k for k, op in enumerate(ops)}
    writer: dict[str, int] = {}
    for k, op in enumerate(ops):
        for tid in op.outputs:
            writer.setdefault(tid, k)
    edges: dict[tuple[int, int], str] = {}
    for k, op in enumerate(ops):
        for tid in op.inputs:
            w = writer.get(tid)
            if w is not None and w != k:
                edges.setdefault((w, k), tid)
        for before in op.after:
            if before in index:
                edges.setdefault((index[before], k), "")
    for edge in doc.sync:
        if edge.before in index and edge.after in index:
            edges.setdefault((index[edge.before], index[edge.after]), "")
    return edges


def _csr(n: int, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR lists of ``pairs[:, 1]`` grouped by ``pairs[:, 0]``, and the sort that produced them."""
    sort = np.lexsort((pairs[:, 1], pairs[:, 0])) if len(pairs) else np.zeros(0, np.int64)
    ptr = np.zeros(n + 1, np.int64)
    np.add.at(ptr, pairs[:, 0] + 1, 1)
    return np.cumsum(ptr), pairs[sort, 1].astype(np.int64), sort


def build_dag(doc: Document) -> Dag:
    """The dependency DAG of a graph document; a cycle is refused naming an operator on it."""
    ops = doc.operators or []
    edges = _edges(doc)
    pairs = np.array(list(edges), np.int64).reshape(-1, 2)
    reasons = list(edges.values())
    succ_ptr, succ_idx, _ = _csr(len(ops), pairs)
    pred_ptr, pred_idx, sort = _csr(len(ops), pairs[:, ::-1])
    dag = Dag(
        ids=tuple(op.id for op in ops),
        succ_ptr=succ_ptr,
        succ_idx=succ_idx,
        pred_ptr=pred_ptr,
        pred_idx=pred_idx,
        pred_reason=tuple(reasons[i] for i in sort.tolist()),
    )
    _refuse_cycle(dag)
    return dag


def _refuse_cycle(dag: Dag) -> None:
    """Raise naming the operators of one dependency cycle, if there is one."""
    order = topological_order(dag)
    if len(order) == dag.n:
        return
    done = np.zeros(dag.n, bool)
    done[order] = True
    # Every operator left has a predecessor left: walking back from one must meet itself again.
    k = int(np.flatnonzero(~done)[0])
    seen: dict[int, int] = {}
    path: list[int] = []
    while k not in seen:
        seen[k] = len(path)
        path.append(k)
        k = next(int(p) for p in dag.predecessors(k) if not done[p])
    loop = path[seen[k] :][::-1]  # in run order: each one needs the one before it
    start = loop.index(min(loop))  # named from the operator listed first in the document
    cycle = [dag.ids[j] for j in loop[start:] + loop[:start]]
    raise InputError(
        f"the dependencies have a cycle through operator {cycle[0]!r}: "
        + " -> ".join(repr(c) for c in [*cycle, cycle[0]]),
        "operators",
    )


def topological_order(dag: Dag) -> np.ndarray:
    """Kahn's algorithm, ready operators by document order; shorter than ``n`` when there is a cycle."""
    indegree = np.diff(dag.pred_ptr).copy()
    ready = np.flatnonzero(indegree == 0).tolist()  # sorted: already a heap
    order: list[int] = []
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in dag.successors(u).tolist():
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, v)
    return np.array(order, np.int64)


def check_order(dag: Dag, order: Sequence[int], field: str = "schedule") -> None:
    """Refuse an order that is not a permutation of the operators or runs one before a dependency.

    The message names the operator and what it would read too early (or the
    operator it must follow).
    """
    position = np.full(dag.n, -1, np.int64)
    for p, k in enumerate(order):
        if not 0 <= k < dag.n:
            raise InputError(f"no operator number {k}", f"{field}[{p}]")
        if position[k] >= 0:
            raise InputError(f"operator {dag.ids[k]!r} is listed twice", f"{field}[{p}]")
        position[k] = p
    if len(order) != dag.n:
        missing = dag.ids[int(np.flatnonzero(position < 0)[0])]
        raise InputError(f"operator {missing!r} is not in the order", field)
    for k in order:
        for e in range(dag.pred_ptr[k], dag.pred_ptr[k + 1]):
            w = int(dag.pred_idx[e])
            if position[w] > position[k]:
                what = dag.pred_reason[e]
                reason = (
                    f"reads {what!r} before operator {dag.ids[w]!r} writes it"
                    if what
                    else f"runs before operator {dag.ids[w]!r}, which it must follow"
                )
                raise InputError(f"operator {dag.ids[k]!r} {reason}", f"{field}[{position[k]}]")
