"""The search across memories: the GA's loop on islands decoded across memories, its operators, its plans."""

from __future__ import annotations

import time

import numpy as np
import pytest

from gaplanner import GASettings, Plan, load_problem
from gaplanner.deadline import Deadline
from gaplanner.errors import DoesNotFit
from gaplanner.plans.verify import find_memory_violation
from gaplanner.problem.loading import problem_from_json
from gaplanner.search.memories.baselines import seed_orders, spill_order
from gaplanner.search.memories.decoder import MemoryDecoder
from gaplanner.search.memories.ga import memory_ga
from gaplanner.search.memories.island import demote, make_memory_islands, promote, swap, to_front
from gaplanner.solve import solve

BUDGET = GASettings(
    population=12, elite=2, islands=2, generations=10, time_limit=None, stall_generations=None
)


def random_memories(seed: int, blocks: int = 30, sram: int = 96, dram: int | None = None):
    rng = np.random.default_rng(seed)
    buffers = []
    for k in range(blocks):
        lower = int(rng.integers(0, 20))
        buffers.append(
            {
                "id": f"b{k}",
                "lower": lower,
                "upper": lower + int(rng.integers(1, 8)),
                "size": int(rng.integers(1, 48)),
            }
        )
    memories = [
        {"id": "sram", "capacity": sram},
        {"id": "dram", "capacity": dram, "read_cost": 10, "write_cost": 10},
    ]
    return problem_from_json({"buffers": buffers, "memories": memories})


@pytest.mark.parametrize("operator", [promote, demote, swap])
def test_the_moves_between_memories_keep_an_order_a_permutation(operator) -> None:
    rng = np.random.default_rng(1)
    order, memory_of = rng.permutation(20), rng.integers(0, 2, 20)
    for _ in range(50):
        order = operator(order, memory_of, rng)
        assert sorted(order.tolist()) == list(range(20))


def test_a_promotion_moves_a_slow_block_ahead() -> None:
    order, memory_of = np.arange(6), np.array([0, 0, 0, 0, 0, 1])  # only block 5 is slow
    moved = promote(order, memory_of, np.random.default_rng(0))
    assert moved.tolist().index(5) <= 5 and sorted(moved.tolist()) == list(range(6))
    assert to_front(order, np.array([5, 2])).tolist() == [[5, 0, 1, 2, 3, 4], [2, 0, 1, 3, 4, 5]]


def test_an_island_across_memories_never_loses_its_best() -> None:
    problem = random_memories(3)
    islands = make_memory_islands(problem, BUDGET, MemoryDecoder.for_problem(problem), seed_orders(problem))
    island = islands[0]
    best = []
    for _ in range(8):
        i = island.best_index
        best.append((island.scores.costs[i], island.scores.peaks[i]))
        island.step()
    assert best == sorted(best, reverse=True)  # elitism: the best (cost, peak) only improves
    assert island.costs is island.scores.costs and len(island.population) == BUDGET.population


def test_the_ga_across_memories_runs_the_ga_s_loop_with_its_trace_and_progress() -> None:
    problem = random_memories(5)
    seen = []
    plan = solve(problem, "ga", BUDGET, on_progress=seen.append)
    assert isinstance(plan, Plan) and plan.memory_of is not None
    assert find_memory_violation(problem, plan.memory_of, plan.offsets) is None
    assert plan.stop_reason == "generation limit" and [r.generation for r in plan.trace] == list(range(11))
    assert seen == list(plan.trace)  # the progress callback saw every record
    costs = [r.best_cost for r in plan.trace]
    assert costs == sorted(costs, reverse=True) and plan.cost <= costs[-1]  # the last polish only helps
    assert plan.search is not None and plan.search.generations == 10
    assert plan.search.evaluations >= plan.trace[-1].evaluations
    assert plan.cost <= solve(problem, "spill-greedy").cost  # the spill order is in its first generation


def test_the_same_seed_gives_the_same_plan_across_memories() -> None:
    problem = random_memories(8)
    first, second = memory_ga(problem, BUDGET), memory_ga(problem, BUDGET)
    assert (first.cost, first.offsets.tolist(), first.memory_of.tolist()) == (
        second.cost, second.offsets.tolist(), second.memory_of.tolist()
    )  # fmt: skip


def test_the_search_stops_at_the_cost_bound() -> None:
    problem = load_problem("example:npu_dsp")  # every block fits its cheapest memory: the bound is met
    plan = memory_ga(problem, BUDGET)
    assert plan.optimal and plan.cost == plan.cost_lower_bound
    assert plan.stop_reason == "lower bound reached" and len(plan.trace) == 1


def test_a_stop_request_ends_the_search_with_its_best_plan() -> None:
    problem = random_memories(11)
    endless = GASettings(
        population=8, elite=1, islands=1, time_limit=None, stall_generations=None, generations=10**6
    )
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 3

    plan = memory_ga(problem, endless, should_stop=stop)
    assert plan.stop_reason == "stopped by request" and len(plan.trace) == 4


def test_does_it_fit_across_memories_reports_progress_too() -> None:
    from gaplanner.solve import plan_input

    problem = random_memories(13, dram=10**6)  # both memories have a capacity: a does-it-fit question
    seen = []
    planned = plan_input(problem, "ga", BUDGET, on_progress=seen.append)
    assert planned.fit is not None and planned.fits and planned.plan is not None
    assert seen and seen == list(planned.plan.trace) and all(r.best_cost is not None for r in seen)


def test_when_no_generation_fits_the_time_left_the_spill_plan_is_kept() -> None:
    problem = random_memories(17, blocks=40)
    passed = Deadline(1.0, started=time.perf_counter() - 2.0)
    plan = memory_ga(problem, BUDGET, deadline=passed)
    assert plan.stop_reason == "time limit: no generation fits the budget; spill-greedy's plan kept"
    spill = solve(problem, "spill-greedy")
    assert np.array_equal(plan.offsets, spill.offsets) and np.array_equal(plan.memory_of, spill.memory_of)
    assert plan.cost == spill.cost and len(plan.trace) == 1 and plan.trace[0].best_cost == plan.cost
    assert find_memory_violation(problem, plan.memory_of, plan.offsets) is None


def test_with_no_time_for_a_generation_a_spill_order_that_fails_is_no_proof() -> None:
    problem = random_memories(17, blocks=40, sram=48, dram=48)  # the spill order leaves blocks out
    passed = Deadline(1.0, started=time.perf_counter() - 2.0)
    with pytest.raises(DoesNotFit, match="a longer time limit may find a placement"):
        memory_ga(problem, BUDGET, deadline=passed)


def test_memories_are_filled_by_saving_only_when_the_walk_fits_the_time_left() -> None:
    problem = random_memories(18, blocks=40)
    every = seed_orders(problem)
    passed = Deadline(1.0, started=time.perf_counter() - 2.0)
    sorted_only = seed_orders(problem, passed)
    assert len(every) == 7 and len(sorted_only) == 4
    assert np.array_equal(sorted_only[0], spill_order(problem)) and np.array_equal(every[0], sorted_only[0])
    assert all(np.array_equal(a, b) for a, b in zip(every[-3:], sorted_only[1:], strict=True))
