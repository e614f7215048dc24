"""From a graph document to blocks with lifetimes and a happens-before order.

The happens-before order is made of each core's program order (the list order
of its operators), data dependencies (a tensor's writer before its readers) and
explicit ``sync`` edges. Operators are laid out in one linear extension of that
order (round-robin over cores: ready operators by their index in their core's
program); positions in it are the time axis of the blocks.

Conventions (those of an operator execution queue): a tensor lives from its writer to its last reader,
inclusive, so an operator's outputs never share with its inputs; an unread
output lives at its writer only; a graph input (no writer) lives from time 0.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from gaplanner.documents.cores import Cores, cores_of
from gaplanner.documents.devices import TensorDevices, check_devices, tensor_devices
from gaplanner.documents.schema import Document
from gaplanner.errors import InputError

#: Suffix of the id of an operator's workspace block (``conv1#workspace``).
WORKSPACE_SUFFIX = "#workspace"


@dataclass(frozen=True)
class GraphTensors:
    """Every tensor of a graph (workspaces included), on the time axis of a linear extension.

    Positions ``0..n_ops-1`` are the operators in the extension; position
    ``n_ops`` is the caller reading the model's outputs after the last one.
    """

    ids: tuple[str, ...]
    sizes: np.ndarray  # int64 bytes
    alignments: np.ndarray  # int64, per-tensor alignment combined with the graph's
    pinned: np.ndarray  # int64 fixed offset, -1 where the planner chooses
    writer: np.ndarray  # int64 position of the writing operator, -1 for model inputs
    #: positions of the operators that write or read it, plus ``n_ops`` for a kept output
    accesses: tuple[np.ndarray, ...]
    view_of: np.ndarray  # int64 index of the tensor it is a view of, -1 if none
    #: (output, candidate inputs, position): the output may be written over one of the inputs there
    inplace: tuple[tuple[int, tuple[int, ...], int], ...]
    #: what surely runs after each operator, per core; None when the order is total (one core)
    cores: Cores | None
    operator_ids: tuple[str, ...]  # in linear-extension order
    #: the compute units touching each tensor, for a document with ``devices``; None otherwise
    devices: TensorDevices | None = None

    @property
    def n_ops(self) -> int:
        return len(self.operator_ids)

    def runs_before(self, p: int, q: int) -> bool:
        """Whether the operator at position ``p`` surely finishes before the one at ``q`` starts."""
        if p == self.n_ops:
            return False
        if q == self.n_ops or self.cores is None:
            return p < q
        return bool(self.cores.step[q] >= self.cores.first_after[p, self.cores.core[q]])


def _index_tensors(doc: Document) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, tensor in enumerate(doc.tensors or []):
        if tensor.id in index:
            raise InputError(f"duplicate tensor id {tensor.id!r}", f"tensors[{i}].id")
        index[tensor.id] = i
    for i, tensor in enumerate(doc.tensors or []):
        if tensor.part_of is not None and tensor.part_of not in index:
            raise InputError(f"unknown tensor id {tensor.part_of!r}", f"tensors[{i}].part_of")
        if tensor.part_of == tensor.id:
            raise InputError("a tensor cannot be a part of itself", f"tensors[{i}].part_of")
    for k, op in enumerate(doc.operators or []):
        if op.workspace is not None:
            wid = op.id + WORKSPACE_SUFFIX
            if wid in index:
                raise InputError(f"tensor id {wid!r} is taken; rename it", f"operators[{k}].workspace")
            index[wid] = len(index)
    return index


def _wire_operators(
    doc: Document, tensor_index: dict[str, int]
) -> tuple[np.ndarray, list[list[int]], dict[str, int]]:
    """Writer operator of each tensor, readers of each tensor, operator index."""
    n, declared = len(tensor_index), len(doc.tensors or [])
    writer = np.full(n, -1, np.int64)
    readers: list[list[int]] = [[] for _ in range(n)]
    op_index: dict[str, int] = {}
    for k, op in enumerate(doc.operators or []):
        if op.id in op_index:
            raise InputError(f"duplicate operator id {op.id!r}", f"operators[{k}].id")
        op_index[op.id] = k
        for role in ("inputs", "outputs"):
            for m, tid in enumerate(getattr(op, role)):
                if tensor_index.get(tid, declared) >= declared:  # workspaces are not the graph's tensors
                    raise InputError(f"unknown tensor id {tid!r}", f"operators[{k}].{role}[{m}]")
        if set(op.inputs) & set(op.outputs):
            both = sorted(set(op.inputs) & set(op.outputs))[0]
            raise InputError(f"tensor {both!r} is both read and written", f"operators[{k}]")
        for m, tid in enumerate(op.outputs):
            t = tensor_index[tid]
            if writer[t] >= 0:
                raise InputError(
                    f"tensor {tid!r} is already written by operator {doc.operators[writer[t]].id!r}",  # type: ignore[index]
                    f"operators[{k}].outputs[{m}]",
                )
            writer[t] = k
        for tid in dict.fromkeys(op.inputs):
            readers[tensor_index[tid]].append(k)
        if op.workspace is not None:
            t = tensor_index[op.id + WORKSPACE_SUFFIX]
            writer[t] = k
            readers[t].append(k)
        _check_aliases(op, k)
    for tid, t in tensor_index.items():
        if writer[t] < 0 and not readers[t]:
            raise InputError(f"tensor {tid!r} is used by no operator", f"tensors[{t}]")
    return writer, readers, op_index


def _check_aliases(op: Any, k: int) -> None:
    """A view or in-place pair must name an output and an input of its own operator."""
    for role in ("views", "inplace"):
        for out, ins in getattr(op, role).items():
            field = f"operators[{k}].{role}.{out}"
            if out not in op.outputs:
                raise InputError(f"{out!r} is not an output of operator {op.id!r}", field)
            for tid in [ins] if isinstance(ins, str) else ins:
                if tid not in op.inputs:
                    raise InputError(f"{tid!r} is not an input of operator {op.id!r}", field)
            if role == "inplace" and out in op.views:
                raise InputError(f"{out!r} is declared both a view and an in-place output", field)


def _successors(
    doc: Document,
    writer: np.ndarray,
    readers: list[list[int]],
    op_index: dict[str, int],
    program_order: bool = True,
) -> list[set[int]]:
    """Each operator's successors: data, ``after`` and ``sync`` edges, and its core's program order."""
    ops = doc.operators or []
    succ: list[set[int]] = [set() for _ in ops]
    last_on_core: dict[int, int] = {}
    for k, op in enumerate(ops if program_order else []):
        if op.core in last_on_core:
            succ[last_on_core[op.core]].add(k)
        last_on_core[op.core] = k
    for t, w in enumerate(writer):
        if w >= 0:
            succ[w].update(r for r in readers[t] if r != w)  # a workspace: written and read by one
    for k, op in enumerate(ops):
        for m, before in enumerate(op.after):
            if before not in op_index:
                raise InputError(f"unknown operator id {before!r}", f"operators[{k}].after[{m}]")
            succ[op_index[before]].add(k)
    for i, edge in enumerate(doc.sync):
        for end in ("before", "after"):
            if getattr(edge, end) not in op_index:
                raise InputError(f"unknown operator id {getattr(edge, end)!r}", f"sync[{i}].{end}")
        succ[op_index[edge.before]].add(op_index[edge.after])
    return succ


def _linear_extension(doc: Document, succ: list[set[int]], dependencies: list[set[int]]) -> list[int]:
    """A linear extension of ``succ``; refused naming a cycle, or the operator the listed order runs
    before an input's writer when ``dependencies`` (``succ`` without the program order) have none."""
    ops = doc.operators or []
    order, indegree = _kahn(doc, succ)
    if len(order) < len(ops):
        if len(_kahn(doc, dependencies)[0]) == len(ops):
            _refuse_order(doc)
        stuck = [k for k in range(len(ops)) if indegree[k] > 0]
        cycle = [ops[k].id for k in _cycle(stuck, succ)]
        raise InputError(
            f"the happens-before order has a cycle through operator {cycle[0]!r}: "
            + " -> ".join(repr(c) for c in [*cycle, cycle[0]]),
            "operators",
        )
    return order


