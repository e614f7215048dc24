"""The pair-free benchmark's two modes: the same first-fit plan, with and without the pairs built."""

from __future__ import annotations

from experiments import bench_pair_free
from gaplanner.problem import problem as problem_module


def test_both_modes_plan_the_same_peak_and_only_one_builds_pairs(monkeypatch) -> None:
    monkeypatch.setattr(problem_module, "PAIR_ENTRIES_LIMIT", problem_module.PAIR_ENTRIES_LIMIT)  # restored
    pairs = bench_pair_free.run_one("first-fit", "pairs", 600, 2)
    free = bench_pair_free.run_one("first-fit", "pair-free", 600, 2)
    assert pairs["built"] and not free["built"]
    assert pairs["peak"] == free["peak"] and pairs["pairs"] == free["pairs"] > 0
    assert free["bound"] <= pairs["bound"] <= pairs["peak"]
