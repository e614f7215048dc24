"""A document's operators put in a chosen order, checked against their dependencies."""

from __future__ import annotations

from collections.abc import Sequence

from gaplanner.documents.schema import Document
from gaplanner.errors import InputError
from gaplanner.schedule.dag import Dag, build_dag, check_order


def order_indices(dag: Dag, order: Sequence[str], field: str = "schedule") -> list[int]:
    """Operator ids to their indices in the document, refusing an unknown id."""
    index = {op_id: k for k, op_id in enumerate(dag.ids)}
    indices = []
    for p, op_id in enumerate(order):
        if op_id not in index:
            raise InputError(f"no operator {op_id!r} in the document", f"{field}[{p}]")
        indices.append(index[op_id])
    return indices


def apply_schedule(document: Document, order: Sequence[str], dag: Dag | None = None) -> Document:
    """``document`` with its operators listed in ``order`` (operator ids): every core runs them so.

    Refuses an order that misses or repeats an operator, or runs one before an
    operator it depends on (naming it and the input it would read too early).
    """
    if not document.is_graph:
        raise InputError("a buffer list has no operators to order", "schedule")
    dag = dag or build_dag(document)
    indices = order_indices(dag, order)
    check_order(dag, indices)
    operators = document.operators or []
    return document.model_copy(update={"operators": [operators[k] for k in indices]})
