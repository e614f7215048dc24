"""A lower bound on the live bytes valid for every order of the operators.

When operator ``v`` runs, in any order, a block is surely live if one of its
accesses is ``v`` or runs before it in every order (an ancestor, or the block
is a graph input) and one is ``v`` or runs after it in every order (a
descendant, or a kept output). The most bytes surely live at one operator,
less the outputs it could write in place over a dying input (so the bound holds
for every in-place choice, as :func:`gaplanner.problem.storage.relaxed_bound`), bounds
every order's peak. Reachability is computed as bitsets over a chunk of target
operators at a time, so memory stays within a few tens of megabytes at any
size. The same pass counts each operator's ancestors and descendants: an
operator comparable with every other one is a *cut*, where every order passes
through the same set of operators run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.compiled import njit
from gaplanner.schedule.dag import Dag
from gaplanner.schedule.memory import Blocks

#: Words (64 operators each) per reachability row, at most: the two bitset tables stay near 64 MB.
WORD_BUDGET = 1 << 22


@dataclass(frozen=True)
class SurelyLive:
    """Per operator (document index): bytes surely live while it runs, less its in-place outputs, and whether
    it is a cut."""

    load: np.ndarray
    cut: np.ndarray
    bound: int


@njit(nogil=True)
def _surely_live(
    topo: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    acc_ptr: np.ndarray,
    acc_op: np.ndarray,
    sizes: np.ndarray,
    from_start: np.ndarray,
    kept: np.ndarray,
    chunk_words: int,
) -> tuple[np.ndarray, np.ndarray]:
    n = len(topo)
    rank = np.empty(n, np.int64)
    for p in range(n):
        rank[topo[p]] = p
    load = np.zeros(n, np.int64)
    related = np.zeros(n, np.int64)  # ancestors + descendants, self counted twice
    chunk = chunk_words * 64
    desc = np.empty((n, chunk_words), np.uint64)
    anc = np.empty((n, chunk_words), np.uint64)
    d_row = np.empty(chunk_words, np.uint64)
    a_row = np.empty(chunk_words, np.uint64)
    one = np.uint64(1)
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        for p in range(n - 1, -1, -1):
            u = topo[p]
            desc[u, :] = 0
            if c0 <= p < c1:
                desc[u, (p - c0) >> 6] |= one << np.uint64((p - c0) & 63)
            for e in range(succ_ptr[u], succ_ptr[u + 1]):
                desc[u, :] |= desc[succ_idx[e], :]
        for p in range(n):
            u = topo[p]
            anc[u, :] = 0
            if c0 <= p < c1:
                anc[u, (p - c0) >> 6] |= one << np.uint64((p - c0) & 63)
            for e in range(pred_ptr[u], pred_ptr[u + 1]):
                anc[u, :] |= anc[pred_idx[e], :]
        for u in range(n):
            for w in range(chunk_words):
                related[u] += _popcount(desc[u, w]) + _popcount(anc[u, w])
        for b in range(len(sizes)):
            d_row[:] = ~np.uint64(0) if from_start[b] else 0
            a_row[:] = ~np.uint64(0) if kept[b] else 0
            for e in range(acc_ptr[b], acc_ptr[b + 1]):
                d_row |= desc[acc_op[e], :]
                a_row |= anc[acc_op[e], :]
            for w in range(chunk_words):
                word = d_row[w] & a_row[w]
                while word:
                    bit = _lowest_bit(word)
                    p = c0 + 64 * w + bit
                    if p < c1:
                        load[topo[p]] += sizes[b]
                    word &= word - one
    return load, related


@njit(inline="always")
def _popcount(x: np.uint64) -> int:
    count = 0
    while x:
        x &= x - np.uint64(1)
        count += 1
    return count


@njit(inline="always")
def _lowest_bit(x: np.uint64) -> int:
    bit = 0
    while not (x >> np.uint64(bit)) & np.uint64(1):
        bit += 1
    return bit


def surely_live(dag: Dag, blocks: Blocks, topo: np.ndarray) -> SurelyLive:
    """The bytes surely live at each operator in every order, and the order-free bound they give."""
    n = dag.n
    words = max(1, min((n + 63) // 64, WORD_BUDGET // max(n, 1)))
    load, related = _surely_live(
        topo, dag.pred_ptr, dag.pred_idx, dag.succ_ptr, dag.succ_idx,
        blocks.acc_ptr, blocks.acc_op, blocks.sizes, blocks.from_start, blocks.kept, words,
    )  # fmt: skip
    saving = np.zeros(n, np.int64)
    np.add.at(saving, blocks.ip_op, blocks.ip_size)
    load = load - saving
    bound = max(int(load.max(initial=0)), blocks.kept_bytes, blocks.pinned_top)
    return SurelyLive(load=load, cut=related == n + 1, bound=bound)
