"""Run a PyTorch program's operators in a chosen order: its graph's nodes moved, nothing else changed.

A schedule is a list of operator ids, as :func:`gaplanner.schedule.search_schedule`
returns for the document :func:`gaplanner.documents.torch_import.from_exported_program`
made of the same program: an id is a graph node's name. Nodes the document
does not list (``getitem``, operators on weights alone) go where they are
needed: a ``getitem`` right after the node it reads, any other node just
before its first user, and one with no user right after the listed operator
it followed. ExecuTorch plans memory (and runs) in the graph's node order, so
reordering before its memory planning makes the plan follow the schedule.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Sequence
from typing import Any

from gaplanner.errors import InputError

#: Where a node not in the schedule goes, relative to the listed node whose rank it takes.
_BEFORE, _LISTED, _AFTER = 0, 1, 2


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
    rank = _ranks(movable, schedule)
    _check_dependencies(movable, schedule, rank)
    keys = _keys(movable, rank)
    order = _topological(movable, keys)
    anchor = [n for n in nodes if n.op == "placeholder"]
    cursor = anchor[-1] if anchor else None
    for node in order:
        if cursor is None:
            nodes[0].prepend(node)
        else:
            cursor.append(node)
        cursor = node
    graph.lint()


def _ranks(movable: list[Any], schedule: Sequence[str]) -> dict[Any, int]:
    by_name = {n.name: n for n in movable}
    rank: dict[Any, int] = {}
    for p, name in enumerate(schedule):
        node = by_name.get(name)
        if node is None:
            raise InputError(f"no operator {name!r} in the program's graph", f"schedule[{p}]")
        if node in rank:
            raise InputError(f"operator {name!r} is listed twice", f"schedule[{p}]")
        rank[node] = p
    return rank


def _listed_sources(node: Any, rank: dict[Any, int], memo: dict[Any, set[Any]]) -> set[Any]:
    """The listed nodes ``node`` reads, directly or through unlisted nodes."""
    if node in memo:
        return memo[node]
    found: set[Any] = set()
    stack = list(node.all_input_nodes)
    seen: set[Any] = set()
    while stack:
        source = stack.pop()
        if source in seen or source.op == "placeholder":
            continue
        seen.add(source)
        if source in rank:
            found.add(source)
        else:
            stack.extend(source.all_input_nodes)
    memo[node] = found
    return found


def _check_dependencies(movable: list[Any], schedule: Sequence[str], rank: dict[Any, int]) -> None:
    memo: dict[Any, set[Any]] = {}
    for node in sorted(rank, key=rank.__getitem__):
        for source in sorted(_listed_sources(node, rank, memo), key=rank.__getitem__):
            if rank[source] > rank[node]:
                raise InputError(
                    f"operator {node.name!r} reads {source.name!r} before it is written",
                    f"schedule[{rank[node]}]",
                )


def _keys(movable: list[Any], rank: dict[Any, int]) -> dict[Any, tuple[int, int, int]]:
    """Each node's place: (rank of the listed node it goes with, before/at/after it, original index)."""
    index = {n: k for k, n in enumerate(movable)}
    keys: dict[Any, tuple[int, int, int]] = {}
    for node in reversed(movable):  # users before the nodes they read
        if node in rank:
            keys[node] = (rank[node], _LISTED, index[node])
            continue
        users = [keys[u] for u in node.users if u in keys]
        if users:
            keys[node] = (min(users)[0], _BEFORE, index[node])
    previous = -1
    for node in movable:
        if node in rank:
            previous = max(previous, rank[node])
        elif node.op == "call_function" and node.target is operator.getitem and node.args[0] in keys:
            keys[node] = (keys[node.args[0]][0], _AFTER, index[node])
        elif node not in keys:
            keys[node] = (max(previous, 0), _AFTER, index[node])
    return keys


def _topological(movable: list[Any], keys: dict[Any, tuple[int, int, int]]) -> list[Any]:
    """Kahn's algorithm over the movable nodes, the ready node with the smallest key first."""
    inside = set(movable)
    waiting = {n: sum(1 for s in n.all_input_nodes if s in inside) for n in movable}
    ready = [(keys[n], k, n) for k, n in enumerate(movable) if waiting[n] == 0]
    heapq.heapify(ready)
    order = []
    position = {n: k for k, n in enumerate(movable)}
    while ready:
        _, _, node = heapq.heappop(ready)
        order.append(node)
        for user in node.users:
            if user in waiting:
                waiting[user] -= 1
                if waiting[user] == 0:
                    heapq.heappush(ready, (keys[user], position[user], user))
    return order
