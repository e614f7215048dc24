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
method ends, as ExecuTorch plans them.
"""

from __future__ import annotations

from typing import Any

from gaplanner.documents.torch_import import from_exported_program
from gaplanner.documents.torch_schedule import reorder_program
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
    document = from_exported_program(program, name=method, inplace=False)
    result = search_schedule(document, settings=settings)
    reorder_program(program, result.order)
    return result
