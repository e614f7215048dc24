"""Checks a plan tensor by tensor against the model's own rules.

Written from the rules in ``docs/rules.md``, not from the planner's code, so
that a mistake in how the planner models memory (which tensors live when,
which share bytes) cannot hide behind a block-level check that makes the same
mistake:

* A tensor is live from the start of the operator that writes it to the end of
  the last operator that reads it. A model input (written by no operator) is
  live from before the first operator; a model output, unless the runtime
  copies outputs out, until after the last one; a workspace during its
  operator only.
* Two tensors may hold a common byte only if every operator touching one
  finishes before any operator touching the other starts (in the
  happens-before order: each core's program order, data dependencies and
  ``sync`` edges), or
* one is a declared view of the other (views must sit at their input's
  offset), or
* they are a declared in-place pair taken at one offset: the output is no
  larger than the input, and the input and every view of it are touched by
  no operator after the one writing in place, nor read by the caller.

With several memories (``memories``: tensor id -> memory id) offsets count
within each memory: tensors in different memories never share a byte, a view
sits in its input's memory, and a tensor pinned to a memory is in it.

With ``devices``, every tensor an operator reads or writes (and its
workspace) sits at a multiple of the alignment of the device running that
operator, and in a memory that device reaches.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document
from gaplanner.errors import InputError

WORKSPACE_SUFFIX = "#workspace"
#: Pairs of tensors checked at once (bounds the memory of the vectorized test).
_CHUNK = 1 << 16


class _Model:
    """The document's tensors and operators as arrays; operators ``0..m-1``, then START and END."""

    def __init__(self, doc: Document, rules: Rules) -> None:
        ops = doc.operators or []
        self.m = len(ops)
        self.start, self.end = self.m, self.m + 1
        self.ids: list[str] = [t.id for t in doc.tensors or []]
        self.sizes = [t.nbytes for t in doc.tensors or []]
        self.alignment = [int(np.lcm(t.alignment or 1, doc.alignment)) for t in doc.tensors or []]
        self.pinned = [t.offset for t in doc.tensors or []]
        self.memory = [t.memory for t in doc.tensors or []]
        for op in ops:
            if op.workspace is not None:
                self.ids.append(op.id + WORKSPACE_SUFFIX)
                self.sizes.append(op.workspace)
                self.alignment.append(doc.alignment)
                self.pinned.append(None)
                self.memory.append(None)
        self.index = {tid: t for t, tid in enumerate(self.ids)}
        self.devices: list[set[str]] = [set() for _ in self.ids]  # the devices touching each tensor
        for op in ops:
            if op.device is not None:
                used = [*op.inputs, *op.outputs, *([op.id + WORKSPACE_SUFFIX] if op.workspace else [])]
                for tid in used:
                    self.devices[self.index[tid]].add(op.device)
        self.device_table = {d.id: d for d in doc.devices or []}
        self.touched: list[set[int]] = [set() for _ in self.ids]
        writer: dict[str, int] = {}
        for k, op in enumerate(ops):
            for tid in [*op.inputs, *op.outputs]:
                self.touched[self.index[tid]].add(k)
            writer.update(dict.fromkeys(op.outputs, k))
            if op.workspace is not None:
                self.touched[self.index[op.id + WORKSPACE_SUFFIX]].add(k)
        read = {tid for op in ops for tid in op.inputs}
        for t, tid in enumerate(self.ids[: len(doc.tensors or [])]):
            if tid not in writer:
                self.touched[t].add(self.start)
        outputs = doc.outputs if doc.outputs is not None else [t for t in writer if t not in read]
        if rules.keep_outputs:
            for tid in outputs:
                self.touched[self.index[tid]].add(self.end)
        self.one_core = len({op.core for op in ops}) <= 1 and not doc.sync
        self.reach = _reachability(doc)
        self.view_group = self._view_groups(doc, rules)
        self.members: dict[int, list[int]] = {}
        for t, g in enumerate(self.view_group):
            self.members.setdefault(g, []).append(t)
        self.inplace: dict[frozenset[int], list[tuple[int, int, int]]] = {}
        for k, op in enumerate(ops):
            for out, ins in op.inplace.items():
                for host in [ins] if isinstance(ins, str) else ins:
                    o, i = self.index[out], self.index[host]
                    key = frozenset((self.view_group[o], self.view_group[i]))
                    self.inplace.setdefault(key, []).append((o, i, k))

    def _view_groups(self, doc: Document, rules: Rules) -> list[int]:
        group = list(range(len(self.ids)))

        def find(t: int) -> int:
            while group[t] != t:
                t = group[t]
            return t

        if rules.views:
            for op in doc.operators or []:
                for out, host in op.views.items():
                    group[find(self.index[out])] = find(self.index[host])
        return [find(t) for t in range(len(self.ids))]

    def before(self, p: int, q: int) -> bool:
        """Operator (or START/END) ``p`` finishes before ``q`` starts."""
        return bool(self.reach[p, q])


