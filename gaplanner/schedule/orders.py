"""Starting orders: what compilers and runtimes do to order operators, each a valid order.

* ``given``: the document's own order.
* ``late``: every operator as late as possible (just before its first consumer).
* ``post-order``: depth-first from the model's last operators, each operator's
  inputs computed in the document's order, then the operator (XLA's post-order).
* ``dfs``: the same, the input whose producing subgraph holds the most bytes
  first (XLA's DFS memory scheduler visits operands by their total sizes).
* ``bfs``: level by level from the inputs (Inductor's BFS).
* ``lpmf``: least peak memory first (Inductor's ``topological_sort_lpmf``): among
  the ready operators, while some would stay within the peak so far, the one
  leaving the fewest bytes live after it; otherwise the one needing the fewest
  while it runs.
* ``list``: XLA's list scheduler: the ready operator freeing the most bytes net
  of what it allocates.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from gaplanner.schedule.dag import Dag
from gaplanner.schedule.memory import Blocks

StartingOrder = Callable[[Dag, Blocks, np.ndarray], np.ndarray]


def _kahn(dag: Dag, priority: np.ndarray) -> np.ndarray:
    """The topological order taking the ready operator of lowest ``priority`` (then lowest index)."""
    indegree = np.diff(dag.pred_ptr).copy()
    ready = [(priority[k], k) for k in np.flatnonzero(indegree == 0).tolist()]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for v in dag.successors(u).tolist():
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, (priority[v], v))
    return np.array(order, np.int64)


def given_order(dag: Dag, blocks: Blocks, given: np.ndarray) -> np.ndarray:
    return given.copy()


def as_late_as_possible(dag: Dag, blocks: Blocks, given: np.ndarray) -> np.ndarray:
    """Built from the end: an operator goes in as soon as every consumer is in, so it runs just before
    its first consumer (ties: the later in the given order first)."""
    rank = np.empty(dag.n, np.int64)
    rank[given] = np.arange(dag.n)
    outdegree = np.diff(dag.succ_ptr).copy()
    ready = [(0, -rank[k], k) for k in np.flatnonzero(outdegree == 0).tolist()]
    heapq.heapify(ready)
    reverse: list[int] = []
    while ready:
        u = heapq.heappop(ready)[2]
        reverse.append(u)
        for v in dag.predecessors(u).tolist():
            outdegree[v] -= 1
            if outdegree[v] == 0:  # ready now: before anything readied earlier
                heapq.heappush(ready, (-len(reverse), -rank[v], v))
    return np.array(reverse[::-1], np.int64)


def _post_order(dag: Dag, given: np.ndarray, first: Callable[[int], list[int]]) -> np.ndarray:
    """Depth-first from the operators nothing depends on (in given order), inputs first as ``first`` says."""
    rank = np.empty(dag.n, np.int64)
    rank[given] = np.arange(dag.n)
    done = np.zeros(dag.n, bool)
    order: list[int] = []
    roots = sorted(np.flatnonzero(np.diff(dag.succ_ptr) == 0).tolist(), key=lambda k: rank[k])
    for root in roots:
        stack = [(root, iter(first(root)))]
        done[root] = True
        while stack:
            node, children = stack[-1]
            child = next((c for c in children if not done[c]), None)
            if child is None:
                order.append(node)
                stack.pop()
            else:
                done[child] = True
                stack.append((child, iter(first(child))))
    return np.array(order, np.int64)


def post_order(dag: Dag, blocks: Blocks, given: np.ndarray) -> np.ndarray:
    rank = np.empty(dag.n, np.int64)
    rank[given] = np.arange(dag.n)
    return _post_order(dag, given, lambda k: sorted(dag.predecessors(k).tolist(), key=lambda p: rank[p]))


def _written_bytes(blocks: Blocks, rank: np.ndarray) -> np.ndarray:
    """Bytes of the blocks each operator writes: a block's first accessor in one order is its first in all."""
    written = np.zeros(len(rank), np.float64)
    for b in range(blocks.n_blocks):
        ops = blocks.acc_op[blocks.acc_ptr[b] : blocks.acc_ptr[b + 1]]
        if len(ops) and not blocks.from_start[b]:
            written[ops[np.argmin(rank[ops])]] += blocks.sizes[b]
    return written


def depth_first(dag: Dag, blocks: Blocks, given: np.ndarray) -> np.ndarray:
    rank = np.empty(dag.n, np.int64)
    rank[given] = np.arange(dag.n)
    total = _written_bytes(blocks, rank)
    for k in given.tolist():  # a topological order: predecessors' totals are final
        # shared inputs count once per path, as XLA's estimate does; capped so deep graphs stay finite
        total[k] = min(total[k] + sum(total[p] for p in dag.predecessors(k).tolist()), 1e300)
    return _post_order(
        dag, given, lambda k: sorted(dag.predecessors(k).tolist(), key=lambda p: (-total[p], rank[p]))
    )


