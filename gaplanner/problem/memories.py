"""Memories with capacities and access costs (on-chip SRAM in front of DRAM, ...).

A document may list ``memories``, fastest first. Each block then goes to one
memory, at an offset within that memory's capacity, and the plan's cost is the
bytes written and read, each times its memory's cost per byte. This module
holds the plain data (:class:`Memory`, :class:`MemorySystem`) and the checks
of a document's memories; :mod:`gaplanner.search.memories.decoder` places blocks in
them and :mod:`gaplanner.search.memories.ga` searches.

How a block's bytes are counted: each tensor of the block is written once (by
its operator, or by the caller for a model input; a view writes nothing) and
read once per operator input naming it, plus once by the caller for a model
output; a workspace is written once and read once; a buffer of a buffer list
is written once and read once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gaplanner.documents.lifetimes import WORKSPACE_SUFFIX
from gaplanner.documents.schema import Document
from gaplanner.errors import InputError

if TYPE_CHECKING:
    from gaplanner.problem.problem import Problem

#: Without given costs, each memory costs this many times the one before it (the first costs 1).
DEFAULT_COST_STEP = 10.0


@dataclass(frozen=True)
class Memory:
    """One memory: its capacity in bytes (None: unbounded), offset alignment and costs per byte."""

    id: str
    capacity: int | None
    alignment: int = 1
    read_cost: float = 1.0
    write_cost: float = 1.0


@dataclass(frozen=True, eq=False)
class MemorySystem:
    """The memories of a problem, fastest first, and what each block costs in each.

    ``pinned_memory``: per block, the index of the memory it is pinned to, or
    -1. ``write_bytes`` / ``read_bytes``: per block, the bytes written to and
    read from it over the model's run (see the module docstring).
    ``allowed``: ``(blocks, memories)``, whether the block may go to the
    memory (its pinned one only; with devices, only memories every device
    touching it reaches).
    """

    memories: tuple[Memory, ...]
    pinned_memory: np.ndarray
    write_bytes: np.ndarray
    read_bytes: np.ndarray
    allowed: np.ndarray

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.memories)

    @property
    def capacities(self) -> np.ndarray:
        """Per memory its capacity, -1 for an unbounded one."""
        return np.array([-1 if m.capacity is None else m.capacity for m in self.memories], np.int64)

    def cost_table(self) -> np.ndarray:
        """``(blocks, memories)``: what each block costs in each memory."""
        read = np.array([m.read_cost for m in self.memories])
        write = np.array([m.write_cost for m in self.memories])
        return self.write_bytes[:, None] * write[None, :] + self.read_bytes[:, None] * read[None, :]

    def alignment_table(self, block_alignments: np.ndarray) -> np.ndarray:
        """``(blocks, memories)``: each block's alignment in each memory (the two combined)."""
        memory = np.array([m.alignment for m in self.memories], np.int64)
        return np.lcm(block_alignments.astype(np.int64)[:, None], memory[None, :])

    def cost(self, memory_of: np.ndarray) -> float:
        """The total access cost of a placement (``memory_of``: each block's memory index)."""
        table = self.cost_table()
        return float(table[np.arange(len(memory_of)), memory_of].sum())

    def cost_lower_bound(self) -> float:
        """No placement costs less than every block in the cheapest memory it may go to."""
        table = np.where(self.allowed, self.cost_table(), np.inf)
        return float(table.min(axis=1).sum())


def single_memory(problem: Problem, capacity: int | None, memory_id: str = "memory") -> MemorySystem:
    """One memory of ``capacity`` bytes holding every block (``--capacity``)."""
    n = problem.n
    sizes = problem.sizes.astype(np.float64)
    allowed = np.ones((n, 1), bool)
    return MemorySystem(
        (Memory(memory_id, capacity),), np.full(n, -1, np.int64), sizes, sizes.copy(), allowed
    )


#: The largest access cost per byte a memory may declare.
MAX_COST_PER_BYTE = 1e12


