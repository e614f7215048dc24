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

from gaplanner.native import _schedule
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


def surely_live(dag: Dag, blocks: Blocks, topo: np.ndarray) -> SurelyLive:
    """The bytes surely live at each operator in every order, and the order-free bound they give."""
    n = dag.n
    words = max(1, min((n + 63) // 64, WORD_BUDGET // max(n, 1)))
    load, related = _schedule.surely_live(
        np.ascontiguousarray(topo, np.int64), dag.pred_ptr, dag.pred_idx, dag.succ_ptr, dag.succ_idx,
        blocks.acc_ptr, blocks.acc_op, blocks.sizes, np.ascontiguousarray(blocks.from_start, np.bool_),
        np.ascontiguousarray(blocks.kept, np.bool_), words,
    )  # fmt: skip
    saving = np.zeros(n, np.int64)
    np.add.at(saving, blocks.ip_op, blocks.ip_size)
    load = load - saving
    bound = max(int(load.max(initial=0)), blocks.kept_bytes, blocks.pinned_top)
    return SurelyLive(load=load, cut=related == n + 1, bound=bound)
