"""Heterogeneous compute units: which units touch each tensor, and what that asks of its buffer.

A graph document may list ``devices`` (an NPU, a DSP, a CPU core, ...), each
with the alignment it needs and, optionally, the memories it can read and
write; an operator names the device that runs it. A tensor passed from one
unit to another is one buffer, never a copy per unit, so that buffer must suit
every unit touching it: its offset is a multiple of each one's alignment (of
the largest, as they are powers of two) and its memory one that each of them
can reach. The units touching a tensor are those of its writer and its
readers (a workspace: its operator's); an operator without a device asks
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gaplanner.documents.schema import Document
from gaplanner.errors import InputError


@dataclass(frozen=True)
class TensorDevices:
    """Per tensor: the devices touching it, the alignment they need, the memories they all reach."""

    names: tuple[tuple[str, ...], ...]  # device ids in the document's order
    alignments: np.ndarray  # int64, 1 where no device touches the tensor
    memories: tuple[frozenset[str] | None, ...]  # None: every memory


def _listed(ids: Sequence[str], what: str) -> str:
    return f"the document lists {', '.join(ids)}" if ids else f"the document lists no '{what}'"


def check_devices(doc: Document) -> dict[str, int]:
    """Each device's index; refuses a repeated id, unknown memories or devices (the schema checks the
    alignment)."""
    index: dict[str, int] = {}
    memory_ids = [m.id for m in doc.memories or []]
    for i, device in enumerate(doc.devices or []):
        if device.id in index:
            raise InputError(f"duplicate device id {device.id!r}", f"devices[{i}].id")
        index[device.id] = i
        if device.memories is not None and not device.memories:
            raise InputError("list at least one memory, or leave 'memories' out", f"devices[{i}].memories")
        for j, memory in enumerate(device.memories or []):
            if memory not in memory_ids:
                reason = f"no memory {memory!r}; {_listed(memory_ids, 'memories')}"
                raise InputError(reason, f"devices[{i}].memories[{j}]")
    for k, op in enumerate(doc.operators or []):
        if op.device is not None and op.device not in index:
            reason = f"unknown device {op.device!r}; {_listed(list(index), 'devices')}"
            raise InputError(reason, f"operators[{k}].device")
    return index


def tensor_devices(
    doc: Document, ids: Sequence[str], users: Sequence[Sequence[int]], fields: Sequence[str]
) -> TensorDevices:
    """The devices of each tensor's users (``users[t]``: operator indices writing or reading it).

    ``fields``: per tensor its place in the document, for the errors. A
    tensor pinned to a memory may go there only (so that no in-place write
    joins it to a tensor whose units cannot reach that memory).
    """
    index = check_devices(doc)
    devices, ops, tensors = doc.devices or [], doc.operators or [], doc.tensors or []
    memory_ids = {m.id for m in doc.memories or []}
    names, alignments, memories = [], np.ones(len(users), np.int64), []
    for t, ops_using in enumerate(users):
        touching = sorted({index[d] for k in ops_using if (d := ops[k].device) is not None})
        names.append(tuple(devices[d].id for d in touching))
        reach: frozenset[str] | None = None
        for d in touching:
            alignments[t] = max(alignments[t], devices[d].alignment)  # powers of two: the largest is the lcm
            if devices[d].memories is not None:
                own = frozenset(devices[d].memories)
                reach = own if reach is None else reach & own
        reaches = "; ".join(
            f"{devices[d].id!r} reaches {', '.join(devices[d].memories or ['every memory'])}"
            for d in touching
        )
        if reach is not None and not reach:
            reason = f"no memory is reachable by every unit using tensor {ids[t]!r} ({reaches})"
            raise InputError(reason, fields[t])
        pin = tensors[t].memory if t < len(tensors) else None
        if pin in memory_ids:  # an unknown one is refused with the other memory checks
            if reach is not None and pin not in reach:
                reason = f"memory {pin!r} is out of reach of a unit using tensor {ids[t]!r} ({reaches})"
                raise InputError(reason, f"{fields[t]}.memory")
            reach = frozenset({pin})
        memories.append(reach)
    return TensorDevices(tuple(names), alignments, tuple(memories))
