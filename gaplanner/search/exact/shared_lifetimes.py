"""Blocks that share one lifetime, planned as one block.

A training graph keeps families of tensors alive over exactly the same steps
(its parameters and optimizer state, say: 1,609 tensors over one span in
iopddl_S). Such blocks conflict with the same blocks and with each other, so a
family stacked without gaps is one block of their total size. Planning the
family as one block takes its inner conflicts out of the problem (tens of
millions of pairs on the largest inputs, enough to bring them within the exact
search's limits) and stops a search from leaving gaps between its members.

Every plan of the merged problem is a plan of the original one (each family
stacked in its block's place, same peak), but not the other way round: a
bound proved on the merged problem (by the exact search) is not carried over,
so such a plan is marked optimal only at the original problem's own bound.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gaplanner.plans.plan import Plan, make_plan
from gaplanner.problem.problem import Problem, interval_problem
from gaplanner.search.exact.parts_search import searchable

#: The stop reason of a plan whose search proved it best only with each family kept together.
KEPT_TOGETHER = "best with blocks of one lifetime kept together"


@dataclass(frozen=True)
class Merged:
    """A problem with each family of blocks as one block, and where each original block lies in it."""

    problem: Problem
    family: np.ndarray  # per original block, its block in ``problem``
    within: np.ndarray  # per original block, its offset inside that block

    def expand(self, offsets: np.ndarray) -> np.ndarray:
        """The original blocks' offsets from a plan of the merged problem (each family stacked in order)."""
        return np.asarray(offsets, np.int64)[self.family] + self.within

    def original_plan(self, problem: Problem, plan: Plan, started: float) -> Plan:
        """``plan`` (of the merged problem) as a verified plan of ``problem``, bounded by its own bound."""
        offsets = self.expand(plan.offsets)
        peak = int((offsets + problem.sizes).max())
        stop = plan.stop_reason
        if stop == "optimal" and peak > problem.lower_bound:
            stop = KEPT_TOGETHER
        return make_plan(
            problem, offsets, plan.algorithm, started, stop_reason=stop, trace=plan.trace,
            search=plan.search, ray=plan.ray, decode_seconds=plan.decode_seconds,
        )  # fmt: skip


def merge_shared_lifetimes(problem: Problem) -> Merged | None:
    """The problem with every family of two or more blocks as one block; None if there is none.

    A family: blocks with one lifetime and one alignment whose sizes are
    multiples of it (so stacking them needs no padding and keeps the loads,
    hence the max-load bound). Only interval problems without pinned blocks:
    on a conflict graph one lifetime does not mean the same conflicts, and a
    stacked family may have to straddle a pinned block's fixed addresses,
    directly or through the blocks around it.
    """
    if not problem.interval_conflicts or problem.memories is not None or problem.clocks is not None:
        return None
    if problem.has_pinned:
        return None
    joinable = problem.sizes % problem.alignments == 0
    index = np.arange(problem.n)
    keys = np.stack(
        [
            np.where(joinable, problem.lower, -1),
            problem.upper,
            problem.alignments,
            np.where(joinable, -1, index),
        ],
        axis=1,
    )
    _, first, family = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    family = family.ravel()
    if len(first) == problem.n:
        return None
    # Number the merged blocks in the order of their first members: the blocks keep their order.
    renumber = np.empty(len(first), np.int64)
    renumber[np.argsort(first, kind="stable")] = np.arange(len(first))
    family, first = renumber[family], np.sort(first)
    sizes = np.zeros(len(first), np.int64)
    np.add.at(sizes, family, problem.sizes)  # in integers: a float sum loses bytes past 2**53
    order = np.argsort(family, kind="stable")  # each family's members in index order
    stacked = problem.sizes[order]
    before = np.cumsum(stacked) - stacked  # bytes before each member, counting every family
    within = np.empty(problem.n, np.int64)
    within[order] = before - before[np.searchsorted(family[order], family[order])]
    merged = interval_problem(
        problem.name, tuple(problem.ids[b] for b in first), sizes, problem.alignments[first],
        problem.lower[first], problem.upper[first], problem.pinned[first],
    )  # fmt: skip
    return Merged(replace(merged, lower_bound=max(merged.lower_bound, problem.lower_bound)), family, within)


#: Estimated seconds of merging per block (with the check that the merged problem is searchable), and
#: the most of the time left merging may take: at a million blocks it takes seconds, and a problem
#: that large stays beyond the exact search merged or not.
MERGE_SECONDS_PER_BLOCK = 5e-6
MERGE_SHARE = 0.02


def merged_for_exact_search(problem: Problem, seconds: float | None) -> Merged | None:
    """The merged problem, when the exact search takes it but not ``problem`` (see :func:`searchable`),
    and merging costs at most :data:`MERGE_SHARE` of the ``seconds`` left."""
    if seconds is not None and MERGE_SECONDS_PER_BLOCK * problem.n > MERGE_SHARE * seconds:
        return None  # asked first: whether the exact search takes the problem costs seconds too
    if not problem.interval_conflicts or searchable(problem, seconds=seconds):
        return None
    merged = merge_shared_lifetimes(problem)
    return merged if merged is not None and searchable(merged.problem, seconds=seconds) else None