def _reachability(doc: Document) -> np.ndarray:
    """``reach[p, q]``: p happens strictly before q; START before and END after every operator."""
    ops = doc.operators or []
    m = len(ops)
    succ: list[set[int]] = [set() for _ in ops]
    writer = {tid: k for k, op in enumerate(ops) for tid in op.outputs}
    last_on_core: dict[int, int] = {}
    by_id = {op.id: k for k, op in enumerate(ops)}
    for k, op in enumerate(ops):
        if op.core in last_on_core:
            succ[last_on_core[op.core]].add(k)
        last_on_core[op.core] = k
        for tid in op.inputs:
            if tid in writer and writer[tid] != k:
                succ[writer[tid]].add(k)
    for edge in doc.sync:
        succ[by_id[edge.before]].add(by_id[edge.after])
    indegree = [0] * m
    for targets in succ:
        for v in targets:
            indegree[v] += 1
    order = [k for k in range(m) if indegree[k] == 0]
    for u in order:
        for v in succ[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                order.append(v)
    if len(order) < m:
        raise InputError("the happens-before order has a cycle", "operators")
    reach = np.zeros((m + 2, m + 2), bool)
    for u in reversed(order):
        for v in succ[u]:
            reach[u] |= reach[v]
            reach[u, v] = True
    reach[m, :m] = True  # START
    reach[:m, m + 1] = True  # END
    reach[m, m + 1] = True
    return reach


def _touch_bits(model: _Model) -> tuple[np.ndarray, np.ndarray]:
    """Per tensor, the operators touching it and those surely after all of them (packed bits)."""
    width = model.m + 2
    touched = np.zeros((len(model.ids), width), bool)
    after = np.ones((len(model.ids), width), bool)
    for t, ops in enumerate(model.touched):
        for p in ops:
            touched[t, p] = True
            after[t] &= model.reach[p]
    return np.packbits(touched, axis=1), np.packbits(after, axis=1)


def _address_pairs(offsets: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of tensors whose byte ranges overlap, as index arrays."""
    order = np.argsort(offsets, kind="stable")
    starts = offsets[order]
    ends = starts + sizes[order]
    stop = np.searchsorted(starts, ends, side="left")
    counts = stop - np.arange(1, len(order) + 1)
    counts = np.maximum(counts, 0)
    firsts = np.repeat(np.arange(len(order)), counts)
    step = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return order[firsts], order[firsts + 1 + step]


def _span(model: _Model) -> tuple[np.ndarray, np.ndarray]:
    """On one core, each tensor's first and last operator in program order (START first, END last)."""
    position = {model.start: -1, model.end: model.m}
    first = np.array([min(position.get(p, p) for p in ops) for ops in model.touched], np.int64)
    last = np.array([max(position.get(p, p) for p in ops) for ops in model.touched], np.int64)
    return first, last


def _time_clash_one_core(a: np.ndarray, b: np.ndarray, model: _Model) -> np.ndarray:
    """One core runs the operators in list order: done before means ending before the other starts."""
    first, last = _span(model)
    return ~((last[a] < first[b]) | (last[b] < first[a]))


def _time_clash(a: np.ndarray, b: np.ndarray, touched: np.ndarray, after: np.ndarray) -> np.ndarray:
    """For each pair, whether neither tensor is done before the other is first touched."""
    clash = np.empty(len(a), bool)
    for s in range(0, len(a), _CHUNK):
        x, y = a[s : s + _CHUNK], b[s : s + _CHUNK]
        x_first = ~(touched[y] & ~after[x]).any(axis=1)
        y_first = ~(touched[x] & ~after[y]).any(axis=1)
        clash[s : s + _CHUNK] = ~(x_first | y_first)
    return clash


def _legal_inplace(model: _Model, rules: Rules, x: int, y: int, offsets: np.ndarray) -> bool:
    """Whether tensors ``x`` and ``y`` share bytes through a declared in-place write taken legally."""
    if rules.inplace == "never":
        return False
    for o, i, k in model.inplace.get(frozenset((model.view_group[x], model.view_group[y])), []):
        if model.view_group[o] == model.view_group[i]:
            continue
        if offsets[o] != offsets[i] or model.sizes[o] > model.sizes[i]:
            continue
        input_side = model.members[model.view_group[i]]
        if all(p == k or model.before(p, k) for t in input_side for p in model.touched[t]):
            return True
    return False


def _laid_out(model: _Model, local: np.ndarray, sizes: np.ndarray, memories: Mapping[str, str]) -> np.ndarray:
    """Offsets in one address space with the memories end to end: bytes meet only within a memory."""
    names = sorted({memories[tid] for tid in model.ids})
    index = np.array([names.index(memories[tid]) for tid in model.ids], np.int64)
    span = int((local + sizes).max(initial=0)) + 1
    return local + index * span


def _device_unsuited(model: _Model, t: int, offset: int, memories: Mapping[str, str] | None) -> str | None:
    """Whether tensor ``t``'s place fails a device touching it: its alignment, or a memory it reaches."""
    for name in sorted(model.devices[t]):
        device = model.device_table[name]
        if offset % device.alignment:
            return (
                f"tensor {model.ids[t]!r} at {offset}: device {name!r} needs a multiple of {device.alignment}"
            )
        where = memories[model.ids[t]] if memories is not None else None
        if where is not None and device.memories is not None and where not in device.memories:
            return f"tensor {model.ids[t]!r} is in memory {where!r}, out of {name!r}'s reach"
    return None


def check_tensor_plan(
    doc: Document,
    rules: Rules,
    offsets: Mapping[str, int],
    peak: int | None = None,
    memories: Mapping[str, str] | None = None,
) -> str | None:
    """The first rule a plan (tensor id -> offset) breaks, in words, or None when it keeps them all.

    ``memories``: each tensor's memory, for a document with several.
    """
    model = _Model(doc, rules)
    for tid in model.ids:
        if tid not in offsets or (memories is not None and tid not in memories):
            return f"the plan gives tensor {tid!r} no offset" + (
                " and memory" if memories is not None else ""
            )
    local = np.array([int(offsets[tid]) for tid in model.ids], np.int64)
    sizes = np.array(model.sizes, np.int64)
    at = local
    if memories is not None:
        for t, tid in enumerate(model.ids):
            if model.memory[t] is not None and memories[tid] != model.memory[t]:
                return (
                    f"tensor {tid!r} is pinned to memory {model.memory[t]!r} but placed in {memories[tid]!r}"
                )
        at = _laid_out(model, local, sizes, memories)
    for t, tid in enumerate(model.ids):
        if local[t] < 0 or local[t] % model.alignment[t]:
            return f"tensor {tid!r} at {local[t]}: not a non-negative multiple of {model.alignment[t]}"
        if (unsuited := _device_unsuited(model, t, int(local[t]), memories)) is not None:
            return unsuited
        if peak is not None and local[t] + sizes[t] > peak:
            return f"tensor {tid!r} ends at {local[t] + sizes[t]}, beyond the arena of {peak} bytes"
        if model.pinned[t] is not None and local[t] != model.pinned[t]:
            return f"tensor {tid!r} is pinned at {model.pinned[t]} but placed at {local[t]}"
        if model.view_group[t] != t and rules.views and at[t] != at[model.view_group[t]]:
            return f"view {tid!r} at {at[t]} is not at its input's offset {at[model.view_group[t]]}"
    a, b = _address_pairs(at, sizes)
    same_view = np.array(model.view_group)[a] == np.array(model.view_group)[b]
    a, b = a[~same_view], b[~same_view]
    one_core = model.one_core
    clash = _time_clash_one_core(a, b, model) if one_core else _time_clash(a, b, *_touch_bits(model))
    for k in np.flatnonzero(clash):
        x, y = int(a[k]), int(b[k])
        if not _legal_inplace(model, rules, x, y, at):
            return (
                f"tensors {model.ids[x]!r} [{at[x]}, {at[x] + sizes[x]}) and {model.ids[y]!r} "
                f"[{at[y]}, {at[y] + sizes[y]}) are live at once and share memory"
            )
    return None
