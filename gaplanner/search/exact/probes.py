"""Probes: the depth-first search (:mod:`gaplanner.search.exact.dfs`) asked one target at a time.

A :class:`Probe` holds the search's state arrays for one part and one target
and runs it a slice of placements at a time; a :class:`RestartingProbe`
restarts it with shuffled orders on the Luby schedule.
"""

from __future__ import annotations

import numpy as np

from gaplanner.search.exact.dfs import (
    _BIG,
    F_RK,
    F_START,
    FL_C,
    FL_TOP,
    HEURISTICS,
    INFEASIBLE,
    KEY_CODES,
    LV_BLK,
    LV_ROOT,
    MO_B,
    MO_TOP,
    NEED_SPACE,
    NEXT_GROUP,
    NODES,
    OFFSETS,
    PAUSED,
    RK_B,
    RK_TOP,
    SC,
    SKYLINE,
    SPLITS,
    TOTAL,
    _enter,
    search,
)
from gaplanner.search.exact.parts import Part


class Probe:
    """Is there a plan of ``part`` with every block below ``target``? Answered a slice at a time."""

    def __init__(self, part: Part, target: int, heuristic: str, rank: np.ndarray | None = None) -> None:
        """``rank``: the blocks' tie-break order (default: by ``heuristic``, see :meth:`Part.rank`)."""
        self.part, self.target, self.heuristic = part, target, heuristic
        n, m = len(part.sizes), len(part.clq_ptr) - 1
        rank = part.rank(heuristic) if rank is None else rank
        keys = np.array([KEY_CODES[letter] for letter in heuristic], np.int64)
        features = [np.asarray(part.features[letter], np.int64) for letter in "WAZLU"]
        nbr_least = smallest_neighbour(part)
        self.p = (part.sizes, part.aligns, part.fixed, rank, part.twins(rank), part.twin_class,
                  part.nbr_ptr, part.nbr_idx, part.clq_ptr, part.clq_idx, part.bc_ptr, part.bc_idx,
                  keys, *features, nbr_least, np.array([nbr_least.min(initial=_BIG)], np.int64))  # fmt: skip
        min_off = np.where(part.fixed >= 0, part.fixed, 0).astype(np.int64)
        floor, total, witness = np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64)
        for q in range(m):
            members = part.clq_idx[part.clq_ptr[q] : part.clq_ptr[q + 1]]
            witness[q] = members[np.argmin(min_off[members])]
            floor[q], total[q] = min_off[witness[q]], part.sizes[members].sum()
        groups = 2 * n + 2
        grp_left, grp_frame = np.zeros(groups, np.int64), np.full(groups, -1, np.int64)
        grp_left[0] = n
        levels = [np.zeros(n + 1, np.int64) for _ in range(LV_ROOT - LV_BLK + 1)]
        frames = [np.zeros(n + 1, np.int64) for _ in range(F_RK - F_START + 1)]
        # Along one branch each block is placed once and raises each neighbour's floor at most once; a
        # placement logs each clique of the block and each clique of a raised neighbour at most once.
        # The logs of floors start at a guess (on dense conflicts, all of them would not fit in memory
        # once per probe) and grow when a placement could overflow them.
        logs = [np.zeros(min(len(part.nbr_idx), 64 * n) + 1, np.int64) for _ in range(2)]
        logs += [np.zeros(2 * len(part.bc_idx) + 4 * m + 16, np.int64) for _ in range(2)]
        logs += [np.zeros(4 * n + 16, np.int64) for _ in range(2)]  # ranks the pieces of splits replace
        self.s = (
            np.full(n, -1, np.int64), min_off, floor, total, np.zeros(n, np.int64), grp_left, grp_frame,
            np.zeros(m, np.int64), rank.astype(np.int64), *levels, *frames, *logs, np.zeros(m, np.int64),
            np.zeros(m, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64), witness,
            np.zeros(9, np.int64),
        )  # fmt: skip
        self.s[SC][NEXT_GROUP] = 1  # group 0 holds every block at the start
        self.s[SC][SPLITS] = not part.large
        _enter(self.p, self.s, 0, 0, -1, -1, -1)
        fits = (floor + total <= target).all() and (min_off + part.sizes <= target).all()
        self.status = PAUSED if fits else INFEASIBLE

    @property
    def offsets(self) -> np.ndarray:
        return self.s[OFFSETS]

    @property
    def nodes(self) -> int:
        return int(self.s[SC][NODES])

    def run(self, budget: int) -> int:
        """Search up to ``budget`` more placements; the status (FOUND, INFEASIBLE or PAUSED)."""
        while self.status == PAUSED:
            status = search(self.p, self.s, self.target, budget)
            if status != NEED_SPACE:
                self.status = status
                break
            self._grow_logs()
        return self.status

    def _grow_logs(self) -> None:
        """Double each log (its entries and values) that one more placement could overflow.

        Only those: on a large part the log of raised floors alone grows to tens of millions.
        """
        part, sc, state = self.part, self.s[SC], list(self.s)
        most = (np.diff(part.nbr_ptr).max(initial=0), np.diff(part.bc_ptr).max(initial=0) + len(state[TOTAL]),
                len(part.sizes))  # fmt: skip
        for first, top, need in zip(
            (MO_B, FL_C, RK_B), (sc[MO_TOP], sc[FL_TOP], sc[RK_TOP]), most, strict=True
        ):
            length = len(state[first])
            if top + need > length:
                extra = max(length, top + need - length)
                for k in (first, first + 1):
                    state[k] = np.concatenate([state[k], np.zeros(extra, np.int64)])
        self.s = tuple(state)


