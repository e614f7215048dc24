"""The order benchmark runs end to end on one graph and writes its table and summary."""

from __future__ import annotations

from pathlib import Path

from experiments import bench_schedule
from experiments.naive_order_search import naive_order_search
from experiments.training import load_graph


def test_the_bench_writes_a_row_per_graph_and_the_targets_summary(tmp_path: Path) -> None:
    out = tmp_path / "schedule.md"
    argv = ["--only", "randwire_infer", "--time-limit", "0.5", "--plan-seconds", "0.5", "--out", str(out)]
    assert bench_schedule.main(argv) == 0
    report = out.read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in report.splitlines() if line.startswith("| randwire")]
    assert len(rows) == 1
    cells = dict(zip(bench_schedule.HEADER, (c.strip() for c in rows[0]), strict=True))
    chosen = float(cells["search (chosen)"].strip("*"))
    assert float(cells["order-free bound"]) <= chosen <= float(cells["naive local search"]) <= 1.0
    assert chosen <= min(float(cells[name]) for name in bench_schedule.COMPILER_ORDERS)
    assert float(cells["planned arena"]) >= chosen
    assert "Geometric mean of planned arena / given order's bound over the 1 graphs" in report
    assert "python -m experiments.bench_schedule --only randwire_infer" in report


def test_naive_search_never_returns_a_bound_above_its_start() -> None:
    result = naive_order_search(load_graph("nasnet_infer"), seconds=0.3, seed=1)
    assert result.bound <= result.start_bound
    assert result.evaluations > 0
