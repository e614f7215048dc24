"""Multi-core splitting: a single-core graph run over several cores, as a multi-core chip runs it.

On two cores a chain of operators (``example:multicore_fig1b``) runs so: a *split*
operator cuts the whole tensor ``D0`` into per-core parts ``D00``/``D01``,
each core runs its own copy of the chain on its part (``D10``/``D11``,
``D20``/``D21``), and a *combine* operator gathers the parts into the whole
``D2``. Blocks then conflict according to the partial order of the per-core
programs, not a single timeline.

:func:`split_graph` does the same to any single-core graph for ``cores``
cores. The graph carries no operator semantics, so the rule is generic:

* **Layout.** Each tensor is cut along one dimension: the first dimension
  after the batch dimension (dimension 0 of a rank-1 tensor) whose extent is at
  least ``cores``, else the longest one. Extents that do not divide evenly go
  to the first parts (``10`` over 4 cores: ``3, 3, 2, 2``); a dimension shorter
  than ``cores`` gives fewer parts. Tensors given by ``size`` alone are cut in
  bytes. The parts of a tensor always add up to its bytes.
* **Operators.** An operator whose outputs all split into ``p >= 2`` parts
  runs as ``p`` per-core operators ``OP@c`` on cores ``0..p-1``, each writing
  part ``c`` of every output. Otherwise it runs whole on core 0.
* **Inputs.** ``OP@c`` reads part ``c`` of an input that is cut the same way
  as its outputs (same rank, same dimension, same number of parts): the data
  stays on its core, like ``D10`` → ``A.pool``. Any other input (a reduction
  such as global pooling, a dense layer) is read whole by every core.
* **Views and in-place writes** stay declared on the operators that run whole;
  the per-core copies of a split operator write their own parts (no views, no
  in-place chances). The model's declared inputs and outputs stay whole
  tensors (an output written in parts is combined).
* **Devices and memories** carry over: each per-core copy runs on its
  operator's device, parts keep their tensor's memory; split and combine
  operators run on no particular device.
* **Split and combine.** A graph input that some per-core operator reads in
  parts is cut by ``TENSOR/split`` on core 0 into ``TENSOR@c`` parts. A tensor
  produced in parts that is read whole, or is a graph output, is gathered by
  ``TENSOR/combine`` on core 0, right after its writer. Parts whose whole
  tensor exists name it in ``part_of``.

Halo exchange and the split/combine copies' arithmetic are not modelled: the
transform describes memory, not compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gaplanner.documents.lifetimes import analyse_graph
from gaplanner.documents.schema import Document, Operator, Tensor
from gaplanner.errors import InputError

#: Separator between a tensor/operator id and its core in split ids (``conv1@0``).
CORE_SEP = "@"


@dataclass(frozen=True)
class Layout:
    """How one tensor is cut: along ``dim`` (None: in bytes) into ``extents`` (per part)."""

    rank: int | None  # None for size-only tensors
    dim: int | None
    extents: tuple[int, ...]

    @property
    def parts(self) -> int:
        return len(self.extents)

    def key(self) -> tuple[int | None, int | None, int]:
        return self.rank, self.dim, self.parts


def balanced(total: int, parts: int) -> tuple[int, ...]:
    """``total`` cut into ``parts`` positive pieces differing by at most one, larger first."""
    base, extra = divmod(total, parts)
    return tuple(base + 1 if i < extra else base for i in range(parts))


def _split_dim(shape: Sequence[int], cores: int) -> int | None:
    candidates = list(range(1, len(shape))) if len(shape) >= 2 else list(range(len(shape)))
    if not candidates:
        return None
    for i in candidates:
        if shape[i] >= cores:
            return i
    return max(candidates, key=lambda i: shape[i])


def _max_parts(tensor: Tensor, cores: int) -> int:
    if tensor.shape is None:
        return min(cores, tensor.nbytes)
    dim = _split_dim(tensor.shape, cores)
    return 1 if dim is None else max(1, min(cores, tensor.shape[dim]))


def _layout(tensor: Tensor, cores: int, parts: int) -> Layout:
    if tensor.shape is None:
        return Layout(None, None, balanced(tensor.nbytes, parts))
    dim = _split_dim(tensor.shape, cores)
    if dim is None or parts == 1:
        return Layout(len(tensor.shape), dim, (tensor.shape[dim] if dim is not None else 1,))
    return Layout(len(tensor.shape), dim, balanced(tensor.shape[dim], parts))


def _part_tensor(tensor: Tensor, layout: Layout, c: int, whole_exists: bool) -> Tensor:
    part_id = f"{tensor.id}{CORE_SEP}{c}"
    part_of = tensor.id if whole_exists else None
    if tensor.shape is None:
        return Tensor(
            id=part_id,
            size=layout.extents[c],
            alignment=tensor.alignment,
            part_of=part_of,
            memory=tensor.memory,
        )
    assert layout.dim is not None
    shape = list(tensor.shape)
    shape[layout.dim] = layout.extents[c]
    return Tensor(
        id=part_id, shape=shape, dtype=tensor.dtype, alignment=tensor.alignment, part_of=part_of,
        memory=tensor.memory,
    )  # fmt: skip


@dataclass(frozen=True)
class SplitPlan:
    """What :func:`split_graph` does to each tensor and operator (inspectable, testable)."""

    cores: int
    layouts: dict[str, Layout]  # tensor id -> layout (parts == 1: kept whole)
    op_parts: dict[str, int]  # operator id -> number of per-core copies (1: runs whole on core 0)
    reads_parts: dict[tuple[str, str], bool]  # (operator id, tensor id) -> reads its own part
    whole: dict[str, bool]  # tensor id -> the whole tensor exists in the split graph

    def part_ids(self, tensor_id: str) -> list[str]:
        """Ids of the tensor's parts in the split graph (empty when it stays whole only)."""
        layout = self.layouts[tensor_id]
        if layout.parts == 1:
            return []
        return [f"{tensor_id}{CORE_SEP}{c}" for c in range(layout.parts)]