def smallest_neighbour(part: Part) -> np.ndarray:
    """Per block, the smallest size among the blocks it conflicts with (the largest int64 for none)."""
    least = np.full(len(part.sizes), _BIG, np.int64)
    rows = np.flatnonzero(np.diff(part.nbr_ptr) > 0)
    if len(rows):
        least[rows] = np.minimum.reduceat(part.sizes[part.nbr_idx], part.nbr_ptr[rows])
    return least


def luby(i: int) -> int:
    """The ``i``-th term (from 1) of Luby's restart sequence: 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ..."""
    k = 1
    while (1 << k) - 1 < i:
        k += 1
    while i != (1 << k) - 1:
        i -= (1 << (k - 1)) - 1
        k = 1
        while (1 << k) - 1 < i:
            k += 1
    return 1 << (k - 1)


class RestartingProbe:
    """A probe that starts afresh, with a shuffled tie-break order, after Luby's sequence of placements.

    Depth-first search times are heavy-tailed: an order that goes wrong early
    stays wrong for a long time, while another finds a plan at once. Any of the
    restarted searches that finishes is as good a proof as a full one. On a part
    packed full (:attr:`Part.full`) it takes the skyline orders in turn, each
    block moved fewer places, so each order stays a sweep from one end of time
    to the other.
    """

    def __init__(
        self, part: Part, target: int, seed: int, unit: int = 4000, noise: int | None = None
    ) -> None:
        """``unit``: placements before the first restart, at least twice the blocks (a whole descent);
        ``noise``: how far a block may move in the order (default: 5 on a part packed full, else 20)."""
        self.part, self.target = part, target
        self.orders = SKYLINE if part.full else HEURISTICS
        self.noise = noise if noise is not None else 5 if part.full else 20
        self.unit = max(unit, 2 * len(part.sizes))
        self.rng = np.random.default_rng(seed)
        self.restarts, self.done_nodes = 0, 0
        self.status = PAUSED
        self._start()

    def _start(self) -> None:
        self.restarts += 1
        heuristic = self.orders[self.restarts % len(self.orders)]
        base = self.part.rank(heuristic)
        shuffled = base + self.rng.integers(0, self.noise, len(base))  # each block moves a few places
        rank = np.empty(len(base), np.int64)
        rank[np.lexsort((base, shuffled))] = np.arange(len(base))
        self.probe = Probe(self.part, self.target, heuristic, rank)
        self.limit = self.unit * luby(self.restarts)

    @property
    def offsets(self) -> np.ndarray:
        return self.probe.offsets

    @property
    def nodes(self) -> int:
        return self.done_nodes + self.probe.nodes

    def run(self, budget: int) -> int:
        if self.status != PAUSED:
            return self.status
        status = self.probe.run(min(budget, self.limit - self.probe.nodes))
        if status == PAUSED and self.probe.nodes >= self.limit:
            self.done_nodes += self.probe.nodes
            self._start()
        self.status = status
        return status
