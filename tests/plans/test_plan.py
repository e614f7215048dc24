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


# --- Plans across memories: a plan whose blocks carry a memory -----------------------------------


def two_memories():
    """Blocks a and b live at once, c after them; an SRAM of 8 bytes (1 per byte) in front of DRAM (10)."""
    from gaplanner.problem.loading import problem_from_json

    buffers = [
        {"id": "a", "lower": 0, "upper": 2, "size": 8},
        {"id": "b", "lower": 1, "upper": 3, "size": 4},
        {"id": "c", "lower": 3, "upper": 4, "size": 8},
    ]
    memories = [
        {"id": "sram", "capacity": 8, "read_cost": 1, "write_cost": 1},
        {"id": "dram", "read_cost": 10, "write_cost": 10},
    ]
    return problem_from_json({"buffers": buffers, "memories": memories})


def test_a_plan_across_memories_is_a_plan_with_each_block_s_memory() -> None:
    problem = two_memories()
    plan = make_plan(problem, np.array([0, 0, 0]), "test", 0.0, memory_of=np.array([0, 1, 0]))
    assert plan.peaks.tolist() == [8, 4] and plan.peak == 12  # the peaks summed
    assert plan.lower_bound == problem.lower_bound == 12 and plan.ratio == 1.0  # a bound on that sum
    # written once, read once: 2 bytes of access per byte; b in DRAM costs 10 per byte, the rest 1
    assert plan.cost == 2 * (8 + 8) + 20 * 4 and plan.cost_lower_bound == 2 * (8 + 4 + 8)
    assert not plan.optimal  # about the cost, above its bound
    data = plan.to_dict()
    assert [(b["id"], b["memory"], b["offset"]) for b in data["blocks"]] == [
        ("a", "sram", 0), ("b", "dram", 0), ("c", "sram", 0),
    ]  # fmt: skip
    assert (data["cost"], data["cost_lower_bound"], data["lower_bound"]) == (plan.cost, 40.0, 12)
    assert [(m["id"], m["peak"], m["blocks"]) for m in data["memories"]] == [("sram", 8, 2), ("dram", 4, 1)]
    assert plan.to_csv().splitlines()[:2] == ["id,lower,upper,size,memory,offset", "a,0,2,8,sram,0"]


def test_one_arena_s_plan_has_no_memory_fields() -> None:
    plan, data = seed000_plan(), seed000_plan().to_dict()
    assert plan.memory_of is None and plan.peaks is None and plan.cost is None
    assert plan.cost_lower_bound is None and plan.memory_summary() == []
    assert not {"cost", "cost_lower_bound", "memories"} & set(data)
    assert "memory" not in data["blocks"][0]


@pytest.mark.parametrize(
    ("memory_of", "offsets", "words"),
    [
        ([0, 0, 0], [0, 8, 0], "beyond memory 'sram'"),  # b does not fit in the 8-byte SRAM
        ([1, 1, 0], [0, 4, 0], "overlap in memory 'dram'"),  # a and b live at once over bytes 4..8
    ],
)
def test_make_plan_verifies_every_memory(memory_of, offsets, words) -> None:
    memories = None if memory_of is None else np.array(memory_of)
    with pytest.raises(PlanError, match=words):
        make_plan(two_memories(), np.array(offsets), "test", 0.0, memory_of=memories)


def test_memories_for_a_problem_without_them_are_refused() -> None:
    with pytest.raises(PlanError, match="memories the problem does not list"):
        seed000_plan(memory_of=np.zeros(6, np.int64))


def test_a_trace_record_across_memories_carries_its_cost() -> None:
    assert "best_cost" not in GenerationRecord(0, 8, 8.0, 4, 0.1).to_dict()
    assert GenerationRecord(0, 8, 8.0, 4, 0.1, best_cost=3.5).to_dict()["best_cost"] == 3.5