def _check_single_core(doc: Document, cores: int) -> None:
    if not doc.is_graph:
        raise InputError("only graphs can be split over cores, not buffer lists", "buffers")
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise InputError(f"cores must be a positive integer, got {cores!r}", "cores")
    for k, op in enumerate(doc.operators or []):
        if op.core != 0:
            raise InputError(
                "the graph is already multi-core; split a single-core graph", f"operators[{k}].core"
            )
    if doc.sync:
        raise InputError("the graph has sync edges; split a single-core graph", "sync")
    analyse_graph(doc)  # the usual validation: ids, single writers, no cycles
    for k, op in enumerate(doc.operators or []):
        if op.workspace is not None:
            raise InputError(
                "splitting a graph with workspaces is not supported", f"operators[{k}].workspace"
            )
    for i, tensor in enumerate(doc.tensors or []):
        if tensor.offset is not None:
            raise InputError("splitting a graph with pinned tensors is not supported", f"tensors[{i}].offset")


def plan_split(doc: Document, cores: int) -> SplitPlan:
    """Decide layouts, per-core operators and which tensors exist whole (see the module doc)."""
    _check_single_core(doc, cores)
    tensors = {t.id: t for t in doc.tensors or []}
    operators = doc.operators or []
    writer: dict[str, Operator] = {}
    readers: dict[str, list[Operator]] = {tid: [] for tid in tensors}
    for op in operators:
        for tid in op.outputs:
            writer[tid] = op
        for tid in dict.fromkeys(op.inputs):
            readers[tid].append(op)

    op_parts: dict[str, int] = {}
    layouts: dict[str, Layout] = {}
    for op in operators:
        parts = min((_max_parts(tensors[tid], cores) for tid in op.outputs), default=1)
        op_parts[op.id] = parts
        for tid in op.outputs:
            layouts[tid] = _layout(tensors[tid], cores, parts)
    for tid, tensor in tensors.items():
        if tid not in writer:  # graph input
            layouts[tid] = _layout(tensor, cores, _max_parts(tensor, cores))

    reads_parts: dict[tuple[str, str], bool] = {}
    for op in operators:
        out_keys = {layouts[tid].key() for tid in op.outputs}
        for tid in op.inputs:
            reads_parts[op.id, tid] = (
                op_parts[op.id] >= 2 and len(out_keys) == 1 and layouts[tid].key() in out_keys
            )

    whole: dict[str, bool] = {}
    for tid in tensors:
        if tid not in writer or layouts[tid].parts == 1:
            whole[tid] = True
        else:
            read_whole = any(not reads_parts[r.id, tid] for r in readers[tid])
            whole[tid] = not readers[tid] or read_whole or tid in (doc.outputs or [])
    # A graph input cut into parts nobody reads in parts needs no split: keep it whole only.
    for tid in tensors:
        if tid not in writer and not any(reads_parts[r.id, tid] for r in readers[tid]):
            layouts[tid] = Layout(layouts[tid].rank, layouts[tid].dim, (sum(layouts[tid].extents),))
    return SplitPlan(cores, layouts, op_parts, reads_parts, whole)


