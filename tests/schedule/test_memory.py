"""An order's bound: the fast kernel against a simulation from the rules, and against the planner's own."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.documents.rules import Rules
from gaplanner.problem.problem import build_problem
from gaplanner.schedule import apply_schedule
from gaplanner.schedule.dag import build_dag
from gaplanner.schedule.memory import LoadModel, build_blocks
from tests.schedule.graphs import graph_documents
from tests.schedule.oracle import order_profile, topological_orders
from tests.strategies import SETTINGS

RULES = st.builds(
    Rules, keep_outputs=st.booleans(), views=st.booleans(), inplace=st.sampled_from(["auto", "never"])
)


@SETTINGS
@given(graph_documents(max_ops=6), RULES, st.integers(0, 1000))
def test_every_order_bound_matches_a_simulation(doc, rules, pick) -> None:
    orders = list(topological_orders(doc))
    order = orders[pick % len(orders)]
    dag = build_dag(doc)
    index = {op_id: k for k, op_id in enumerate(dag.ids)}
    model = LoadModel(build_blocks(doc, rules))
    expected = order_profile(doc, order, rules)
    assert model.profile(np.array([index[o] for o in order])).tolist() == expected
    expected = max(expected)
    # the planner's own bound on the reordered document is the same number
    assert build_problem(apply_schedule(doc, order), rules=rules).lower_bound == expected
