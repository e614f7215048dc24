"""From a graph document to blocks with lifetimes and a happens-before order.

The happens-before order is made of each core's program order (the list order
of its operators), data dependencies (a tensor's writer before its readers) and
explicit ``sync`` edges. Operators are laid out in one linear extension of that
order (round-robin over cores: ready operators by their index in their core's
program); positions in it are the time axis of the blocks.

Conventions (seed 000): a tensor lives from its writer to its last reader,
inclusive, so an operator's outputs never share with its inputs; an unread
output lives at its writer only; a graph input (no writer) lives from time 0.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from gaplanner.errors import InputError
from gaplanner.schema import Document


@dataclass(frozen=True)
class GraphBlocks:
    """Blocks of a graph, on the time axis of a linear extension of its order."""

    ids: tuple[str, ...]
    sizes: np.ndarray  # int64 bytes
    alignments: np.ndarray  # int64, per-tensor alignment combined with the graph's
    writer: np.ndarray  # int64 position of the writing operator, -1 for graph inputs
    lower: np.ndarray  # int64 first time the block is live (its writer, 0 for inputs)
    upper: np.ndarray  # int64 one past its last reader (half-open live range)
    #: ``after_readers[a]`` bit k: the operator at position k runs strictly after every
    #: reader of a. None when the order is total (one core): then lifetimes are exact.
    after_readers: np.ndarray | None
    operator_ids: tuple[str, ...]  # in linear-extension order


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
    return index


def _wire_operators(
    doc: Document, tensor_index: dict[str, int]
) -> tuple[np.ndarray, list[list[int]], dict[str, int]]:
    """Writer operator of each tensor, readers of each tensor, operator index."""
    n = len(tensor_index)
    writer = np.full(n, -1, np.int64)
    readers: list[list[int]] = [[] for _ in range(n)]
    op_index: dict[str, int] = {}
    for k, op in enumerate(doc.operators or []):
        if op.id in op_index:
            raise InputError(f"duplicate operator id {op.id!r}", f"operators[{k}].id")
        op_index[op.id] = k
        for role in ("inputs", "outputs"):
            for m, tid in enumerate(getattr(op, role)):
                if tid not in tensor_index:
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
    for tid, t in tensor_index.items():
        if writer[t] < 0 and not readers[t]:
            raise InputError(f"tensor {tid!r} is used by no operator", f"tensors[{t}]")
    return writer, readers, op_index


def _successors(
    doc: Document, writer: np.ndarray, readers: list[list[int]], op_index: dict[str, int]
) -> list[set[int]]:
    ops = doc.operators or []
    succ: list[set[int]] = [set() for _ in ops]
    last_on_core: dict[int, int] = {}
    for k, op in enumerate(ops):
        if op.core in last_on_core:
            succ[last_on_core[op.core]].add(k)
        last_on_core[op.core] = k
    for t, w in enumerate(writer):
        if w >= 0:
            succ[w].update(readers[t])
    for i, edge in enumerate(doc.sync):
        for end in ("before", "after"):
            if getattr(edge, end) not in op_index:
                raise InputError(f"unknown operator id {getattr(edge, end)!r}", f"sync[{i}].{end}")
        succ[op_index[edge.before]].add(op_index[edge.after])
    return succ


def _linear_extension(doc: Document, succ: list[set[int]]) -> list[int]:
    """Kahn's algorithm, ready operators by (index in own core's program, core)."""
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
    if len(order) < len(ops):
        stuck = [ops[k].id for k in range(len(ops)) if indegree[k] > 0][:5]
        raise InputError(
            "the happens-before order has a cycle through operators " + ", ".join(repr(s) for s in stuck),
            "operators",
        )
    return order


def _strict_descendants(order: list[int], succ: list[set[int]], position: np.ndarray) -> np.ndarray:
    """Bitset (by position) of the operators reachable from each operator (by position)."""
    n = len(order)
    words = (n + 63) // 64
    bits = np.zeros((n, words), np.uint64)
    one = np.uint64(1)
    for p in range(n - 1, -1, -1):
        row = bits[p]
        for v in succ[order[p]]:
            q = position[v]
            row |= bits[q]
            row[q >> 6] |= one << np.uint64(q & 63)
    return bits


def _last_position_not_set(bits: np.ndarray, n_positions: int) -> np.ndarray:
    """Per row, the highest position < n_positions whose bit is clear (-1 if none)."""
    flags = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n_positions]
    clear = flags == 0
    last = n_positions - 1 - np.argmax(clear[:, ::-1], axis=1)
    return np.where(clear.any(axis=1), last, -1)


def analyse_graph(doc: Document) -> GraphBlocks:
    """Validate a graph document and derive its blocks and happens-before order."""
    tensor_index = _index_tensors(doc)
    writer_op, readers_op, op_index = _wire_operators(doc, tensor_index)
    succ = _successors(doc, writer_op, readers_op, op_index)
    order = _linear_extension(doc, succ)
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))

    tensors = doc.tensors or []
    writer = np.where(writer_op >= 0, position[np.maximum(writer_op, 0)], -1)
    reader_pos = [
        [int(position[k]) for k in readers] if readers else [int(writer[t])]
        for t, readers in enumerate(readers_op)
    ]
    lower = np.maximum(writer, 0)
    upper = np.array([max(r) + 1 for r in reader_pos], np.int64)

    after_readers = None
    if len({op.core for op in doc.operators or []}) > 1:
        descendants = _strict_descendants(order, succ, position)
        after_readers = np.empty((len(tensors), descendants.shape[1]), np.uint64)
        for t, positions in enumerate(reader_pos):
            np.bitwise_and.reduce(descendants[positions], axis=0, out=after_readers[t])

    alignments = np.array([np.lcm(t.alignment or 1, doc.alignment) for t in tensors], np.int64)
    return GraphBlocks(
        ids=tuple(t.id for t in tensors),
        sizes=np.array([t.nbytes for t in tensors], np.int64),
        alignments=alignments,
        writer=writer,
        lower=lower,
        upper=upper,
        after_readers=after_readers,
        operator_ids=tuple((doc.operators or [])[k].id for k in order),
    )


def reuse_times(blocks: GraphBlocks) -> np.ndarray:
    """Per block, the time from which every block written later may reuse its space.

    With a total order that is the end of its lifetime. In a partial order it is
    one past the last position holding an operator that is *not* surely after
    all of the block's readers: so two conflicting blocks always overlap on
    ``[lower, reuse_time)``, and a time walk over these intervals (seed 000's
    best-fit) only reuses space that is really free.
    """
    if blocks.after_readers is None:
        return blocks.upper.copy()
    last = _last_position_not_set(blocks.after_readers, len(blocks.operator_ids))
    return np.maximum(last + 1, blocks.upper)