def split_graph(doc: Document, cores: int) -> Document:
    """The graph run on ``cores`` cores: per-core operator streams, split and combine operators.

    ``cores == 1`` returns the document unchanged. The result is a new
    :class:`Document` (name ``NAME@N``); see the module doc for the rules.
    """
    plan = plan_split(doc, cores)
    if cores == 1:
        return doc
    tensors = {t.id: t for t in doc.tensors or []}
    has_writer = {tid for op in doc.operators or [] for tid in op.outputs}

    out_tensors: list[Tensor] = []
    for tid, tensor in tensors.items():
        if plan.whole[tid]:
            out_tensors.append(tensor)
        for c in range(plan.layouts[tid].parts if plan.layouts[tid].parts > 1 else 0):
            out_tensors.append(_part_tensor(tensor, plan.layouts[tid], c, plan.whole[tid]))

    out_ops: list[Operator] = []
    split_done: set[str] = set()
    for op in doc.operators or []:
        parts = plan.op_parts[op.id]
        for tid in dict.fromkeys(op.inputs):
            if tid not in has_writer and plan.reads_parts[op.id, tid] and tid not in split_done:
                split_done.add(tid)
                out_ops.append(Operator(id=f"{tid}/split", inputs=[tid], outputs=plan.part_ids(tid), core=0))
        if parts == 1:
            out_ops.append(op)
            continue
        for c in range(parts):
            inputs = [f"{t}{CORE_SEP}{c}" if plan.reads_parts[op.id, t] else t for t in op.inputs]
            outputs = [f"{t}{CORE_SEP}{c}" for t in op.outputs]
            copy = Operator(
                id=f"{op.id}{CORE_SEP}{c}", inputs=inputs, outputs=outputs, core=c, device=op.device
            )
            out_ops.append(copy)
        for tid in op.outputs:
            if plan.whole[tid]:
                out_ops.append(
                    Operator(id=f"{tid}/combine", inputs=plan.part_ids(tid), outputs=[tid], core=0)
                )

    _check_unique([t.id for t in out_tensors], "tensors")
    _check_unique([o.id for o in out_ops], "operators")
    name = f"{doc.name}{CORE_SEP}{cores}" if doc.name else None
    return Document(
        name=name,
        alignment=doc.alignment,
        tensors=out_tensors,
        operators=out_ops,
        inputs=doc.inputs,
        outputs=doc.outputs,
        memories=doc.memories,
        devices=doc.devices,
    )


def _check_unique(ids: list[str], field: str) -> None:
    seen: set[str] = set()
    for i, ident in enumerate(ids):
        if ident in seen:
            raise InputError(
                f"splitting makes the id {ident!r} twice; rename ids ending in '@N', '/split' or '/combine'",
                f"{field}[{i}].id",
            )
        seen.add(ident)
