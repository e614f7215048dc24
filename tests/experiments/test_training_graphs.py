"""The committed training-graph set: every file reads back as a valid document of the expected size."""

from __future__ import annotations

from experiments.training import FIRST_SET, GRAPHS, graph_names, load_graph
from experiments.training.make_graphs import by_depth
from gaplanner.documents.schema import parse_document
from gaplanner.schedule import apply_schedule


def test_every_graph_reads_back_and_the_set_stays_small() -> None:
    names = graph_names()
    assert len(names) >= 8
    assert sum(1 for n in names if n.endswith("_train")) >= 6
    assert sum(f.stat().st_size for f in GRAPHS.iterdir()) < 2 * 2**20
    for name in names:
        document = load_graph(name)
        assert document.name == name
        assert 100 <= len(document.operators or []) <= 5000, name
        assert document.inputs and document.outputs


def test_keras_order_lists_operators_by_depth_and_keeps_their_dependencies() -> None:
    doc = parse_document(
        {
            "tensors": [{"id": t, "size": 4} for t in ("x", "a", "b", "c", "d")],
            "operators": [
                {"id": "f", "inputs": ["x"], "outputs": ["a"]},
                {"id": "g", "inputs": ["a"], "outputs": ["b"]},
                {"id": "h", "inputs": ["x"], "outputs": ["c"]},
                {"id": "k", "inputs": ["b", "c"], "outputs": ["d"]},
            ],
        }
    )
    ordered = by_depth(doc)
    assert [op.id for op in ordered.operators] == ["f", "h", "g", "k"]
    assert apply_schedule(doc, [op.id for op in ordered.operators]) == ordered


def test_the_first_set_is_in_the_set() -> None:
    assert set(FIRST_SET) <= set(graph_names())
