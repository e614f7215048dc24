"""The layout-of-orders experiment runs end to end on one graph and writes its table."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments import layout_of_orders
from gaplanner.problem.problem import problem_from_arrays


def test_the_experiment_writes_a_row_per_graph_and_seed(tmp_path: Path) -> None:
    out = tmp_path / "layout.md"
    argv = ["--only", "inception_infer", "--seeds", "0", "1", "--time-limit", "0.5"]
    assert layout_of_orders.main([*argv, "--plan-seconds", "0.5", "--out", str(out)]) == 0
    rows = [line.split("|")[1:-1] for line in out.read_text(encoding="utf-8").splitlines()]
    rows = [[c.strip() for c in row] for row in rows if row and row[0].strip() == "inception_infer"]
    assert [row[1] for row in rows] == ["0", "1"]
    for row in rows:
        cells = dict(zip(layout_of_orders.HEADER, row, strict=True))
        assert float(cells["chosen / given"]) <= 1.0
        assert float(cells["GA arena"].strip("*")) >= 1.0  # no plan is below its bound


def test_nested_lifetimes_do_not_cross_and_staggered_ones_do() -> None:
    nested = problem_from_arrays(np.array([1, 1, 1]), np.array([0, 1, 2]), np.array([10, 9, 8]))
    staggered = problem_from_arrays(np.array([1, 1, 1]), np.array([0, 1, 2]), np.array([8, 9, 10]))
    assert layout_of_orders.shape(nested).crossing == 0
    assert layout_of_orders.shape(staggered).crossing == 3
    assert layout_of_orders.shape(nested).long_bytes == 3 / nested.lower_bound
