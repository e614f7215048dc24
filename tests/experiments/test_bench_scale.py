"""experiments/bench_scale.py: a cell plans a tiny problem; a capped process is cut off with its reason."""

from __future__ import annotations

import sys

import pytest

from experiments.bench_scale import Cell, main, reason, row, run_one, run_process


@pytest.mark.parametrize("kind", ["greedy-size", "first-fit", "ga"])
def test_a_cell_of_ours_plans_a_tiny_problem(kind: str) -> None:
    result = run_one(kind, "200", 1.0)
    assert result["n"] == 200 and result["peak"] >= result["bound"] > 0 and result["seconds"] >= 0


@pytest.mark.parametrize("kind", ["omni-greedy", "omni", "omni-bnb"])
def test_an_omnimalloc_cell_is_verified(kind: str) -> None:
    pytest.importorskip("omnimalloc")
    result = run_one(kind, "200", 1.0)
    assert result["n"] == 200 and result["peak"] >= result["bound"] > 0


def test_a_cell_past_its_time_or_memory_gets_a_reason() -> None:
    slow = run_process([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5, cap_gb=4)
    assert slow["status"] == "timeout" and reason(slow, 0.5, 4) == "no plan in 0.5 s (killed)"
    big = run_process([sys.executable, "-c", "bytearray(3 * 2**30)"], timeout=30, cap_gb=1)
    assert big["status"] == "memory" and reason(big, 30, 1) == "over 1 GB (address space cap)"
    assert row("s", 10, Cell("omni-bnb", 10), {"reason": "over 1 GB (address space cap)"})[3:] == [
        "–",
        "–",
        "–",
        "over 1 GB (address space cap)",
    ]


@pytest.mark.slow
def test_the_benchmark_writes_its_table(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GAPLANNER_RESULTS", str(tmp_path / "results"))
    argv = ["--sizes", "300", "--large", "", "--search-seconds", "1", "--planners", "greedy-size,ga"]
    assert main(argv) == 0
    text = (tmp_path / "results" / "scale.md").read_text()
    assert "| synthetic 300 | 300 | greedy-size |" in text and "| ga 1 s |" in text
    assert "No MiniMalloc binary given" in text and "Load average" in text