def breadth_first(dag: Dag, blocks: Blocks, given: np.ndarray) -> np.ndarray:
    level = np.zeros(dag.n, np.int64)
    for k in given.tolist():
        preds = dag.predecessors(k)
        if len(preds):
            level[k] = level[preds].max() + 1
    rank = np.empty(dag.n, np.int64)
    rank[given] = np.arange(dag.n)
    return _kahn(dag, level * dag.n + rank)


class _Greedy:
    """Live bytes while operators are appended one by one, for the memory-aware list schedulers."""

    def __init__(self, dag: Dag, blocks: Blocks) -> None:
        self.blocks = blocks
        sizes = blocks.sizes
        self.remaining = np.diff(blocks.acc_ptr).copy()
        self.alive = blocks.from_start.copy()
        self.current = int(sizes[blocks.from_start].sum())
        pairs = sorted(
            (int(k), b)
            for b in range(blocks.n_blocks)
            for k in blocks.acc_op[blocks.acc_ptr[b] : blocks.acc_ptr[b + 1]]
        )
        self.of_op: list[list[int]] = [[] for _ in range(dag.n)]
        for k, b in pairs:
            self.of_op[k].append(b)
        self.users: list[list[int]] = [
            blocks.acc_op[blocks.acc_ptr[b] : blocks.acc_ptr[b + 1]].tolist() for b in range(blocks.n_blocks)
        ]

    def during_after(self, k: int) -> tuple[int, int]:
        """Live bytes while ``k`` runs next, and after it (its inputs dying there freed)."""
        sizes, alive, kept = self.blocks.sizes, self.alive, self.blocks.kept
        alloc = sum(int(sizes[b]) for b in self.of_op[k] if not alive[b])
        free = sum(int(sizes[b]) for b in self.of_op[k] if self.remaining[b] == 1 and not kept[b])
        return self.current + alloc, self.current + alloc - free

    def run(self, k: int) -> set[int]:
        """Append ``k``; the operators whose numbers changed (they share a block with it)."""
        _, after = self.during_after(k)
        self.current = after
        touched: set[int] = set()
        for b in self.of_op[k]:
            self.alive[b] = True
            self.remaining[b] -= 1
            touched.update(self.users[b])
        return touched


def _greedy(dag: Dag, blocks: Blocks, given: np.ndarray, choose: Callable) -> np.ndarray:  # type: ignore[type-arg]
    """A list scheduler: ``choose(scores, peak)`` picks among the ready operators' (during, after, rank)."""
    rank = np.empty(dag.n, np.int64)
    rank[given] = np.arange(dag.n)
    state = _Greedy(dag, blocks)
    indegree = np.diff(dag.pred_ptr).copy()
    scores = {k: (*state.during_after(k), int(rank[k])) for k in np.flatnonzero(indegree == 0).tolist()}
    order, peak = [], state.current
    while scores:
        k = choose(scores, peak)
        peak = max(peak, scores.pop(k)[0])
        order.append(k)
        touched = {v for v in state.run(k) if v in scores}
        for v in dag.successors(k).tolist():
            indegree[v] -= 1
            if indegree[v] == 0:
                touched.add(v)
        for v in touched:
            scores[v] = (*state.during_after(v), int(rank[v]))
    return np.array(order, np.int64)


def _lpmf_choice(scores: dict[int, tuple[int, int, int]], peak: int) -> int:
    within = [(after, r, k) for k, (during, after, r) in scores.items() if during <= peak]
    if within:
        return min(within)[2]
    return min((during, r, k) for k, (during, _, r) in scores.items())[2]


def _list_choice(scores: dict[int, tuple[int, int, int]], peak: int) -> int:
    return min((after, r, k) for k, (_, after, r) in scores.items())[2]


def least_peak_first(dag: Dag, blocks: Blocks, given: np.ndarray) -> np.ndarray:
    return _greedy(dag, blocks, given, _lpmf_choice)


def list_schedule(dag: Dag, blocks: Blocks, given: np.ndarray) -> np.ndarray:
    return _greedy(dag, blocks, given, _list_choice)


#: Every starting order by name, the given order first.
STARTING_ORDERS: dict[str, StartingOrder] = {
    "given": given_order,
    "late": as_late_as_possible,
    "post-order": post_order,
    "dfs": depth_first,
    "bfs": breadth_first,
    "lpmf": least_peak_first,
    "list": list_schedule,
}
