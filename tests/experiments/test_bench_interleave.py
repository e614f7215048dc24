"""experiments/bench_interleave.py: two zoo models interleaved, measured as the table reports them."""

from __future__ import annotations

from pathlib import Path

from experiments.bench_interleave import cells, measure
from gaplanner import build_problem
from gaplanner.documents.zoo import zoo_document


def test_without_shared_tensors_the_search_meets_the_larger_models_own_bound(tmp_path: Path) -> None:
    pair = ("zoo:mobilenetv1", "zoo:googlenet")
    row = measure(pair, tmp_path, time_limit=5.0, plan_seconds=0.5)
    alone = max(build_problem(zoo_document(name)).lower_bound for name in pair)
    r = row.result
    assert row.one_after_other == r.chosen_bound == r.order_free_bound == alone and r.optimal
    assert r.chosen_bound < r.given_bound  # round robin keeps both models' tensors live at once
    assert row.arena >= r.chosen_bound
    assert cells(row)[:3] == ["zoo:mobilenetv1 + zoo:googlenet", row.operators, r.given_bound]
