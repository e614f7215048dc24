"""Brute-force oracles for orders, written from the rules (README: memory rules), not from the planner.

A tensor lives from its writer (a graph input: from the first operator) to its
last reader, inclusive; a kept model output to one past the last operator; a
workspace at its operator only; a view shares its input's bytes (one block:
the largest size, the union of the lifetimes). An in-place output written
over an input whose block has no access after that operator saves its bytes
there (the bound any plan under the order meets, whatever chances it takes).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document


def _blocks(doc: Document, rules: Rules) -> dict[str, str]:
    """Each tensor's block: its own id, or its view base's block."""
    block = {t.id: t.id for t in doc.tensors or []}
    for op in doc.operators or []:
        block.update({op.id + "#workspace": op.id + "#workspace"} if op.workspace else {})
    if rules.views:
        for op in doc.operators or []:
            for out, host in op.views.items():
                root = block[host]
                for t, b in block.items():
                    if b == block[out]:
                        block[t] = root
    return block


def order_bound(doc: Document, order: Sequence[str], rules: Rules | None = None) -> int:
    """The most bytes live at once when the operators run in ``order`` (operator ids)."""
    return max(order_profile(doc, order, rules))


def order_profile(doc: Document, order: Sequence[str], rules: Rules | None = None) -> list[int]:
    """Bytes live at each position of ``order``, and after the last operator."""
    rules = rules or Rules()
    ops = {op.id: op for op in doc.operators or []}
    n = len(order)
    size = {t.id: t.nbytes for t in doc.tensors or []}
    size.update({op.id + "#workspace": op.workspace for op in ops.values() if op.workspace})
    written = {t for op in ops.values() for t in op.outputs}
    read = {t for op in ops.values() for t in op.inputs}
    kept = set(doc.outputs) if doc.outputs is not None else written - read
    kept = kept if rules.keep_outputs else set()
    times: dict[str, list[int]] = {t: [] for t in size}
    for p, op_id in enumerate(order):
        op = ops[op_id]
        for t in [*op.inputs, *op.outputs] + ([op_id + "#workspace"] if op.workspace else []):
            times[t].append(p)
    block = _blocks(doc, rules)
    span: dict[str, list[int]] = {}
    for t, ts in times.items():
        first = 0 if t not in written and not t.endswith("#workspace") else min(ts)
        last = n if t in kept else max(ts)
        b = span.setdefault(block[t], [first, last, 0])
        b[0], b[1], b[2] = min(b[0], first), max(b[1], last), max(b[2], size[t])
    load = [sum(s for lo, hi, s in span.values() if lo <= p <= hi) for p in range(n + 1)]
    if rules.inplace != "never":
        for p, op_id in enumerate(order):
            for out, hosts in ops[op_id].inplace.items():
                hosts = [hosts] if isinstance(hosts, str) else hosts
                if any(_dies_here(span, block, size, out, h, ops[op_id], p) for h in hosts):
                    load[p] -= span[block[out]][2]
    return load


def _dies_here(span, block, size, out: str, host: str, op, p: int) -> bool:  # type: ignore[no-untyped-def]
    """The output may take the host's bytes at position ``p``: the host's block ends there."""
    hb, ob = block[host], block[out]
    if hb == ob or span[hb][1] != p or span[ob][2] > size[host] or span[ob][0] != p:
        return False
    return not any(block[t] == hb for t in op.outputs)


def topological_orders(doc: Document) -> Iterator[list[str]]:
    """Every order of the operators that runs each after the writers of its inputs and its ``after``."""
    ops = doc.operators or []
    writer = {t: op.id for op in ops for t in op.outputs}
    needs = {op.id: {writer[t] for t in op.inputs if t in writer} | set(op.after) for op in ops}
    for order in itertools.permutations(op.id for op in ops):
        seen: set[str] = set()
        ok = True
        for op_id in order:
            if not needs[op_id] <= seen:
                ok = False
                break
            seen.add(op_id)
        if ok:
            yield list(order)


def best_order_bound(doc: Document, rules: Rules | None = None) -> int:
    return min(order_bound(doc, order, rules) for order in topological_orders(doc))
