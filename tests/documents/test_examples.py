"""Known answers: seed 000's worked example and the patent's Figure 1b multi-core graph."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gaplanner import load_problem, verify
from gaplanner.documents.schema import document_json_schema
from gaplanner.problem.loading import example_names
from gaplanner.search.baselines import BASELINES, baseline_plans, best_fit_coalescing
from tests.oracles import conflict_pairs

ROOT = Path(__file__).parents[2]


def test_seed000_best_fit_coalescing_matches_the_worked_example() -> None:
    problem = load_problem("example:seed000_queue")
    assert problem.lower.tolist() == [0, 1, 2, 3, 4, 5]
    # The worked example's inclusive lifetimes; the model's output (out5) is then read by the caller
    # at position 6, after the last operator, so it is kept one step longer than the example's (5, 5).
    assert (problem.upper - 1).tolist() == [2, 4, 3, 4, 5, 6]
    plan = best_fit_coalescing(problem)
    assert plan.offsets.tolist() == [0, 2048, 4096, 0, 4096, 0]
    assert plan.peak == 5120
    assert problem.lower_bound == 5120 and plan.optimal


def test_seed000_as_buffer_list_gives_the_same_plan() -> None:
    problem = load_problem("example:seed000_queue")
    buffers = {
        "buffers": [
            {"id": i, "lower": int(lo), "upper": int(up), "size": int(s)}
            for i, lo, up, s in zip(problem.ids, problem.lower, problem.upper, problem.sizes, strict=True)
        ]
    }
    from gaplanner.problem.loading import problem_from_json

    plan = best_fit_coalescing(problem_from_json(buffers))
    assert plan.offsets.tolist() == [0, 2048, 4096, 0, 4096, 0]


def test_fig1b_conflicts_within_and_across_cores() -> None:
    problem = load_problem("example:multicore_fig1b")
    assert not problem.interval_conflicts
    pairs = conflict_pairs(problem)
    # Same core: D00 is still to be loaded by A.conv when D01 is stored.
    assert frozenset(("D00", "D01")) in pairs
    # Across cores: D20 (core A) and D21 (core B) both live until A.combine.
    assert frozenset(("D20", "D21")) in pairs
    # Concurrent on different cores: nothing orders D10's and D11's lives.
    assert frozenset(("D10", "D11")) in pairs
    # May share: D0's only reader (A.split) runs before D10's writer (A.conv) on core A.
    assert frozenset(("D0", "D10")) not in pairs
    # May share: D10's reader A.pool runs before A.combine writes D2.
    assert frozenset(("D10", "D2")) not in pairs
    # An operator's output never shares with its inputs.
    assert frozenset(("D20", "D2")) in pairs


def test_fig1b_parts_add_up_and_every_baseline_verifies() -> None:
    problem = load_problem("example:multicore_fig1b")
    size = dict(zip(problem.ids, problem.sizes.tolist(), strict=True))
    assert size["D00"] + size["D01"] == size["D0"]
    assert size["D20"] + size["D21"] == size["D2"]
    for baseline in BASELINES.values():
        plan = baseline(problem)
        verify(problem, plan.offsets, plan.peak)
        assert problem.lower_bound <= plan.peak <= problem.total_size
        assert np.all(plan.offsets % 64 == 0)


@pytest.mark.parametrize("name", example_names())
def test_every_example_plans(name: str) -> None:
    problem = load_problem(f"example:{name}")
    for plan in baseline_plans(problem).values():  # best-fit-coalescing cannot keep pinned blocks
        assert plan.peak >= problem.lower_bound


def test_exported_schema_is_current() -> None:
    exported = json.loads((ROOT / "gaplanner" / "documents" / "schema" / "document.schema.json").read_text())
    assert exported == document_json_schema(), (
        "run: gaplanner schema -o gaplanner/documents/schema/document.schema.json"
    )


def test_minimalloc_example_csv_matches_its_json_twin(benchmarks: Path) -> None:
    from_csv = load_problem(benchmarks / "minimalloc" / "input.12.csv")
    from_json = load_problem("example:buffers_input12")
    assert from_csv.lower_bound == from_json.lower_bound == 12
    assert conflict_pairs(from_csv) == conflict_pairs(from_json)
