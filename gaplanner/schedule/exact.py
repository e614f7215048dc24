"""Exact orders where it pays: dynamic programming over the sets of operators already run, per part.

An operator comparable with every other one (a *cut*: each other operator is
its ancestor or its descendant) runs at the same place in every order, after
the same operators. The cuts split the graph into parts that every order runs
one after another; a block accessed before a part and after it is live through
the whole part. So the best order of the whole is the best order of each part,
put together, and its bound the largest of the parts' and the cuts' bounds.

A part of at most 62 operators whose sets of operators run (its down-sets) stay
within a budget is solved exactly: ``best[T]`` is the lowest peak over orders
running set ``T`` first, and running ``v`` next costs the bytes live at ``v``
given ``T`` (the same rules as :mod:`gaplanner.schedule.memory`, in-place savings
included). A part beyond that keeps the reachability bound of its operators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.native import _schedule
from gaplanner.schedule.bounds import SurelyLive
from gaplanner.schedule.dag import Dag
from gaplanner.schedule.memory import Blocks

#: Largest part solved exactly (operators; a set of them is one 64-bit word).
MAX_PART = 62


@dataclass(frozen=True)
class PartsResult:
    """The order-free bound from the cuts and parts, and an order best in each part solved exactly.

    ``order`` runs each part solved exactly in its best order and every other
    part as ``given`` does; ``exact`` says whether every part was solved (then
    ``order`` is optimal and ``bound`` its peak).
    """

    bound: int
    order: np.ndarray
    solved: int
    parts: int

    @property
    def exact(self) -> bool:
        return self.solved == self.parts


def _parts(live: SurelyLive, given: np.ndarray) -> list[tuple[int, int]]:
    """Position ranges of ``given``: each cut alone, and the runs of operators between cuts."""
    parts, start = [], 0
    for p, k in enumerate(given.tolist()):
        if live.cut[k]:
            if start < p:
                parts.append((start, p))
            parts.append((p, p + 1))
            start = p + 1
    if start < len(given):
        parts.append((start, len(given)))
    return parts


class _Spans:
    """Per block, its first and last access as positions of ``given`` (-1: a graph input, n: kept)."""

    def __init__(self, blocks: Blocks, given: np.ndarray) -> None:
        n = len(given)
        self.rank = np.empty(n, np.int64)
        self.rank[given] = np.arange(n)
        self.acc_rank = self.rank[blocks.acc_op]
        owner = np.repeat(np.arange(blocks.n_blocks), np.diff(blocks.acc_ptr))
        self.owner = owner
        first = np.full(blocks.n_blocks, n, np.int64)
        last = np.full(blocks.n_blocks, -1, np.int64)
        np.minimum.at(first, owner, self.acc_rank)
        np.maximum.at(last, owner, self.acc_rank)
        self.first = np.where(blocks.from_start, -1, first)
        self.last = np.where(blocks.kept, n, last)
        diff = np.zeros(n + 2, np.int64)
        np.add.at(diff, self.first + 1, blocks.sizes)
        np.add.at(diff, self.last + 1, -blocks.sizes)
        self.crossing_in = np.cumsum(diff)  # [s]: bytes of blocks with first < s <= last
        self.by_rank = np.argsort(self.acc_rank, kind="stable")  # accesses, and chances, by position
        self.sorted_rank = self.acc_rank[self.by_rank]
        chance_rank = self.rank[blocks.ip_op]
        self.chances_by_rank = np.argsort(chance_rank, kind="stable")
        self.sorted_chance_rank = chance_rank[self.chances_by_rank]

    def accesses(self, s0: int, s1: int) -> np.ndarray:
        """The accesses by the operators at positions ``[s0, s1)``."""
        lo, hi = np.searchsorted(self.sorted_rank, [s0, s1])
        return self.by_rank[lo:hi]

    def chances(self, s0: int, s1: int) -> list[int]:
        """The in-place chances of the operators at positions ``[s0, s1)``."""
        lo, hi = np.searchsorted(self.sorted_chance_rank, [s0, s1])
        return self.chances_by_rank[lo:hi].tolist()


def _solve_part(
    dag: Dag, blocks: Blocks, given: np.ndarray, spans: _Spans, s0: int, s1: int, state_limit: int
) -> tuple[int, np.ndarray] | None:
    """The best peak and order of the operators at positions ``[s0, s1)`` of ``given``, or None."""
    ops = given[s0:s1]
    m = len(ops)
    in_part = spans.accesses(s0, s1)
    members = np.unique(spans.owner[in_part])
    crossing = (spans.first[members] < s0) & (spans.last[members] >= s1)
    local = members[~crossing]
    constant = int(spans.crossing_in[s0]) - int(
        blocks.sizes[local][(spans.first[local] < s0) & (spans.last[local] < s1)].sum()
    )
    where = {int(b): i for i, b in enumerate(local.tolist())}
    inside = np.zeros(len(local), np.int64)
    for e in in_part.tolist():
        b = where.get(int(spans.owner[e]))
        if b is not None:
            inside[b] |= 1 << int(spans.acc_rank[e] - s0)
    pred_mask = np.zeros(m, np.int64)
    for i, k in enumerate(ops.tolist()):
        for p in dag.predecessors(k).tolist():
            if s0 <= spans.rank[p] < s1:
                pred_mask[i] |= 1 << int(spans.rank[p] - s0)
    chances = spans.chances(s0, s1)
    hosts = [[where[h] for h in _hosts(blocks, c) if h in where] for c in chances]
    value, order = _schedule.part_dp(
        m, pred_mask, inside, spans.first[local] < s0, spans.last[local] >= s1,
        blocks.sizes[local].astype(np.int64), constant,
        np.array([spans.rank[blocks.ip_op[c]] - s0 for c in chances], np.int64),
        blocks.ip_size[chances].astype(np.int64),
        np.concatenate([[0], np.cumsum([len(h) for h in hosts])]).astype(np.int64),
        np.array([h for hs in hosts for h in hs], np.int64), state_limit,
    )  # fmt: skip
    return None if value < 0 else (int(value), ops[order])


def _hosts(blocks: Blocks, c: int) -> list[int]:
    return blocks.ip_host[blocks.ip_ptr[c] : blocks.ip_ptr[c + 1]].tolist()


def solve_parts(
    dag: Dag, blocks: Blocks, given: np.ndarray, live: SurelyLive, state_limit: int = 100_000
) -> PartsResult:
    """Split at the cuts, solve each small part exactly, and bound the rest by reachability."""
    spans = _Spans(blocks, given)
    bound = max(blocks.kept_bytes, blocks.pinned_top)
    order = given.copy()
    parts = _parts(live, given)
    solved = 0
    for s0, s1 in parts:
        answer = _solve_part(dag, blocks, given, spans, s0, s1, state_limit) if s1 - s0 <= MAX_PART else None
        if answer is None:
            bound = max(bound, int(live.load[given[s0:s1]].max()))
            continue
        solved += 1
        bound = max(bound, answer[0])
        order[s0:s1] = answer[1]
    return PartsResult(bound=bound, order=order, solved=solved, parts=len(parts))
