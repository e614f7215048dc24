"""From tensors to storage blocks: which tensors share bytes, and which block each takes.

A view and its input are one block. An in-place chance (an output written over
an input that dies at that operator) joins the output to the input's block
when :class:`~gaplanner.documents.rules.Rules` says to take it and it is legal: the
input's block is read by nothing after the operator, holds no model output or
pinned tensor, and is at least as large as the output's. A block's size is its
largest tensor's, its alignment every member's, and its lifetime the union of
theirs. With devices, a block's memory must be one that every unit touching
any member reaches: a view whose units share no memory with its input's is
refused, and an in-place chance between such tensors is not legal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.documents.lifetimes import GraphTensors
from gaplanner.documents.rules import Rules
from gaplanner.errors import InputError


@dataclass(frozen=True)
class Storage:
    """Blocks of a graph: ``block_of[t]`` is tensor ``t``'s block, ``roots[b]`` block ``b``'s first tensor."""

    block_of: np.ndarray  # int64 per tensor
    roots: np.ndarray  # int64 per block: the tensor that names it (its first-written member)
    sizes: np.ndarray
    alignments: np.ndarray
    pinned: np.ndarray  # fixed offset per block, -1 where the planner chooses
    writer: np.ndarray  # position of the block's first write, -1 for model inputs
    accesses: tuple[np.ndarray, ...]  # sorted positions touching any member
    #: per block, the memories every unit touching a member reaches (None: any)
    reach: tuple[frozenset[str] | None, ...] = ()

    @property
    def lower(self) -> np.ndarray:
        return np.maximum(self.writer, 0)

    @property
    def upper(self) -> np.ndarray:
        return np.array([a[-1] + 1 for a in self.accesses], np.int64)


class _Groups:
    """Union-find over tensors, with each group's facts kept at its representative."""

    def __init__(self, tensors: GraphTensors) -> None:
        self.parent = np.arange(len(tensors.ids))
        self.size = tensors.sizes.copy()
        self.alignment = tensors.alignments.copy()
        self.pinned = tensors.pinned.copy()
        self.accesses = [set(a.tolist()) for a in tensors.accesses]
        self.first = np.maximum(tensors.writer, 0)  # where its lifetime starts
        self.writes = [{int(w)} for w in tensors.writer]  # positions writing a member
        self.ids = tensors.ids
        #: per group, the memories every unit touching a member reaches (None: any)
        self.reach = list(tensors.devices.memories) if tensors.devices else [None] * len(tensors.ids)

    def find(self, t: int) -> int:
        while self.parent[t] != t:
            self.parent[t] = self.parent[self.parent[t]]
            t = self.parent[t]
        return int(t)

    def join(self, keep: int, other: int) -> None:
        """Merge ``other``'s group into ``keep``'s (both representatives)."""
        if self.pinned[keep] >= 0 and self.pinned[other] >= 0 and self.pinned[keep] != self.pinned[other]:
            raise InputError(
                f"{self.ids[other]!r} shares bytes with {self.ids[keep]!r} but is pinned at another offset",
                "offset",
            )
        self.parent[other] = keep
        self.size[keep] = max(self.size[keep], self.size[other])
        self.alignment[keep] = np.lcm(self.alignment[keep], self.alignment[other])
        self.pinned[keep] = max(self.pinned[keep], self.pinned[other])
        self.accesses[keep] |= self.accesses[other]
        self.first[keep] = min(self.first[keep], self.first[other])
        self.writes[keep] |= self.writes[other]
        self.reach[keep] = _common(self.reach[keep], self.reach[other])

    def lifetime(self, g: int) -> tuple[int, int]:
        """First and last position at which group ``g`` holds its bytes."""
        return int(self.first[g]), max(self.accesses[g])