def _memories(doc: Document) -> tuple[Memory, ...]:
    declared = doc.memories or []
    if not declared:
        raise InputError("list at least one memory", "memories")
    memories, seen, previous = [], set(), None
    for i, m in enumerate(declared):
        if m.id in seen:
            raise InputError(f"duplicate memory id {m.id!r}", f"memories[{i}].id")
        seen.add(m.id)
        if m.capacity is None and i < len(declared) - 1:
            raise InputError(
                "only the last (slowest) memory may leave out its capacity", f"memories[{i}].capacity"
            )
        alignment = m.alignment or 1
        if alignment & (alignment - 1):
            raise InputError(f"must be a power of two, got {alignment}", f"memories[{i}].alignment")
        read = (
            m.read_cost
            if m.read_cost is not None
            else (1.0 if previous is None else previous * DEFAULT_COST_STEP)
        )
        write = m.write_cost if m.write_cost is not None else read
        for name, value in (("read_cost", read), ("write_cost", write)):
            if not 0 <= value <= MAX_COST_PER_BYTE:  # beyond it, costs summed over the bytes overflow
                reason = f"must lie in [0, {MAX_COST_PER_BYTE:g}], got {value:g}"
                raise InputError(reason, f"memories[{i}].{name}")
        previous = read
        memories.append(
            Memory(m.id, m.capacity, int(np.lcm(alignment, doc.alignment)), float(read), float(write))
        )
    return tuple(memories)


def _block_fields(doc: Document, problem: Problem) -> list[str]:
    """Per block, the document field it comes from (for error messages)."""
    if doc.buffers is not None:
        return [f"buffers[{i}]" for i in range(problem.n)]
    where = {t.id: f"tensors[{i}]" for i, t in enumerate(doc.tensors or [])}
    for k, op in enumerate(doc.operators or []):
        where[op.id + WORKSPACE_SUFFIX] = f"operators[{k}].workspace"
    return [where.get(bid, bid) for bid in problem.ids]


def _pins(doc: Document, problem: Problem, index: dict[str, int]) -> np.ndarray:
    """Per block, the memory it is pinned to (-1: free); refuses unknown memories and disagreeing pins."""
    pinned = np.full(problem.n, -1, np.int64)
    if doc.buffers is not None:
        items = [(i, f"buffers[{i}]", b.memory) for i, b in enumerate(doc.buffers)]
    else:
        assert problem.tensors is not None
        block_of = dict(zip(problem.tensors.ids, problem.tensors.block_of.tolist(), strict=True))
        items = [(block_of[t.id], f"tensors[{i}]", t.memory) for i, t in enumerate(doc.tensors or [])]
    for block, where, memory in items:
        if memory is None:
            continue
        if memory not in index:
            raise InputError(
                f"no memory {memory!r}; the document lists {', '.join(index)}", f"{where}.memory"
            )
        if pinned[block] >= 0 and pinned[block] != index[memory]:
            raise InputError(
                f"shares bytes with {problem.ids[block]!r}, which is pinned to another memory",
                f"{where}.memory",
            )
        pinned[block] = index[memory]
    return pinned


def _allowed(problem: Problem, memories: tuple[Memory, ...], pinned: np.ndarray) -> np.ndarray:
    """Per block and memory, whether the block may go there: its pin, else what its devices reach."""
    allowed = np.ones((problem.n, len(memories)), bool)
    for b, reach in enumerate(problem.reach or ()):
        if reach is not None:
            allowed[b] = [m.id in reach for m in memories]
    fixed = np.flatnonzero(pinned >= 0)
    allowed[fixed] = False
    allowed[fixed, pinned[fixed]] = True
    return allowed


