"""Run a PyTorch program's operators in a chosen order: its graph's nodes moved, nothing else changed.

A schedule is a list of operator ids, as :func:`gaplanner.schedule.search_schedule`
returns for the document :func:`gaplanner.documents.torch_import.from_exported_program`
made of the same program: an id is a graph node's name. Nodes the document
does not list go where :func:`gaplanner.documents.node_order.place_nodes` puts them (a
``getitem`` right after the node it reads). ExecuTorch plans memory (and
runs) in the graph's node order, so reordering before its memory planning
makes the plan follow the schedule.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from gaplanner.documents.node_order import place_nodes
from gaplanner.errors import InputError


def reorder_program(program: Any, schedule: Sequence[str]) -> None:
    """Reorder an ExportedProgram's graph (in place) so that its operators run in ``schedule``."""
    reorder_graph(program.graph_module.graph, schedule)
    program.graph_module.recompile()


def reorder_graph(graph: Any, schedule: Sequence[str]) -> None:
    """Move ``graph``'s nodes (a ``torch.fx.Graph``) so the named operators run in ``schedule``'s order.

    Refuses an id that names no operator of the graph, one listed twice, and an
    order that runs an operator before one it reads (directly or through
    unlisted nodes), naming the operator and the one it would read too early.
    """
    nodes = list(graph.nodes)
    movable = [n for n in nodes if n.op not in ("placeholder", "output")]
    index = {n: k for k, n in enumerate(movable)}
    inputs = [[index[s] for s in n.all_input_nodes if s in index] for n in movable]
    follows = {
        k: index[n.args[0]]
        for k, n in enumerate(movable)
        if n.op == "call_function" and n.target is operator.getitem and n.args[0] in index
    }
    order = place_nodes(inputs, _ranks(movable, schedule), [n.name for n in movable], follows)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    cursor = placeholders[-1] if placeholders else None
    for k in order:
        if cursor is None:
            nodes[0].prepend(movable[k])
        else:
            cursor.append(movable[k])
        cursor = movable[k]
    graph.lint()


def _ranks(movable: list[Any], schedule: Sequence[str]) -> dict[int, int]:
    by_name = {n.name: k for k, n in enumerate(movable)}
    rank: dict[int, int] = {}
    for p, name in enumerate(schedule):
        if name not in by_name:
            raise InputError(f"no operator {name!r} in the program's graph", f"schedule[{p}]")
        if by_name[name] in rank:
            raise InputError(f"operator {name!r} is listed twice", f"schedule[{p}]")
        rank[by_name[name]] = p
    return rank
