"""Reordering a PyTorch program to a schedule: every order the document allows computes the same."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from gaplanner.documents.torch_import import from_exported_program  # noqa: E402
from gaplanner.documents.torch_schedule import reorder_program  # noqa: E402
from gaplanner.errors import InputError  # noqa: E402
from gaplanner.schedule.dag import build_dag  # noqa: E402


class Mutating(torch.nn.Module):
    """An in-place write over a tensor read before it, and a buffer updated then read."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(8))

    def forward(self, x):
        y = x * 2
        t = y.sum(0)
        y.add_(1)  # `t` must have read y first
        z = torch.relu(y * 3)
        self.total.add_(t)
        return z + self.total, t.max(0).values  # `max` returns its values through a getitem


def exported():
    torch.manual_seed(0)
    return torch.export.export(Mutating(), (torch.randn(4, 8),))


def run(program, x):
    module = copy.deepcopy(program).module()  # the module's buffer updates must not reach the program
    outputs = module(x)
    return [*outputs, module.total.clone()]


def orders(document, with_after: bool):
    """Every order of the document's operators that keeps its data edges (and its ``after`` edges)."""
    if not with_after:
        operators = [op.model_copy(update={"after": []}) for op in document.operators]
        document = document.model_copy(update={"operators": operators})
    dag = build_dag(document)
    needs = [set(dag.predecessors(k).tolist()) for k in range(dag.n)]

    def extend(order: list[int]):
        if len(order) == dag.n:
            yield [dag.ids[k] for k in order]
        for k in range(dag.n):
            if k not in order and needs[k] <= set(order):
                yield from extend([*order, k])

    yield from extend([])


def test_every_order_the_document_allows_computes_what_the_model_computes():
    program, x = exported(), torch.randn(4, 8)
    expected = run(program, x)
    document = from_exported_program(program)
    tried = 0
    for order in orders(document, with_after=True):
        reordered = copy.deepcopy(program)
        reorder_program(reordered, order)
        listed = [n.name for n in reordered.graph.nodes if n.name in set(order)]
        assert listed == order
        for have, want in zip(run(reordered, x), expected, strict=True):
            torch.testing.assert_close(have, want)
        tried += 1
    assert tried > 10


def test_without_the_after_edges_some_order_computes_something_else():
    program, x = exported(), torch.randn(4, 8)
    expected = run(program, x)
    document = from_exported_program(program)
    refused = wrong = 0
    for order in orders(document, with_after=False):
        reordered = copy.deepcopy(program)
        try:
            reorder_program(reordered, order)
        except InputError:  # the graph reads the buffer's new value through a node
            refused += 1
            continue
        got = run(reordered, x)
        wrong += not all(torch.allclose(a, b) for a, b in zip(got, expected, strict=True))
    assert refused > 0 and wrong > 0  # the sum read after the in-place add: silently different


def test_an_order_reading_too_early_or_naming_no_operator_is_one_clear_error():
    program = exported()
    ids = [op.id for op in from_exported_program(program).operators]
    with pytest.raises(InputError, match=r"schedule\[0\]: operator 'sum_1' reads 'mul' before it is written"):
        reorder_program(copy.deepcopy(program), [ids[1], ids[0], *ids[2:]])
    with pytest.raises(InputError, match=r"schedule\[1\]: no operator 'nope' in the program's graph"):
        reorder_program(copy.deepcopy(program), [ids[0], "nope"])
