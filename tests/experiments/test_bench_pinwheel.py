"""The pinwheel benchmark runs end to end on small instances and writes its own table."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import bench_pinwheel

pytest.importorskip("omnimalloc.benchmark.sources", reason="omnimalloc (the 'compare' extra)")


def test_the_bench_writes_a_row_per_family_and_size(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GAPLANNER_RESULTS", str(tmp_path / "results"))
    assert bench_pinwheel.main(["--time-limit", "0.5", "--seeds", "1", "--sizes", "9"]) == 0
    report = (tmp_path / "results" / "pinwheel.md").read_text(encoding="utf-8")
    rows = [
        line.split("|")[1:-1]
        for line in report.splitlines()
        if line.startswith(("| pinwheel |", "| tiling |"))
    ]
    assert [row[0].strip() for row in rows] == ["pinwheel", "tiling"]
    for row in rows:  # each solver's cell: peak / optimum first, never below the optimum
        assert all(float(cell.split("·")[0]) >= 1.0 for cell in row[2:])
    assert "python -m experiments.bench_pinwheel --time-limit 0.5 --seeds 1 --sizes 9" in report
    assert "load average" in report
