"""Independent plan verification.

A plan is valid when every pinned block is at its pinned offset, every offset
is a non-negative multiple of its block's alignment, every block lies inside
``[0, peak)``, and no two conflicting blocks share an address. For interval
problems the last check does not use the conflict graph at all: a compiled
sweep over time keeps the live blocks in order of address (marks in a count
tree over the blocks ranked by offset) and compares each newcomer with its two
address neighbours (if the live blocks are pairwise disjoint, a newcomer
overlapping any of them overlaps one of those two), in O(n log n). For
multi-core problems every conflict edge is checked where the pair list was
built; where it was not (too large), the blocks are walked in order of
address, each against those starting below its end, and every pair that
overlaps in memory is tested against the happens-before vectors: O(n log n +
pairs overlapping in memory), memory O(n).

A graph with ``devices`` is also checked operator by operator against its
document: every tensor an operator on a device reads or writes (and its
workspace) sits at a multiple of that device's alignment, in a memory the
device reaches. This reads the device table itself, not the alignments and
memories the planner derived for the blocks from it.
"""

from __future__ import annotations

import numpy as np

from gaplanner.documents.lifetimes import WORKSPACE_SUFFIX
from gaplanner.errors import PlanError
from gaplanner.native import _verify
from gaplanner.problem.problem import Problem


def _describe(problem: Problem, a: int, b: int, offsets: np.ndarray, where: str = "memory") -> str:
    sa, sb = problem.sizes[a], problem.sizes[b]
    return (
        f"conflicting blocks {problem.ids[a]!r} [{offsets[a]}, {offsets[a] + sa}) and "
        f"{problem.ids[b]!r} [{offsets[b]}, {offsets[b] + sb}) overlap in {where}"
    )


Shown = tuple[np.ndarray, np.ndarray, tuple[str, ...]]


def _clash(problem: Problem, a: int, b: int, offsets: np.ndarray, shown: Shown | None) -> str:
    """A clash of blocks ``a`` and ``b``, in each one's own memory when there are several."""
    if shown is None:
        return _describe(problem, a, b, offsets)
    local, memory_of, names = shown
    return _describe(problem, a, b, local, f"memory {names[memory_of[a]]!r}")


def _interval_overlap(problem: Problem, offsets: np.ndarray, shown: Shown | None = None) -> str | None:
    n = problem.n
    # Events: ends (kind 0) before starts (kind 1) at the same time (half-open lifetimes).
    times = np.concatenate([problem.upper, problem.lower])
    kinds = np.repeat(np.array([0, 1], np.int8), n)
    events = np.lexsort((np.tile(np.arange(n), 2), kinds, times))
    offsets = np.ascontiguousarray(offsets, np.int64)
    by_address = np.argsort(offsets, kind="stable")
    a, b = _verify.sweep_overlap(events, by_address, offsets, offsets + problem.sizes)
    return None if a < 0 else _clash(problem, int(a), int(b), offsets, shown)


def _edge_overlap(problem: Problem, offsets: np.ndarray, shown: Shown | None = None) -> str | None:
    a, b = problem.conflicts.edges()
    ends = offsets + problem.sizes
    clash = (offsets[a] < ends[b]) & (offsets[b] < ends[a])
    if clash.any():
        k = int(np.argmax(clash))
        return _clash(problem, int(a[k]), int(b[k]), offsets, shown)
    return None


def _vector_overlap(problem: Problem, offsets: np.ndarray, shown: Shown | None = None) -> str | None:
    order = problem.happens_before
    assert order is not None
    offsets = np.ascontiguousarray(offsets, np.int64)
    by_address = np.argsort(offsets, kind="stable")
    acquire, release = (np.ascontiguousarray(a, np.int64) for a in (order.acquire, order.release))
    a, b = _verify.address_overlap(by_address, offsets, offsets + problem.sizes, acquire, release)
    return None if a < 0 else _clash(problem, int(a), int(b), offsets, shown)


def _pair_overlap(problem: Problem, offsets: np.ndarray, shown: Shown | None = None) -> str | None:
    """A multi-core problem's clash: from its pair list where it was built, else from its vectors."""
    if problem.happens_before is not None and not getattr(problem.conflicts, "built", True):
        return _vector_overlap(problem, offsets, shown)
    return _edge_overlap(problem, offsets, shown)


def _device_violation(
    problem: Problem, offsets: np.ndarray, memory_of: np.ndarray | None = None
) -> str | None:
    """The first tensor whose place does not suit a device touching it (see the module docstring)."""
    doc, tensors = problem.document, problem.tensors
    if doc is None or not doc.devices or tensors is None:
        return None
    block = dict(zip(tensors.ids, tensors.block_of.tolist(), strict=True))
    devices = {d.id: d for d in doc.devices}
    names = problem.memories.ids if problem.memories is not None else ()
    for op in doc.operators or []:
        if op.device is None:
            continue
        device = devices[op.device]
        for tid in [*op.inputs, *op.outputs, *([op.id + WORKSPACE_SUFFIX] if op.workspace else [])]:
            b = block[tid]
            where = f"tensor {tid!r} of operator {op.id!r} on device {device.id!r}"
            if offsets[b] % device.alignment:
                return f"{where} is at {offsets[b]}, not a multiple of {device.alignment}"
            memory = names[memory_of[b]] if memory_of is not None else None
            if memory is not None and device.memories is not None and memory not in device.memories:
                return f"{where} is in memory {memory!r}, which that device does not reach"
    return None


