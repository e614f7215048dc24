"""A stronger order-free bound at chosen operators: a minimum cut through the operators left free.

While operator ``v`` runs, every operator before it in all orders (an
ancestor) has run and every one after it in all orders (a descendant) has not;
the others may have run or not. Whichever have, the blocks touched both by
operators run and by operators not yet run (a graph input counts as run, a kept
output as not yet read) are live. So the bytes live at ``v`` in any order are
at least those of ``v``'s own blocks plus a minimum cut of the other blocks,
seen as hyperedges over their operators, between the ancestors and the
descendants, the operators run closed under dependencies. Every block a free
operator touches is in the cut, also one only free operators touch: a chain
of free operators that turns a saved tensor into another (a training graph's
backward work that needs no gradient) holds one of its links at ``v``
whichever of them have run. That holds the bytes the reachability bound
misses, such as a tensor recomputed by an operator that may run early or late
(one of the two is live at ``v`` either way). An in-place write at ``v``
saves its bytes only where a host can die at ``v`` (no descendant reads it).
Maximum flow (SciPy) finds the cut; sizes are counted in units small enough
for its 32-bit capacities, rounding down.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

from gaplanner.schedule.dag import Dag
from gaplanner.schedule.memory import Blocks

INFINITE = 2**31 - 1


def _reach(dag: Dag, v: int, forward: bool) -> np.ndarray:
    """Operators strictly after (``forward``) or before ``v`` in every order."""
    ptr, idx = (dag.succ_ptr, dag.succ_idx) if forward else (dag.pred_ptr, dag.pred_idx)
    seen = np.zeros(dag.n, bool)
    stack = [v]
    while stack:
        u = stack.pop()
        for w in idx[ptr[u] : ptr[u + 1]].tolist():
            if not seen[w]:
                seen[w] = True
                stack.append(w)
    return seen


def cut_bound_at(dag: Dag, blocks: Blocks, owner: np.ndarray, v: int) -> int:
    """Bytes live while ``v`` runs in every order, less what it may write in place."""
    side = np.zeros(dag.n, np.int8)  # 0 free, 1 before v in every order, 2 after
    side[_reach(dag, v, False)] = 1
    side[_reach(dag, v, True)] = 2
    side[v] = 3
    acc_side = side[blocks.acc_op]
    n_blocks = blocks.n_blocks
    touches = np.zeros((n_blocks, 4), bool)
    touches[owner, acc_side] = True
    touches[:, 1] |= blocks.from_start
    touches[:, 2] |= blocks.kept
    own = touches[:, 3]
    forced = own | (touches[:, 1] & touches[:, 2])
    free = ~forced & touches[:, 0]
    saving = _saving(blocks, side, v)
    base = int(blocks.sizes[forced].sum()) - saving
    if not free.any():
        return base
    return base + _min_cut(dag, blocks, owner, side, free)


def _saving(blocks: Blocks, side: np.ndarray, v: int) -> int:
    """Bytes ``v`` may write in place: a chance counts where one of its hosts can die at ``v`` in some order
    (it is not kept and no descendant of ``v`` reads it)."""
    total = 0
    for c in np.flatnonzero(blocks.ip_op == v).tolist():
        for h in blocks.ip_host[blocks.ip_ptr[c] : blocks.ip_ptr[c + 1]].tolist():
            readers = blocks.acc_op[blocks.acc_ptr[h] : blocks.acc_ptr[h + 1]]
            if not blocks.kept[h] and not (side[readers] == 2).any():
                total += int(blocks.ip_size[c])
                break
    return total


def _min_cut(dag: Dag, blocks: Blocks, owner: np.ndarray, side: np.ndarray, free: np.ndarray) -> int:
    """The lightest set of ``free`` blocks whose removal separates the ancestors from the descendants."""
    chosen = np.flatnonzero(free)
    sizes = blocks.sizes[chosen]
    unit = max(1, -(-int(sizes.sum()) // 2**30))
    free_ops = np.flatnonzero(side == 0)
    node = np.full(len(side), -1, np.int64)
    node[free_ops] = np.arange(len(free_ops))
    source, sink = len(free_ops), len(free_ops) + 1
    b_in = sink + 1 + np.arange(len(chosen))
    b_out = b_in + len(chosen)
    local = np.full(blocks.n_blocks, -1, np.int64)
    local[chosen] = np.arange(len(chosen))
    edges = [(b_in, b_out, sizes // unit)]  # (from, to, capacity) arrays
    e = np.flatnonzero(local[owner] >= 0)
    blk, op = local[owner[e]], blocks.acc_op[e]
    s = side[op]
    ends_in = np.where(s == 0, node[op], np.where(s == 1, source, -1))
    ends_out = np.where(s == 0, node[op], np.where(s == 2, sink, -1))
    edges.append((ends_in[ends_in >= 0], b_in[blk[ends_in >= 0]], None))
    edges.append((b_out[blk[ends_out >= 0]], ends_out[ends_out >= 0], None))
    starts, kept = np.flatnonzero(blocks.from_start[chosen]), np.flatnonzero(blocks.kept[chosen])
    edges.append((np.full(len(starts), source), b_in[starts], None))
    edges.append((b_out[kept], np.full(len(kept), sink), None))
    # An operator run means its predecessors ran: a free successor on the run side pulls its free predecessor.
    heads = np.repeat(np.arange(dag.n), np.diff(dag.succ_ptr))
    both = (side[heads] == 0) & (side[dag.succ_idx] == 0)
    edges.append((node[dag.succ_idx[both]], node[heads[both]], None))
    rows = np.concatenate([a for a, _, _ in edges])
    cols = np.concatenate([b for _, b, _ in edges])
    caps = np.concatenate([c if c is not None else np.full(len(a), INFINITE) for a, _, c in edges])
    size = int(b_out[-1]) + 1
    graph = csr_matrix((caps.astype(np.int64), (rows, cols)), shape=(size, size))
    graph.sum_duplicates()
    graph.data = np.minimum(graph.data, INFINITE).astype(np.int32)
    return int(maximum_flow(graph, source, sink, method="dinic").flow_value) * unit


def cut_bound(dag: Dag, blocks: Blocks, candidates: np.ndarray, seconds: float) -> int:
    """The largest cut bound over ``candidates`` (operators, most promising first) within ``seconds``."""
    owner = np.repeat(np.arange(blocks.n_blocks), np.diff(blocks.acc_ptr))
    deadline = time.perf_counter() + seconds
    best = 0
    for v in candidates.tolist():
        best = max(best, cut_bound_at(dag, blocks, owner, v))
        if time.perf_counter() > deadline:
            break
    return best
