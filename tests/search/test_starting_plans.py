"""The heaviest instant's blocks first: a gapless stack there, a plan every search starts from."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given

import gaplanner
import gaplanner.search.starting_plans as starting_plans_module
from experiments.synthetic import synthetic_problem
from gaplanner import GASettings, find_violation, load_problem, native, solve
from gaplanner.deadline import Deadline
from gaplanner.problem.bounds import max_load
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.baselines import baseline_plans
from gaplanner.search.exact import ExactSettings
from gaplanner.search.starting_plans import (
    REPAIRED,
    heaviest_instant_blocks,
    heaviest_instant_first,
    starting_plans,
)
from tests.strategies import SETTINGS, interval_problems

# (start, end, size): every baseline leaves a gap at time 2 or 4 (peaks 10, 9, 9); the max load is 8.
SMALL = [(5, 6, 4), (2, 3, 2), (2, 5, 3), (4, 6, 3), (0, 5, 2)]


def _small() -> gaplanner.Problem:
    lower, upper, sizes = (np.array(column) for column in zip(*SMALL, strict=True))
    return problem_from_arrays(sizes, lower, upper)


@SETTINGS
@given(interval_problems(max_blocks=8, alignment=1))
def test_the_heaviest_instant_costs_exactly_its_load(problem) -> None:
    plan = heaviest_instant_first(problem)
    first = heaviest_instant_blocks(problem)
    assert int(problem.sizes[first].sum()) == max_load(problem.lower, problem.upper, problem.sizes)
    assert int((plan.offsets[first] + problem.sizes[first]).max()) == int(problem.sizes[first].sum())
    assert find_violation(problem, plan.offsets, plan.peak) is None


def test_it_meets_the_bound_where_every_baseline_leaves_a_gap() -> None:
    problem = _small()
    assert problem.lower_bound == 8
    assert sorted(plan.peak for plan in baseline_plans(problem).values()) == [9, 9, 10]
    assert heaviest_instant_first(problem).peak == 8


def test_the_ga_returns_a_starting_plan_at_the_bound_without_a_generation() -> None:
    plan = solve(_small(), "ga", GASettings(time_limit=5.0, exact_share=0))
    assert plan.peak == 8 and plan.optimal
    assert plan.stop_reason == "lower bound reached; heaviest-instant-first's plan kept"
    assert plan.search is not None and plan.search.generations == 0


def test_with_no_time_left_no_plan_is_repaired_or_verified(monkeypatch) -> None:
    problem = synthetic_problem(2000, seed=0)  # every starting plan misses the bound (test_window_repair)
    made = []
    make_plan = starting_plans_module.make_plan
    monkeypatch.setattr(
        starting_plans_module, "make_plan", lambda *args, **kw: made.append(args[2]) or make_plan(*args, **kw)
    )
    plans = starting_plans(problem, Deadline(1.0, started=time.perf_counter() - 2.0))
    assert list(plans) == ["best-fit-coalescing"] == made  # the cheapest alone, verified once, unrepaired
    assert REPAIRED in starting_plans(problem) and REPAIRED in made  # without a deadline, repaired


def _idle(self, deadline, on_event):
    time.sleep(0.005)
    return True


def test_beside_the_exact_search_the_gas_plan_at_the_bound_ends_both(monkeypatch) -> None:
    """The default ga, GA and exact probes side by side: the GA ends at once with the heaviest instant's
    plan, which it gives the probes as it ends; they hold no plan of their own at the bound here
    (idle, started from first-fit's and greedy-size's plans alone), so only that ends them."""
    from gaplanner.search import side_by_side as hybrid
    from gaplanner.search.exact import usable_cores
    from gaplanner.search.exact.parts_search import PartsSearch
    from gaplanner.search.exact.search import incumbent_plan

    if usable_cores() < 2:
        pytest.skip("side by side needs two cores")

    def without_starting_plans(problem, started, seconds):
        return PartsSearch(problem, incumbent_plan(problem), started, seconds=seconds)

    monkeypatch.setattr(PartsSearch, "_round", _idle)

    def start(cls, problem, started, seconds):
        return cls(problem, without_starting_plans(problem, started, seconds))

    monkeypatch.setattr(hybrid.ExactSearch, "start", classmethod(start))
    plan = solve(_small(), "ga", GASettings(time_limit=30.0))
    assert plan.peak == 8 and plan.optimal and plan.elapsed < 10.0


def test_in_turns_the_exact_turn_ends_at_once_on_a_starting_plan_at_the_bound(monkeypatch) -> None:
    from gaplanner.search.exact.parts_search import PartsSearch

    monkeypatch.setattr(PartsSearch, "_round", _idle)
    plan = solve(_small(), "ga", GASettings(time_limit=30.0, exact_share=0.5))
    assert plan.peak == 8 and plan.optimal and plan.elapsed < 10.0


def test_the_islands_start_no_ray_when_a_starting_plan_meets_the_bound() -> None:
    ray = pytest.importorskip("ray")
    from gaplanner.search.distributed import run_islands

    plan = run_islands(_small(), GASettings(time_limit=30.0), workers=2)
    assert plan.peak == 8 and plan.optimal and not ray.is_initialized()


def test_a_training_graph_is_planned_at_its_bound_from_the_start(benchmarks) -> None:
    """iopddl_S: every baseline is above the max load (best-fit-coalescing by 0.44 %); this plan is not."""
    problem = load_problem(benchmarks / "large" / "iopddl_S_1.csv")
    assert min(plan.peak for plan in baseline_plans(problem).values()) > problem.lower_bound
    plans = starting_plans(problem)
    assert plans["heaviest-instant-first"].peak == problem.lower_bound
    assert "greedy-size" not in plans  # made after the heaviest instant's, which is already at the bound
    plan = solve(problem, "exact", ExactSettings(time_limit=30.0, threads=1))
    assert plan.optimal and plan.stop_reason == "optimal" and plan.elapsed < 30.0


def _no_search(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fail on any GA island or exact search started; the names of the starting plans verified."""
    from gaplanner.search import side_by_side
    from gaplanner.search.ga import loop

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("a search was started")

    monkeypatch.setattr(loop, "make_islands", started)
    monkeypatch.setattr(side_by_side.ExactSearch, "start", started)
    verified: list[str] = []
    make_plan = starting_plans_module.make_plan
    monkeypatch.setattr(
        starting_plans_module,
        "make_plan",
        lambda *args, **kw: verified.append(args[2]) or make_plan(*args, **kw),
    )
    return verified


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (None, "lower bound reached; heaviest-instant-first's plan kept"),  # the GA alone
        (GASettings(), "optimal"),  # the front doors' default: the GA and the exact probes side by side
    ],
)
def test_at_the_bound_the_default_search_verifies_the_plan_kept_alone_and_starts_no_search(
    monkeypatch, settings, reason
) -> None:
    """GoogLeNet: first-fit's and best-fit-coalescing's plans miss the bound, the heaviest instant's
    meets it; those two are made but never verified, and no GA or exact search starts."""
    problem = load_problem("zoo:googlenet")
    verified = _no_search(monkeypatch)
    plan = solve(problem, "ga", settings)
    assert plan.optimal and plan.peak == problem.lower_bound and plan.stop_reason == reason
    assert verified == ["heaviest-instant-first"]
    assert plan.search is not None and plan.search.generations == 0 and len(plan.trace) == 1
    assert find_violation(problem, plan.offsets, plan.peak) is None


