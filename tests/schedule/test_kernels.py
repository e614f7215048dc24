"""The order search's kernels: every move keeps a valid order, and the score it returns is that order's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gaplanner.schedule.dag import build_dag, topological_order
from gaplanner.schedule.kernels import local_search
from gaplanner.schedule.memory import LoadModel, build_blocks
from tests.schedule.graphs import graph_documents
from tests.schedule.oracle import order_bound, topological_orders
from tests.strategies import SETTINGS


@SETTINGS
@given(graph_documents(max_ops=8), st.integers(0, 2**31 - 1))
def test_local_search_moves_keep_a_valid_order_and_score_it(doc, seed) -> None:
    dag = build_dag(doc)
    model = LoadModel(build_blocks(doc))
    order = topological_order(dag)
    start = model.peak(order)
    peak, _ = local_search(
        order, 300, seed, dag.pred_ptr, dag.pred_idx, dag.succ_ptr, dag.succ_idx, model.args()
    )
    ids = [dag.ids[k] for k in order.tolist()]
    assert ids in list(topological_orders(doc))
    assert peak == order_bound(doc, ids) <= start
