"""The at-the-bound benchmark runs end to end on small inputs and writes its own table."""

from __future__ import annotations

from pathlib import Path

from experiments import bench_at_bound


def test_the_bench_times_inputs_at_their_bound_and_lists_the_others(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GAPLANNER_RESULTS", str(tmp_path / "results"))
    argv = ["--inputs", "example:seed000_queue", "example:sram_dram", "--models", "--calls", "2"]
    assert bench_at_bound.main(argv) == 0
    report = (tmp_path / "results" / "at-bound.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in report.splitlines() if line.startswith("| `")]
    assert [row[0].strip() for row in rows] == ["`example:seed000_queue`"]
    assert rows[0][2].strip() == "first-fit"  # the plan kept, at the bound
    assert all(float(cell) > 0 for cell in rows[0][3:])
    assert "example:sram_dram: no starting plan meets the bound (memories)" in report
    assert "python -m experiments.bench_at_bound --inputs example:seed000_queue" in report
    assert "load average" in report