def _kahn(doc: Document, succ: list[set[int]]) -> tuple[list[int], list[int]]:
    """Kahn's algorithm, ready operators by (index in own core's program, core); shorter on a cycle."""
    ops = doc.operators or []
    rank: list[tuple[int, int]] = []
    seen: dict[int, int] = {}
    for op in ops:
        rank.append((seen.get(op.core, 0), op.core))
        seen[op.core] = seen.get(op.core, 0) + 1
    indegree = [0] * len(ops)
    for targets in succ:
        for v in targets:
            indegree[v] += 1
    ready = [(rank[k], k) for k in range(len(ops)) if indegree[k] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for v in succ[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, (rank[v], v))
    return order, indegree


def _refuse_order(doc: Document) -> None:
    """Name an operator its core's program runs before the writer of one of its inputs, if any."""
    ops = doc.operators or []
    writer = {t: k for k, op in enumerate(ops) for t in op.outputs}
    for k, op in enumerate(ops):
        for m, tid in enumerate(op.inputs):
            w = writer.get(tid, -1)
            if w > k and ops[w].core == op.core:
                raise InputError(
                    f"operator {op.id!r} reads {tid!r} before operator {ops[w].id!r} writes it",
                    f"operators[{k}].inputs[{m}]",
                )


def _cycle(stuck: list[int], succ: list[set[int]]) -> list[int]:
    """One cycle among operators that all wait on another one, from the first listed on it."""
    waiting = set(stuck)
    preds: dict[int, list[int]] = {k: [] for k in stuck}
    for u in stuck:
        for v in succ[u]:
            if v in waiting:
                preds[v].append(u)
    seen: dict[int, int] = {}
    path: list[int] = []
    k = stuck[0]
    while k not in seen:
        seen[k] = len(path)
        path.append(k)
        k = min(preds[k])
    loop = path[seen[k] :][::-1]  # in run order
    start = loop.index(min(loop))
    return loop[start:] + loop[:start]


def _model_outputs(
    doc: Document, tensor_index: dict[str, int], writer: np.ndarray, readers: list
) -> set[int]:
    """The declared outputs, else every written tensor that no operator reads."""
    if doc.outputs is None:
        declared = len(doc.tensors or [])
        return {t for t in range(declared) if writer[t] >= 0 and not readers[t]}
    outputs = set()
    for m, tid in enumerate(doc.outputs):
        if tensor_index.get(tid, len(doc.tensors or [])) >= len(doc.tensors or []):
            raise InputError(f"unknown tensor id {tid!r}", f"outputs[{m}]")
        outputs.add(tensor_index[tid])
    return outputs


def _check_inputs(doc: Document, tensor_index: dict[str, int], writer: np.ndarray) -> None:
    for m, tid in enumerate(doc.inputs or []):
        if tensor_index.get(tid, len(doc.tensors or [])) >= len(doc.tensors or []):
            raise InputError(f"unknown tensor id {tid!r}", f"inputs[{m}]")
        if writer[tensor_index[tid]] >= 0:
            raise InputError(f"model input {tid!r} is written by an operator", f"inputs[{m}]")


def _views_and_inplace(
    doc: Document, tensor_index: dict[str, int], sizes: np.ndarray, position: np.ndarray
) -> tuple[np.ndarray, list[tuple[int, tuple[int, ...], int]]]:
    view_of = np.full(len(tensor_index), -1, np.int64)
    inplace = []
    for k, op in enumerate(doc.operators or []):
        for out, host in op.views.items():
            o, h = tensor_index[out], tensor_index[host]
            if sizes[o] != sizes[h]:
                raise InputError(
                    f"view {out!r} has {sizes[o]} bytes, its input {host!r} {sizes[h]}",
                    f"operators[{k}].views.{out}",
                )
            view_of[o] = h
        for out, ins in op.inplace.items():
            candidates = tuple(tensor_index[t] for t in ([ins] if isinstance(ins, str) else ins))
            inplace.append((tensor_index[out], candidates, int(position[k])))
    inplace.sort(key=lambda entry: entry[2])
    return view_of, inplace


def _pinned_offsets(doc: Document, tensor_index: dict[str, int], alignments: np.ndarray) -> np.ndarray:
    pinned = np.full(len(tensor_index), -1, np.int64)
    for i, tensor in enumerate(doc.tensors or []):
        if tensor.offset is not None:
            if tensor.offset % alignments[i]:
                raise InputError(
                    f"pinned offset {tensor.offset} is not a multiple of the alignment {alignments[i]}",
                    f"tensors[{i}].offset",
                )
            pinned[i] = tensor.offset
    return pinned


def _devices(
    doc: Document, tensor_index: dict[str, int], writer_op: np.ndarray, readers_op: list[list[int]]
) -> TensorDevices | None:
    """The devices touching each tensor (its writer's and readers'), or None without ``devices``."""
    if doc.devices is None:
        check_devices(doc)  # refuses an operator naming a device
        return None
    declared = len(doc.tensors or [])
    workspace_of = {
        t: k
        for k, op in enumerate(doc.operators or [])
        if (t := tensor_index.get(op.id + WORKSPACE_SUFFIX)) is not None
    }
    fields = [
        f"tensors[{t}]" if t < declared else f"operators[{workspace_of[t]}].workspace"
        for t in range(len(tensor_index))
    ]
    users = [sorted({int(writer_op[t])} - {-1} | set(readers)) for t, readers in enumerate(readers_op)]
    return tensor_devices(doc, tuple(tensor_index), users, fields)


def analyse_graph(doc: Document, keep_outputs: bool = True) -> GraphTensors:
    """Validate a graph document and derive its tensors and happens-before order."""
    tensor_index = _index_tensors(doc)
    writer_op, readers_op, op_index = _wire_operators(doc, tensor_index)
    _check_inputs(doc, tensor_index, writer_op)
    outputs = _model_outputs(doc, tensor_index, writer_op, readers_op) if keep_outputs else set()
    succ = _successors(doc, writer_op, readers_op, op_index)
    dependencies = _successors(doc, writer_op, readers_op, op_index, program_order=False)
    order = _linear_extension(doc, succ, dependencies)
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    n_ops = len(order)

    tensors = doc.tensors or []
    workspaces = [op for op in doc.operators or [] if op.workspace is not None]
    sizes = np.array([t.nbytes for t in tensors] + [op.workspace for op in workspaces], np.int64)
    alignments = np.array(
        [np.lcm(t.alignment or 1, doc.alignment) for t in tensors] + [doc.alignment] * len(workspaces),
        np.int64,
    )
    devices = _devices(doc, tensor_index, writer_op, readers_op)
    if devices is not None:
        alignments = np.lcm(alignments, devices.alignments)
    writer = np.where(writer_op >= 0, position[np.maximum(writer_op, 0)], -1)
    accesses = tuple(
        np.array(
            sorted(
                {int(writer[t])} - {-1}
                | {int(position[k]) for k in readers}
                | ({n_ops} if t in outputs else set())
            ),
            np.int64,
        )
        for t, readers in enumerate(readers_op)
    )
    view_of, inplace = _views_and_inplace(doc, tensor_index, sizes, position)
    multi_core = len({op.core for op in doc.operators or []}) > 1
    return GraphTensors(
        ids=tuple(tensor_index),
        sizes=sizes,
        alignments=alignments,
        pinned=_pinned_offsets(doc, tensor_index, alignments),
        writer=writer,
        accesses=accesses,
        view_of=view_of,
        inplace=tuple(inplace),
        cores=cores_of(doc, order, succ, position) if multi_core else None,
        operator_ids=tuple((doc.operators or [])[k].id for k in order),
        devices=devices,
    )


def after_all(tensors: GraphTensors, positions: np.ndarray) -> np.ndarray:
    """Per core, the first step whose operator surely runs after every one at ``positions`` (sorted):
    0 for none, the core's length when ``positions`` end at the model's end (nothing is after it)."""
    cores = tensors.cores
    assert cores is not None
    if len(positions) and positions[-1] == tensors.n_ops:
        return cores.lengths.astype(np.int64)
    if not len(positions):
        return np.zeros(len(cores.lengths), np.int64)
    return cores.first_after[positions].max(axis=0)


def reuse_times(release: np.ndarray, upper: np.ndarray, cores: Cores) -> np.ndarray:
    """Per block, the time from which every block written later may reuse its space.

    With a total order that is the end of its lifetime. In a partial order it is
    one past the last position holding an operator that is *not* surely after
    all of the block's accesses (``release``: per block, :func:`after_all`): so
    two conflicting blocks always overlap on ``[lower, reuse_time)``, and a time
    walk over these intervals (best-fit with coalescing) only reuses space that
    is really free.
    """
    last = np.full(len(release), -1, np.int64)
    for c in range(release.shape[1]):
        before = release[:, c] > 0
        at = cores.position(c, np.maximum(release[:, c] - 1, 0))
        last = np.maximum(last, np.where(before, at, -1))
    return np.maximum(last + 1, upper)