def test_a_plan_at_the_bound_is_verified_before_it_is_kept(monkeypatch) -> None:
    """Offsets that claim the bound but overlap are refused by the verifier, not returned."""
    monkeypatch.setitem(starting_plans_module.OFFSETS, "first-fit", lambda p: np.zeros(p.n, np.int64))
    with pytest.raises(gaplanner.PlanError):
        solve(_small(), "ga")


def test_on_a_conflict_graph_a_decode_at_the_bound_comes_before_best_fit_coalescing(monkeypatch) -> None:
    """Over a multi-core graph best-fit-coalescing scans each block's conflicts: it is made last, and
    here never, as the heaviest instant's plan (made before it) meets the bound."""
    problem = load_problem("zoo:inceptionv3@2")
    verified = _no_search(monkeypatch)
    plans = starting_plans(problem)
    assert list(plans) == verified == ["heaviest-instant-first"]
    assert plans["heaviest-instant-first"].peak == problem.lower_bound
    assert solve(problem, "ga").optimal


def test_starting_plans_leave_the_kernels_threads_as_they_were(monkeypatch) -> None:
    threads = native.threads()
    starting_plans(_small())
    assert native.threads() == threads

    def failing(problem: gaplanner.Problem) -> np.ndarray:
        assert native.threads() == 1  # one order: the parallel decode starts no other thread
        raise RuntimeError("maker failed")

    monkeypatch.setitem(starting_plans_module.OFFSETS, "first-fit", failing)
    with pytest.raises(RuntimeError, match="maker failed"):
        starting_plans(_small())
    assert native.threads() == threads
