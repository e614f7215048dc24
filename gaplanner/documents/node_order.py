"""A model graph's nodes in a chosen order: the scheduled operators as listed, every other node where needed.

A schedule lists a document's operators; the model it came from may have
more nodes (PyTorch's ``getitem``, operators on weights alone, ONNX constant
computations folded away before import). :func:`place_nodes` puts every node
of the model in one topological order that runs the listed ones in the
schedule's order: a node that must follow another at once (a ``getitem``)
right after it, any other unlisted node just before its first user, and one
with no user right after the listed node it followed in the model.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from gaplanner.errors import InputError

#: Where an unlisted node goes, relative to the listed node whose rank it takes.
_BEFORE, _LISTED, _AFTER = 0, 1, 2


def place_nodes(
    inputs: Sequence[Sequence[int]],
    rank: Mapping[int, int],
    names: Sequence[str],
    follows: Mapping[int, int] | None = None,
) -> list[int]:
    """The nodes ``0..n-1`` (in the model's order) in an order that runs the ranked ones by rank.

    ``inputs[k]``: the nodes node ``k`` reads. ``rank``: node -> its place in
    the schedule. ``follows``: node -> the node it goes right after. Refuses a
    schedule that runs a node before one it reads, directly or through unlisted
    nodes, naming both (``names``) and the schedule's entry.
    """
    follows = follows or {}
    users: list[list[int]] = [[] for _ in inputs]
    for k, sources in enumerate(inputs):
        for s in sources:
            users[s].append(k)
    _check(inputs, rank, names)
    keys = _keys(users, rank, follows)
    waiting = [len(set(sources)) for sources in inputs]
    ready = [(keys[k], k) for k in range(len(inputs)) if waiting[k] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, node = heapq.heappop(ready)
        order.append(node)
        for user in dict.fromkeys(users[node]):
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (keys[user], user))
    if len(order) < len(inputs):
        stuck = next(k for k in range(len(inputs)) if waiting[k] > 0)
        raise InputError(f"the model's graph has a cycle through node {names[stuck]!r}", "graph")
    return order


def _check(inputs: Sequence[Sequence[int]], rank: Mapping[int, int], names: Sequence[str]) -> None:
    """Every listed node's listed sources (through unlisted nodes) come earlier in the schedule."""
    for node in sorted(rank, key=rank.__getitem__):
        stack, seen = list(inputs[node]), set()
        while stack:
            source = stack.pop()
            if source in seen:
                continue
            seen.add(source)
            if source not in rank:
                stack.extend(inputs[source])
            elif rank[source] > rank[node]:
                raise InputError(
                    f"operator {names[node]!r} reads {names[source]!r} before it is written",
                    f"schedule[{rank[node]}]",
                )


def _keys(
    users: list[list[int]], rank: Mapping[int, int], follows: Mapping[int, int]
) -> list[tuple[int, int, int]]:
    """Each node's place: (rank of the listed node it goes with, before/at/after it, model order)."""
    n = len(users)
    needed: list[int | None] = [None] * n  # the earliest rank that reads it, directly or not
    for node in range(n - 1, -1, -1):  # the model's order is topological: users come later
        if node in rank:
            needed[node] = rank[node]
        else:
            found = [needed[u] for u in users[node] if needed[u] is not None]
            needed[node] = min(found) if found else None  # type: ignore[type-var]
    keys: list[tuple[int, int, int]] = []
    previous = 0
    for node in range(n):
        if node in rank:
            previous = max(previous, rank[node])
            keys.append((rank[node], _LISTED, node))
        elif node in follows:
            keys.append((keys[follows[node]][0], _AFTER, node))
        elif needed[node] is not None:
            keys.append((needed[node], _BEFORE, node))  # type: ignore[arg-type]
        else:
            keys.append((previous, _AFTER, node))
    return keys