def find_violation(problem: Problem, offsets: np.ndarray, peak: int | None = None) -> str | None:
    """The first rule the plan breaks, in words, or None for a valid plan."""
    offsets = np.asarray(offsets)
    if offsets.shape != (problem.n,):
        return f"the plan has {offsets.size} offsets for {problem.n} blocks"
    if not np.issubdtype(offsets.dtype, np.integer):
        return "offsets must be integers"
    offsets = offsets.astype(np.int64)
    if (moved := (problem.pinned >= 0) & (offsets != problem.pinned)).any():
        i = int(np.argmax(moved))
        return f"block {problem.ids[i]!r} is pinned at {problem.pinned[i]} but placed at {offsets[i]}"
    for name, bad in (
        ("is negative", offsets < 0),
        ("is not a multiple of its alignment", offsets % problem.alignments != 0),
    ):
        if bad.any():
            i = int(np.argmax(bad))
            return f"offset {offsets[i]} of block {problem.ids[i]!r} {name} ({problem.alignments[i]})"
    ends = offsets + problem.sizes
    if peak is not None and (outside := ends > peak).any():
        i = int(np.argmax(outside))
        return f"block {problem.ids[i]!r} ends at {ends[i]}, beyond the arena of {peak} bytes"
    if (device := _device_violation(problem, offsets)) is not None:
        return device
    if problem.interval_conflicts:
        return _interval_overlap(problem, offsets)
    return _pair_overlap(problem, offsets)


def find_memory_violation(problem: Problem, memory_of: np.ndarray, offsets: np.ndarray) -> str | None:
    """The first rule a placement across the problem's memories breaks, in words, or None.

    Valid: every block in a memory it may use (its pinned one, if any), at its
    pinned offset if it has one, at a non-negative multiple of its alignment in
    that memory, within the memory's capacity, and clear of every conflicting
    block in the same memory (blocks in different memories never clash).
    """
    system = problem.memories
    if system is None:
        return "the problem lists no memories"
    memory_of, offsets = np.asarray(memory_of, np.int64), np.asarray(offsets, np.int64)
    if memory_of.shape != (problem.n,) or offsets.shape != (problem.n,):
        return f"the plan places {offsets.size} blocks in {memory_of.size} memories for {problem.n} blocks"
    count = len(system.memories)
    if (bad := (memory_of < 0) | (memory_of >= count)).any():
        i = int(np.argmax(bad))
        return f"block {problem.ids[i]!r} is in memory {memory_of[i]}, not one of the {count} memories"
    if (bad := (system.pinned_memory >= 0) & (memory_of != system.pinned_memory)).any():
        i = int(np.argmax(bad))
        return f"block {problem.ids[i]!r} is pinned to memory {system.ids[system.pinned_memory[i]]!r}"
    if (device := _device_violation(problem, offsets, memory_of)) is not None:
        return device
    if (bad := ~system.allowed[np.arange(problem.n), memory_of]).any():
        i = int(np.argmax(bad))
        return f"block {problem.ids[i]!r} may not go to memory {system.ids[memory_of[i]]!r}"
    if (bad := (problem.pinned >= 0) & (offsets != problem.pinned)).any():
        i = int(np.argmax(bad))
        return f"block {problem.ids[i]!r} is pinned at {problem.pinned[i]} but placed at {offsets[i]}"
    alignments = system.alignment_table(problem.alignments)[np.arange(problem.n), memory_of]
    if (bad := (offsets < 0) | (offsets % alignments != 0)).any():
        i = int(np.argmax(bad))
        where = f"offset {offsets[i]} of block {problem.ids[i]!r}"
        return f"{where} is not a non-negative multiple of {alignments[i]}"
    ends, capacities = offsets + problem.sizes, system.capacities[memory_of]
    if (bad := (capacities >= 0) & (ends > capacities)).any():
        i = int(np.argmax(bad))
        memory = system.memories[memory_of[i]]
        where = f"memory {memory.id!r} ({memory.capacity} bytes)"
        return f"block {problem.ids[i]!r} ends at {ends[i]}, beyond {where}"
    # Memories laid end to end in one address space: blocks clash there exactly when they do in one memory.
    spans = np.zeros(count, np.int64)
    np.maximum.at(spans, memory_of, ends)
    base = np.concatenate([[0], np.cumsum(spans)[:-1]])
    laid_out = base[memory_of] + offsets
    clash = _interval_overlap if problem.interval_conflicts else _pair_overlap
    return clash(problem, laid_out, shown=(offsets, memory_of, system.ids))


def verify(problem: Problem, offsets: np.ndarray, peak: int | None = None) -> None:
    """Raise :class:`PlanError` naming the first violation; return quietly for a valid plan."""
    violation = find_violation(problem, offsets, peak)
    if violation is not None:
        raise PlanError(violation)


#: Estimated seconds of verifying a plan, per block and per conflicting pair a multi-core graph lists:
#: high estimates from plans of a million blocks on a loaded 2-core machine, so a time limit that keeps
#: them back for the last verification is kept.
VERIFY_SECONDS_PER_BLOCK = 3e-6
VERIFY_SECONDS_PER_PAIR = 2e-8


def verify_seconds(problem: Problem) -> float:
    """About how long :func:`verify` (and the model's rules, checked with it) takes on ``problem``."""
    pairs = 0 if problem.interval_conflicts else problem.conflicts.edge_count
    return VERIFY_SECONDS_PER_BLOCK * problem.n + VERIFY_SECONDS_PER_PAIR * pairs
