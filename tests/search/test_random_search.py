"""First-fit with random search: budgets, reproducibility, the trace, and the brute-force optimum."""

from __future__ import annotations

import time

import numpy as np
import pytest

import gaplanner.search.random_search as random_search_module
from gaplanner import load_problem
from gaplanner.deadline import Deadline
from gaplanner.errors import InputError
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.baselines import best_fit_coalescing, first_fit
from gaplanner.search.decoder import decode
from gaplanner.search.random_search import RandomSearchSettings, random_orders, random_search
from tests.oracles import brute_force_peaks


def random_problem(seed: int, n: int) -> object:
    rng = np.random.default_rng(seed)
    lower = rng.integers(0, 10, n)
    return problem_from_arrays(rng.integers(1, 10, n), lower, lower + rng.integers(1, 6, n))


def test_random_orders_are_permutations_from_the_generator() -> None:
    orders = random_orders(30, 50, np.random.default_rng(1))
    assert orders.shape == (50, 30) and orders.dtype == np.int64
    assert all(sorted(row) == list(range(30)) for row in orders)
    assert len({tuple(row) for row in orders}) == 50
    again = random_orders(30, 50, np.random.default_rng(1))
    assert np.array_equal(orders, again)


def test_spends_exactly_the_evaluation_budget_and_traces_it() -> None:
    problem = random_problem(3, 60)
    plan = random_search(problem, RandomSearchSettings(100, batch=32, seed=5, stop_at_lower_bound=False))
    trace = plan.trace
    assert [r.evaluations for r in trace] == [32, 64, 96, 100]
    assert [r.generation for r in trace] == [0, 1, 2, 3]
    assert plan.search.evaluations == 100 and plan.stop_reason == "evaluation limit"
    best = [r.best_peak for r in trace]
    assert best == sorted(best, reverse=True)
    assert all(r.mean_peak >= r.best_peak for r in trace)
    assert best[-1] == plan.peak
    elapsed = [r.elapsed for r in trace]
    assert elapsed == sorted(elapsed) and plan.elapsed >= elapsed[-1]


def test_the_plan_is_the_first_fit_decode_of_a_drawn_order() -> None:
    problem = random_problem(8, 40)
    plan = random_search(problem, RandomSearchSettings(64, batch=64, seed=2, stop_at_lower_bound=False))
    orders = random_orders(problem.n, 64, np.random.default_rng(2))
    peaks = [int((decode(problem, order) + problem.sizes).max()) for order in orders]
    assert plan.peak == min(peaks)
    assert plan.trace[0].mean_peak == pytest.approx(np.mean(peaks))


def test_same_seed_same_trace_other_seed_other_draws() -> None:
    problem = random_problem(4, 80)
    first = random_search(problem, RandomSearchSettings(200, seed=9, stop_at_lower_bound=False))
    second = random_search(problem, RandomSearchSettings(200, seed=9, stop_at_lower_bound=False))
    other = random_search(problem, RandomSearchSettings(200, seed=10, stop_at_lower_bound=False))
    peaks = [r.mean_peak for r in first.trace]
    assert peaks == [r.mean_peak for r in second.trace]
    assert np.array_equal(first.offsets, second.offsets)
    assert peaks != [r.mean_peak for r in other.trace]


def test_finds_the_brute_force_optimum_on_small_instances() -> None:
    for seed in range(6):
        problem = random_problem(seed, 5)
        best, _ = brute_force_peaks(problem)
        plan = random_search(
            problem, RandomSearchSettings(2000, seed=seed)
        )  # 120 orders, each missed with p < 1e-7
        assert plan.peak == best, f"instance {seed}"


def test_stops_at_the_lower_bound_and_on_time() -> None:
    problem = load_problem("example:seed000_queue")
    plan = random_search(problem, RandomSearchSettings(10_000, seed=0))
    assert plan.optimal and plan.stop_reason == "lower bound reached"
    assert plan.search.evaluations < 10_000
    timed = random_search(
        random_problem(1, 50), RandomSearchSettings(None, time_limit=0.05, stop_at_lower_bound=False)
    )
    assert timed.stop_reason == "time limit"


def test_with_no_time_for_a_random_order_the_cheapest_starting_plan_is_kept() -> None:
    problem = random_problem(2, 60)
    passed = Deadline(1.0, started=time.perf_counter() - 2.0)
    plan = random_search(problem, RandomSearchSettings(1000, seed=3), passed)
    assert plan.stop_reason == "time limit: no random order fits the budget; best-fit-coalescing's plan kept"
    assert np.array_equal(plan.offsets, best_fit_coalescing(problem).offsets)
    assert plan.algorithm == "random-search" and plan.search.evaluations == 1 and len(plan.trace) == 1


def test_a_random_order_is_decoded_only_when_its_estimate_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = random_problem(5, 60)
    monkeypatch.setattr(random_search_module, "decode_estimate", lambda problem: 1.0)  # 2.5 s a random order
    settings = RandomSearchSettings(96, seed=1, stop_at_lower_bound=False)
    short = random_search(problem, settings, Deadline(2.0))
    assert short.stop_reason == "time limit: no random order fits the budget; first-fit's plan kept"
    assert np.array_equal(short.offsets, first_fit(problem).offsets)
    searched = random_search(problem, settings, Deadline(30.0))
    assert searched.stop_reason == "evaluation limit" and searched.search.evaluations == 96


def test_on_a_split_graph_the_plan_is_the_best_decode_of_the_drawn_orders() -> None:
    problem = load_problem("zoo:googlenet@2")
    plan = random_search(problem, RandomSearchSettings(96, batch=48, seed=0, stop_at_lower_bound=False))
    rng = np.random.default_rng(0)
    orders = np.concatenate([random_orders(problem.n, 48, rng) for _ in range(2)])
    peaks = [int((decode(problem, order) + problem.sizes).max()) for order in orders]
    assert plan.peak == min(peaks) >= problem.lower_bound


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (dict(evaluations=None), None),
        (dict(evaluations=0), "evaluations"),
        (dict(evaluations=10, batch=0), "batch"),
        (dict(evaluations=None, time_limit=float("nan")), "time_limit"),
        (dict(evaluations=None, time_limit=-1.0), "time_limit"),
    ],
)
def test_bad_budgets_are_refused_naming_the_field(bad: dict, field: str | None) -> None:
    with pytest.raises(InputError) as refused:
        RandomSearchSettings(**bad)
    assert refused.value.field == field
