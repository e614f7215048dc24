"""An order's lifetimes tightened: each operator moved as early, then as late, as its dependencies
allow, wherever that keeps every instant at or below the order's bound and lowers the bytes held over time.

The order search scores an order by its heaviest instant alone, so everywhere
else an operator may sit anywhere its dependencies allow: an output made long
before it is read, an input kept long after it could have been used up. The
bound does not see those bytes, but a layout does: they are long lifetimes
that cross the ones around them, and no placement of a plateau of instants
near the bound then stays under it (a training graph's chosen order, where
the exported order's saved tensors nest). Moving each operator as early as
its dependencies allow (next to what it reads), then each as late (next to
what reads it), kept only where no instant rises above the bound and the sum
of the live bytes over all instants falls, shortens those lifetimes and
leaves the bound as it was (or lower).

Every move keeps the order valid: an operator moved earlier still follows
everything it depends on, one moved later still precedes everything that
depends on it. Deterministic; a deadline may end it early, at a valid order
no worse than the one given.
"""

from __future__ import annotations

import time

import numpy as np

from gaplanner.schedule.dag import Dag
from gaplanner.schedule.memory import LoadModel

#: Rounds of passes over the order (an early pass, then a late one), at most; a round that moves
#: nothing ends it.
ROUNDS = 2


def tighten(order: np.ndarray, dag: Dag, model: LoadModel, deadline: float = float("inf")) -> np.ndarray:
    """``order`` (a topological order of ``dag``'s operators) with its lifetimes tightened (see the module);
    its bound never rises. ``deadline``: a :func:`time.perf_counter` time to stop at."""
    mover = _Mover(np.asarray(order, np.int64), dag, model, deadline)
    for _ in range(ROUNDS):
        early, late = mover.sweep(early=True), mover.sweep(early=False)
        if not (early or late):
            break
    return mover.order


class _Mover:
    """One order, its positions and the bytes it holds over time, moved one operator at a time."""

    def __init__(self, order: np.ndarray, dag: Dag, model: LoadModel, deadline: float) -> None:
        self.order, self.dag, self.model, self.deadline = order.copy(), dag, model, deadline
        self.bound = model.peak(order)
        self.area = int(model.profile(order).sum())
        self.pos = np.empty(len(order), np.int64)
        self.pos[order] = np.arange(len(order))

    def sweep(self, early: bool) -> bool:
        """Each operator (in order for an early pass, backwards for a late one) moved as far as its
        dependencies allow, where the move keeps the bound and lowers the area; whether any moved."""
        dag, moved = self.dag, False
        for k in (self.order if early else self.order[::-1]).copy().tolist():
            if time.perf_counter() > self.deadline:
                return False
            p = int(self.pos[k])
            if early:
                preds = dag.pred_idx[dag.pred_ptr[k] : dag.pred_ptr[k + 1]]
                target = int(self.pos[preds].max()) + 1 if len(preds) else 0
            else:
                succs = dag.succ_idx[dag.succ_ptr[k] : dag.succ_ptr[k + 1]]
                target = int(self.pos[succs].min()) - 1 if len(succs) else len(self.order) - 1
            if target != p and (target < p) == early:
                moved |= self._try(k, p, target)
        return moved

    def _try(self, k: int, p: int, target: int) -> bool:
        """Move operator ``k`` from position ``p`` to ``target`` if that keeps the bound, lowers the area."""
        o = self.order
        if target < p:
            moved = np.concatenate([o[:target], [k], o[target:p], o[p + 1 :]])
        else:
            moved = np.concatenate([o[:p], o[p + 1 : target + 1], [k], o[target + 1 :]])
        profile = self.model.profile(moved)
        area = int(profile.sum())
        if max(int(profile.max()), self.model.blocks.pinned_top) > self.bound or area >= self.area:
            return False
        self.order, self.area = moved, area
        lo, hi = min(p, target), max(p, target)
        self.pos[moved[lo : hi + 1]] = np.arange(lo, hi + 1)
        return True