def _access_bytes(doc: Document, problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Per block, the bytes written and the bytes read over a run (see the module docstring)."""
    sizes = problem.sizes.astype(np.float64)
    if doc.buffers is not None or problem.tensors is None:
        return sizes, sizes.copy()
    tensors, rules = problem.tensors, problem.rules
    block = dict(zip(tensors.ids, tensors.block_of.tolist(), strict=True))
    size = dict(zip(tensors.ids, tensors.sizes.astype(np.float64).tolist(), strict=True))
    written, read = np.zeros(problem.n), np.zeros(problem.n)
    writers = {tid for op in doc.operators or [] for tid in op.outputs}
    readers = {tid for op in doc.operators or [] for tid in op.inputs}
    for op in doc.operators or []:
        for tid in op.inputs:
            read[block[tid]] += size[tid]
        for tid in op.outputs:
            if not (rules.views and tid in op.views):
                written[block[tid]] += size[tid]
        if op.workspace is not None:
            wid = op.id + WORKSPACE_SUFFIX
            written[block[wid]] += size[wid]
            read[block[wid]] += size[wid]
    outputs = doc.outputs if doc.outputs is not None else [t for t in writers if t not in readers]
    for tid in outputs:
        read[block[tid]] += size[tid]
    for t in doc.tensors or []:
        if t.id not in writers:
            written[block[t.id]] += size[t.id]
    return written, read


def _check_blocks(system: MemorySystem, problem: Problem, fields: list[str]) -> None:
    """Refuse a block no memory it may go to can hold, and a pinned offset outside its memory."""
    capacities = system.capacities
    unbounded = capacities < 0
    alignments = system.alignment_table(problem.alignments)
    for b in range(problem.n):
        allowed = np.flatnonzero(system.allowed[b]).tolist()
        offset = int(problem.pinned[b])
        if offset >= 0:
            if system.pinned_memory[b] < 0 and len(capacities) > 1:
                raise InputError(
                    "a pinned offset needs a 'memory' when the document lists several", f"{fields[b]}.offset"
                )
            m = allowed[0]
            if offset % alignments[b, m]:
                raise InputError(
                    f"must be a multiple of {alignments[b, m]} in memory {system.ids[m]!r}",
                    f"{fields[b]}.offset",
                )
            if not unbounded[m] and offset + problem.sizes[b] > capacities[m]:
                raise InputError(
                    f"ends at {offset + problem.sizes[b]}, beyond memory {system.ids[m]!r} "
                    f"({capacities[m]} bytes)",
                    f"{fields[b]}.offset",
                )
        if not any(unbounded[m] or problem.sizes[b] <= capacities[m] for m in allowed):
            names = ", ".join(f"{system.ids[m]} ({capacities[m]})" for m in allowed)
            raise InputError(
                f"{problem.sizes[b]} bytes fit in no memory it may go to: {names}",
                f"{fields[b]}.size" if fields[b].startswith(("tensors", "buffers")) else fields[b],
            )


def _check_pinned_offsets(system: MemorySystem, problem: Problem) -> None:
    """Refuse pinned blocks in one memory that are live at once and overlap: no plan keeps both."""
    fixed = np.flatnonzero(problem.pinned >= 0)
    memory = np.maximum(system.pinned_memory, 0)
    ends = problem.pinned + problem.sizes
    for a in fixed:
        for b in problem.conflicts.neighbors(int(a)):
            same = b > a and problem.pinned[b] >= 0 and memory[a] == memory[b]
            if same and problem.pinned[a] < ends[b] and problem.pinned[b] < ends[a]:
                raise InputError(
                    f"pinned blocks {problem.ids[a]!r} and {problem.ids[b]!r} are live at once and "
                    f"overlap in memory {system.ids[memory[a]]!r}",
                    "offset",
                )


def memory_system(doc: Document, problem: Problem) -> MemorySystem:
    """The checked memories of a document whose blocks are ``problem``'s; errors name the field."""
    memories = _memories(doc)
    index = {m.id: i for i, m in enumerate(memories)}
    written, read = _access_bytes(doc, problem)
    pinned = _pins(doc, problem, index)
    system = MemorySystem(memories, pinned, written, read, _allowed(problem, memories, pinned))
    _check_blocks(system, problem, _block_fields(doc, problem))
    _check_pinned_offsets(system, problem)
    return system


def refuse_memory_pins(doc: Document) -> None:
    """A document without ``memories`` may not pin anything to a memory."""
    items = doc.buffers if doc.buffers is not None else doc.tensors or []
    kind = "buffers" if doc.buffers is not None else "tensors"
    for i, item in enumerate(items):
        if item.memory is not None:
            raise InputError(
                f"memory {item.memory!r} given, but the document lists no 'memories'", f"{kind}[{i}].memory"
            )
