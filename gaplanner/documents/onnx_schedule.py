"""An ONNX model written with its nodes in a chosen order (``gaplanner plan ... --write-model``).

The schedule lists the operators of the document
:func:`gaplanner.documents.onnx_import.import_onnx` made of the model. Each is found in
the model by the tensors it writes (the import may have folded constant
computations away first, and an unnamed node's id is only its position), else
by its node name. The model's other nodes (``Constant`` nodes, constant
computations) go just before their first reader (:mod:`gaplanner.documents.node_order`).
Nothing else changes: the same nodes, names, weights and metadata.

What a runtime does with the order is its own choice: ONNX Runtime sorts the
graph itself (see docs/schedule.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gaplanner.documents.node_order import place_nodes
from gaplanner.documents.onnx_import import node_reads
from gaplanner.documents.schema import Document
from gaplanner.errors import InputError


def scheduled_model(model: Any, document: Document, schedule: Sequence[str]) -> Any:
    """A copy of ``model`` (a ``ModelProto``) with its top-level nodes in ``schedule``'s order."""
    import onnx

    nodes = list(model.graph.node)
    rank = _ranks(nodes, document, schedule)
    producer = {name: k for k, node in enumerate(nodes) for name in node.output if name}
    inputs = [[producer[t] for t in node_reads(node) if t in producer] for node in nodes]
    names = [node.name or f"{node.op_type} writing {node.output[0]!r}" for node in nodes]
    for k, p in rank.items():
        names[k] = schedule[p]  # the document's id, which the user sees
    order = place_nodes(inputs, rank, names)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(nodes[k] for k in order)
    return copy


def _ranks(nodes: list[Any], document: Document, schedule: Sequence[str]) -> dict[int, int]:
    """Model node index -> its operator's place in the schedule."""
    by_output = {name: k for k, node in enumerate(nodes) for name in node.output if name}
    by_name = {node.name: k for k, node in enumerate(nodes) if node.name}
    operators = {op.id: op for op in document.operators or []}
    rank: dict[int, int] = {}
    for p, op_id in enumerate(schedule):
        op = operators.get(op_id)
        if op is None:
            raise InputError(f"no operator {op_id!r} in the document", f"schedule[{p}]")
        found = [by_output[t] for t in op.outputs if t in by_output] or (
            [by_name[op_id]] if op_id in by_name else []
        )
        if not found:
            raise InputError(f"operator {op_id!r} is not a node of the model", f"schedule[{p}]")
        if found[0] in rank:
            raise InputError(f"operator {op_id!r} is listed twice", f"schedule[{p}]")
        rank[found[0]] = p
    return rank


def write_scheduled_model(
    source: str | Path, document: Document, schedule: Sequence[str], out: str | Path
) -> None:
    """Read the model at ``source``, put its nodes in ``schedule``'s order, write it to ``out``.

    A model whose weights live in external data files keeps its references to
    them, relative to its folder: it is refused unless ``out`` is in the same
    folder.
    """
    import onnx

    source, out = Path(source), Path(out)
    model = onnx.load(str(source), load_external_data=False)
    external = any(init.data_location == onnx.TensorProto.EXTERNAL for init in model.graph.initializer)
    if external and source.resolve().parent != out.resolve().parent:
        raise InputError(
            f"{source.name} keeps its weights in external files: write the model into its folder "
            f"({source.parent})",
            "--write-model",
        )
    onnx.save(scheduled_model(model, document, schedule), str(out))
