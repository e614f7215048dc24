"""Plans: only verified offsets become a Plan; typed fields; the JSON and CSV outputs."""

from __future__ import annotations

import numpy as np
import pytest

from gaplanner import PlanError, load_problem
from gaplanner.plans.plan import GenerationRecord, RayStats, SearchStats, make_plan
from gaplanner.problem.problem import problem_from_arrays

SEED000_OFFSETS = [0, 2048, 4096, 0, 4096, 0]  # the worked example's plan: arena 5120 bytes


def seed000_plan(**fields):
    return make_plan(load_problem("example:seed000_queue"), np.array(SEED000_OFFSETS), "test", 0.0, **fields)


def test_a_plan_has_its_peak_bound_and_origin() -> None:
    plan = seed000_plan()
    assert plan.peak == plan.lower_bound == 5120 and plan.optimal and plan.ratio == 1.0
    assert plan.bound_origin == "max load"
    assert plan.stop_reason is None and plan.trace == () and plan.search is None


def test_a_graph_problem_s_bound_is_a_clique() -> None:
    problem = load_problem("example:multicore_fig1b")
    offsets = np.cumsum(np.r_[0, problem.sizes[:-1]])  # every block apart: valid, whatever conflicts
    plan = make_plan(problem, offsets, "stacked", 0.0)
    assert plan.bound_origin == "clique" and plan.peak == problem.total_size
    assert plan.lower_bound == problem.lower_bound <= plan.peak


def test_a_proved_bound_above_the_problem_s_replaces_it_with_its_origin() -> None:
    problem = problem_from_arrays([4, 4, 4], [0, 0, 0], [1, 1, 1], alignment=8)  # max load 12, best 20
    plan = make_plan(
        problem, np.array([0, 8, 16]), "exact", 0.0, proved_bound=20, bound_origin="exact search"
    )
    assert problem.lower_bound == 12
    assert plan.lower_bound == 20 and plan.bound_origin == "exact search" and plan.optimal
    weaker = make_plan(problem, np.array([0, 8, 16]), "exact", 0.0, proved_bound=8, bound_origin="x")
    assert weaker.lower_bound == 12 and weaker.bound_origin == "max load" and not weaker.optimal


@pytest.mark.parametrize(
    ("offsets", "reason"),
    [
        ([0, 0, 4096, 0, 4096, 0], "'out0' \\[0, 2048\\) and 'out1' \\[0, 2048\\) overlap"),
        ([0, 2048, 4096, 0, 4095, 0], "'out1' \\[2048, 4096\\) and 'out4' \\[4095, 5119\\) overlap"),
    ],
)
def test_make_plan_refuses_an_invalid_placement(offsets: list[int], reason: str) -> None:
    problem = load_problem("example:seed000_queue")
    with pytest.raises(PlanError, match=reason):
        make_plan(problem, np.array(offsets), "bad", 0.0)


def test_to_dict_keeps_the_keys_of_the_cli_and_the_service() -> None:
    trace = [GenerationRecord(0, 5200, 5300.5, 48, 0.01), GenerationRecord(1, 5120, 5250.0, 96, 0.02)]
    plan = seed000_plan(
        stop_reason="lower bound reached",
        trace=trace,
        search=SearchStats(generations=1, evaluations=96, seed=7, population=48),
        ray=RayStats(islands=4, workers=2, startup_seconds=1.5, restarts=0),
    )
    data = plan.to_dict()
    assert [b["offset"] for b in data["blocks"]] == SEED000_OFFSETS
    assert data["generations"] == 1 and data["evaluations"] == 96 and data["seed"] == 7
    assert data["population"] == 48 and data["stop_reason"] == "lower bound reached"
    assert data["ray"] is True and data["islands"] == 4 and data["workers"] == 2 and data["restarts"] == 0
    assert data["trace"][1] == {"generation": 1, "best_peak": 5120, "mean_peak": 5250.0, "evaluations": 96,
                                "elapsed": 0.02}  # fmt: skip
    assert {"name", "algorithm", "peak", "lower_bound", "ratio", "optimal", "elapsed_seconds"} <= data.keys()
    baseline = seed000_plan().to_dict()
    assert not {"trace", "generations", "stop_reason", "ray"} & baseline.keys()


def test_to_csv_adds_the_offset_column() -> None:
    lines = seed000_plan().to_csv().splitlines()
    assert lines[0] == "id,lower,upper,size,offset,shares_with"  # a graph: a row per tensor
    assert [int(line.split(",")[4]) for line in lines[1:]] == SEED000_OFFSETS
    buffers = problem_from_arrays([4, 4], [0, 1], [2, 3])
    lines = make_plan(buffers, np.array([0, 4]), "t", 0.0).to_csv().splitlines()
    assert lines == ["id,lower,upper,size,offset", "0,0,2,4,0", "1,1,3,4,4"]