def _common(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The memories in both sets (None: any memory)."""
    return b if a is None else a if b is None else a & b


def _join_views(groups: _Groups, tensors: GraphTensors) -> None:
    for view in np.flatnonzero(tensors.view_of >= 0):
        host, view_root = groups.find(int(tensors.view_of[view])), groups.find(int(view))
        if host != view_root:
            if _common(groups.reach[host], groups.reach[view_root]) == frozenset():
                raise InputError(
                    f"view {tensors.ids[view]!r} shares its input's bytes, but no memory is reachable by "
                    "every unit using the two",
                    f"tensors[{view}]",
                )
            groups.join(host, view_root)


def _inplace_is_legal(groups: _Groups, tensors: GraphTensors, candidate: int, out: int, at: int) -> bool:
    """The output may take the bytes of input ``candidate``: it dies at ``at`` and is no smaller."""
    host = groups.find(candidate)
    if host == out or groups.pinned[host] >= 0 or groups.pinned[out] >= 0:
        return False
    if _common(groups.reach[host], groups.reach[out]) == frozenset():  # no unit-reachable memory for both
        return False
    # the output already shares bytes with something written before it (a model input too)
    if min(groups.writes[out]) < at:
        return False
    if at in groups.writes[host]:  # another output of this operator already took these bytes
        return False
    if groups.size[out] > tensors.sizes[candidate]:  # the input tensor itself, not its (larger) block
        return False
    return all(p == at or tensors.runs_before(p, at) for p in groups.accesses[host])


class _Load:
    """Bytes live at each position of the extension, for the ``auto`` choice."""

    def __init__(self, groups: _Groups, n_positions: int) -> None:
        self.groups = groups
        self.load = np.zeros(n_positions + 1, np.int64)
        for g in range(len(groups.parent)):
            if groups.find(g) == g:
                self._add(g, 1)
        self.bound = int(self.load.max())

    def _add(self, g: int, sign: int) -> None:
        first, last = self.groups.lifetime(g)
        self.load[first : last + 1] += sign * self.groups.size[g]

    def merge_keeps_bound(self, host: int, out: int) -> bool:
        """Whether giving ``out`` the host's (larger) bytes keeps the live bytes within their maximum."""
        grown = self.groups.size[host] - self.groups.size[out]
        first, last = self.groups.lifetime(out)
        return int(self.load[first + 1 : last + 1].max(initial=0)) + grown <= int(self.load.max())

    def join(self, host: int, out: int) -> None:
        self._add(host, -1)
        self._add(out, -1)
        self.groups.join(host, out)
        self._add(host, 1)


def _take_inplace(groups: _Groups, tensors: GraphTensors, choice: str) -> None:
    """Take the in-place chances in execution order, each output over its first legal input.

    ``auto`` first takes the chances whose output is as large as its input
    (they only ever lower the live bytes), then each other one that keeps the
    live bytes at or below their current maximum.
    """
    if choice == "never" or not tensors.inplace:
        return
    load = _Load(groups, tensors.n_ops + 1)
    passes = ("same size", "smaller") if choice == "auto" else ("any",)
    for kind in passes:
        for out, candidates, at in tensors.inplace:
            out_root = groups.find(out)
            for candidate in candidates:
                host = groups.find(candidate)
                if not _inplace_is_legal(groups, tensors, candidate, out_root, at):
                    continue
                same = groups.size[host] == groups.size[out_root]
                if kind == "same size" and not same:
                    continue
                if kind == "smaller" and not load.merge_keeps_bound(host, out_root):
                    continue
                load.join(host, out_root)
                break


def relaxed_bound(tensors: GraphTensors, rules: Rules) -> int:
    """A lower bound on the arena whatever in-place chances a plan takes.

    Taking a chance at an operator saves the output's bytes there and can only
    add bytes elsewhere, so the live bytes at a position are at least those
    with views shared, less every output that could be written in place at
    that position. The largest of these over the positions bounds every plan:
    the blocks live at one position of the extension conflict pairwise.
    """
    groups = _Groups(tensors)
    if rules.views:
        _join_views(groups, tensors)
    load = _Load(groups, tensors.n_ops + 1)
    if rules.inplace == "never":
        return load.bound
    saving = np.zeros_like(load.load)
    for out, candidates, at in tensors.inplace:
        out_root = groups.find(out)
        if any(_inplace_is_legal(groups, tensors, c, out_root, at) for c in candidates):
            saving[at] += groups.size[out_root]
    return int((load.load - saving).max())


def group_tensors(tensors: GraphTensors, rules: Rules) -> Storage:
    """The storage blocks of a graph's tensors under ``rules``."""
    groups = _Groups(tensors)
    if rules.views:
        _join_views(groups, tensors)
    _take_inplace(groups, tensors, rules.inplace)
    reps = np.array([groups.find(t) for t in range(len(tensors.ids))], np.int64)
    unique_reps = np.unique(reps)
    block_of = np.searchsorted(unique_reps, reps)
    members: list[list[int]] = [[] for _ in unique_reps]
    for t, b in enumerate(block_of.tolist()):
        members[b].append(t)
    roots = np.array([min(m, key=lambda t: (tensors.writer[t], t)) for m in members], np.int64)
    reach = tuple(groups.reach[g] for g in unique_reps)
    return Storage(
        block_of=block_of,
        roots=roots,
        sizes=groups.size[unique_reps],
        alignments=groups.alignment[unique_reps],
        pinned=groups.pinned[unique_reps],
        writer=tensors.writer[roots],
        accesses=tuple(np.array(sorted(groups.accesses[g]), np.int64) for g in unique_reps),
        reach=reach,
    )
