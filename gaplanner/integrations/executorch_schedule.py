"""An ExecuTorch program's operators put in a memory-aware order before its memory is planned.

ExecuTorch runs a method's operators in its graph's node order and plans
their memory (``MemoryPlanningPass``) from lifetimes in that order.
:func:`schedule_for_memory` imports the edge program's method as a gaplanner
document, searches the order with :func:`gaplanner.schedule.search_schedule`
and moves the graph's nodes to it (:mod:`gaplanner.documents.torch_schedule`), so the
memory planning that ``to_executorch`` runs next, ExecuTorch's greedy or
:func:`gaplanner.integrations.executorch.plan_memory`, plans the chosen order::

    edge = to_edge(torch.export.export(model, inputs))
    result = schedule_for_memory(edge)       # the order, and its certificate
    program = edge.to_executorch(config)     # planned and serialized in that order

The document declares no in-place chances (ExecuTorch's kernels write their
``out`` arguments); views share their base's bytes and outputs live until the
method ends, as ExecuTorch plans them. A ``view_copy`` that is not a program
output is a view too: ``to_executorch`` makes it one (its
``ReplaceViewCopyWithViewPass``).
"""

from __future__ import annotations

from typing import Any

from gaplanner.documents.schema import Document, parse_document
from gaplanner.documents.torch_import import from_exported_program
from gaplanner.documents.torch_schedule import reorder_program
from gaplanner.documents.writer import document_data
from gaplanner.schedule import ScheduleResult, ScheduleSettings, search_schedule


def schedule_for_memory(
    edge: Any, method: str = "forward", settings: ScheduleSettings | None = None
) -> ScheduleResult:
    """Reorder ``edge``'s ``method`` (in place) to the order with the lowest memory bound found.

    ``edge``: an ``EdgeProgramManager`` (from ``to_edge``) or an
    ``ExportedProgram``; call it before ``to_executorch``. The given order is
    kept when nothing beats it (the result's ``chosen_from`` says which order
    was chosen; its bounds are in bytes, before ExecuTorch's alignment).
    """
    program = edge.exported_program(method) if hasattr(edge, "exported_program") else edge
    document = _view_copies_as_views(program, from_exported_program(program, name=method, inplace=False))
    result = search_schedule(document, settings=settings)
    reorder_program(program, result.order)
    return result


def _view_copies_as_views(program: Any, document: Document) -> Document:
    """The document with each ``view_copy`` that ExecuTorch turns into a view declared one."""
    copies = {
        node.name
        for node in program.graph.nodes
        if node.op == "call_function"
        and "view_copy" in str(node.target)
        and all(user.op != "output" for user in node.users)
    }
    data = document_data(document)
    sizes = {t.id: t.nbytes for t in document.tensors or []}
    resized: dict[str, int] = {}
    for op in data["operators"]:
        if op["id"] in copies and len(op["inputs"]) == 1 and op["outputs"] == [op["id"]]:
            op["views"] = {op["id"]: op["inputs"][0]}
            resized[op["id"]] = sizes[op["inputs"][0]]
    for k, tensor in enumerate(data["tensors"]):
        if tensor["id"] in resized:
            data["tensors"][k] = {"id": tensor["id"], "size": resized[tensor["id"]]}
    return parse_document(data)
