"""experiments/bench_time_limits.py: a cell keeps its limit within 10 % + 1 s; the table is written."""

from __future__ import annotations

import pytest

from experiments.bench_time_limits import main, row


def test_a_cell_keeps_its_limit_within_ten_per_cent_and_a_second() -> None:
    cell = {
        "wall": 12.0,
        "cpu": 4.25,
        "status": 0,
        "error": [],
        "peak": 103,
        "bound": 100,
        "stop": "time limit",
    }
    assert row("s", 1000, "ga", 10.0, cell) == [
        "s",
        "1,000",
        "ga",
        "10",
        "12.0",
        "4.2",
        "yes",
        "1.0300",
        "time limit",
    ]
    assert row("s", 1000, "ga", 10.0, {**cell, "wall": 12.1})[6] == "no"
    failed = {"wall": 3.0, "cpu": 1.0, "status": 2, "error": ["gaplanner: error: sizes: too large"]}
    assert row("s", 1000, "ga", 10.0, failed)[7:] == ["failed (2)", "gaplanner: error: sizes: too large"]


@pytest.mark.slow
def test_the_benchmark_writes_its_table(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GAPLANNER_RESULTS", str(tmp_path / "results"))
    assert (
        main(["--benchmarks", str(tmp_path / "none"), "--sizes", "500", "--limits", "2", "--others-at", ""])
        == 0
    )
    text = (tmp_path / "results" / "time_limits.md").read_text()
    assert "| synthetic 500 | 500 | ga | 2 |" in text and "CPU (s)" in text
    assert "python -m experiments.bench_time_limits --benchmarks" in text and "Load average" in text
