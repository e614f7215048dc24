"""An order's bound, fast: the live bytes at each operator when the operators run in that order.

The project's conventions (those of :mod:`gaplanner.documents.lifetimes` and
:mod:`gaplanner.problem.storage`):
a block lives from its first write to its last access, inclusive; a view shares
its input's block; a graph input lives from the first operator; a kept model
output lives to the end (one position past the last operator, where the caller
reads it); a workspace lives at its operator only. An in-place chance (an
output written over an input that dies at that operator in this order) saves
the output's bytes at that operator, as :func:`gaplanner.problem.storage.relaxed_bound`
counts it: the bound is then valid whichever legal chances a plan takes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.documents.lifetimes import analyse_graph
from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document
from gaplanner.native import _schedule
from gaplanner.problem.storage import group_tensors


@dataclass(frozen=True)
class Blocks:
    """The storage blocks of a graph, their accesses by operator (document index) and in-place chances.

    ``acc_ptr``/``acc_op``: block ``b`` is written or read by operators
    ``acc_op[acc_ptr[b]:acc_ptr[b+1]]``. ``from_start``: a graph input's block,
    live from the first operator; ``kept``: live to the end. In-place chance
    ``c`` saves ``ip_size[c]`` at operator ``ip_op[c]`` when one of its hosts
    ``ip_host[ip_ptr[c]:ip_ptr[c+1]]`` has no access after that operator.
    """

    n_ops: int
    sizes: np.ndarray
    acc_ptr: np.ndarray
    acc_op: np.ndarray
    from_start: np.ndarray
    kept: np.ndarray
    ip_op: np.ndarray
    ip_size: np.ndarray
    ip_ptr: np.ndarray
    ip_host: np.ndarray
    pinned_top: int

    @property
    def n_blocks(self) -> int:
        return len(self.sizes)

    @property
    def kept_bytes(self) -> int:
        """The live bytes after the last operator, the same in every order."""
        return int(self.sizes[self.kept].sum())


def build_blocks(doc: Document, rules: Rules | None = None) -> Blocks:
    """The blocks of a graph document under ``rules``, views joined and no in-place chance taken."""
    rules = rules or Rules()
    tensors = analyse_graph(doc, keep_outputs=rules.keep_outputs)
    storage = group_tensors(
        tensors, Rules(keep_outputs=rules.keep_outputs, views=rules.views, inplace="never")
    )
    n = tensors.n_ops
    op_index = {op.id: k for k, op in enumerate(doc.operators or [])}
    doc_of_position = np.array([op_index[i] for i in tensors.operator_ids], np.int64)
    kept = np.array([a[-1] == n for a in storage.accesses], bool)
    inside = [a[a < n] for a in storage.accesses]
    acc_ptr = np.concatenate([[0], np.cumsum([len(a) for a in inside])]).astype(np.int64)
    acc_op = doc_of_position[np.concatenate(inside)] if inside else np.zeros(0, np.int64)
    chances = _inplace_chances(tensors, storage, rules) if rules.inplace != "never" else []
    ip_ptr = np.concatenate([[0], np.cumsum([len(h) for _, _, h in chances])]).astype(np.int64)
    pinned = storage.pinned >= 0
    return Blocks(
        n_ops=n,
        sizes=storage.sizes.astype(np.int64),
        acc_ptr=acc_ptr,
        acc_op=acc_op.astype(np.int64),
        from_start=storage.writer < 0,
        kept=kept,
        ip_op=np.array([doc_of_position[p] for p, _, _ in chances], np.int64),
        ip_size=np.array([s for _, s, _ in chances], np.int64),
        ip_ptr=ip_ptr,
        ip_host=np.array([b for _, _, h in chances for b in h], np.int64),
        pinned_top=int(np.where(pinned, storage.pinned + storage.sizes, 0).max(initial=0)),
    )


def _inplace_chances(tensors, storage, rules: Rules) -> list[tuple[int, int, list[int]]]:  # type: ignore[no-untyped-def]
    """(position, bytes saved, host blocks) of each in-place chance that some order could make legal.

    The order-free parts of :func:`gaplanner.problem.storage._inplace_is_legal`: the
    host is another, unpinned block not written by this operator, no larger
    output, memories both can reach; the output's block starts at the operator.
    Whether the host dies there depends on the order.
    """
    block_of = storage.block_of
    chances = []
    for out, candidates, at in tensors.inplace:
        ob = int(block_of[out])
        if storage.pinned[ob] >= 0 or storage.writer[ob] != at or storage.roots[ob] != out:
            continue
        hosts = []
        for cand in candidates:
            hb = int(block_of[cand])
            written_here = bool(np.any(tensors.writer[block_of == hb] == at))
            reach_a, reach_b = _reach(storage, hb), _reach(storage, ob)
            disjoint = reach_a is not None and reach_b is not None and not (reach_a & reach_b)
            if hb == ob or storage.pinned[hb] >= 0 or written_here or disjoint:
                continue
            if storage.sizes[ob] > tensors.sizes[cand]:
                continue
            hosts.append(hb)
        if hosts:
            chances.append((at, int(storage.sizes[ob]), hosts))
    return chances


def _reach(storage, b: int):  # type: ignore[no-untyped-def]
    return storage.reach[b] if storage.reach else None


class LoadModel:
    """Scores orders against one document's blocks, reusing its work arrays (not thread-safe)."""

    def __init__(self, blocks: Blocks) -> None:
        self.blocks = blocks
        self.load = np.zeros(blocks.n_ops + 1, np.int64)
        self.last = np.zeros(blocks.n_blocks, np.int64)
        self.pos = np.zeros(blocks.n_ops, np.int64)

    def args(self) -> tuple:  # type: ignore[type-arg]
        """The blocks as the kernels read them (gaplanner.native._schedule's ``model``)."""
        b = self.blocks
        flags = (np.ascontiguousarray(f, np.bool_) for f in (b.from_start, b.kept))
        ints = (np.ascontiguousarray(a, np.int64) for a in (b.ip_op, b.ip_size, b.ip_ptr, b.ip_host))
        return (b.sizes, b.acc_ptr, b.acc_op, *flags, *ints)

    def profile(self, order: np.ndarray) -> np.ndarray:
        """Live bytes at each position of ``order`` (operator indices), and after the last one."""
        self.pos[order] = np.arange(len(order))
        _schedule.profile(self.pos, self.blocks.n_ops, self.args(), self.load, self.last)
        return self.load.copy()

    def peak(self, order: np.ndarray) -> int:
        """The order's bound: the most bytes live at once (in-place savings counted as possible)."""
        return max(int(self.profile(order).max()), self.blocks.pinned_top)
