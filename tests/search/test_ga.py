"""The genetic search: reproducibility, never worse than the baselines, optimal on small instances."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaplanner import find_violation, load_problem
from gaplanner.errors import InputError
from gaplanner.problem.loading import problem_from_json
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.baselines import BASELINES
from gaplanner.search.ga import (
    GENERATION,
    LOCAL_SEARCH,
    GASettings,
    Pacing,
    most_scored_per_generation,
    run_ga,
)
from gaplanner.search.ga.budget import GENERATION_MARGIN
from service.testing import unreachable_bound_document
from tests.oracles import brute_force_peaks

QUICK = GASettings(population=16, generations=40, time_limit=None, stall_generations=None)


def random_problem(seed: int, n: int) -> object:
    rng = np.random.default_rng(seed)
    lower = rng.integers(0, 10, n)
    return problem_from_arrays(rng.integers(1, 10, n), lower, lower + rng.integers(1, 6, n))


def test_same_seed_same_plan_also_when_run_concurrently() -> None:
    problem = random_problem(3, 40)
    settings = GASettings(population=12, generations=30, time_limit=None, seed=7)
    alone = run_ga(problem, settings)
    results: dict[int, np.ndarray] = {}

    def search(slot: int) -> None:
        results[slot] = run_ga(problem, settings).offsets

    threads = [threading.Thread(target=search, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for offsets in results.values():
        assert np.array_equal(offsets, alone.offsets)


def test_same_seed_same_trace_of_peaks() -> None:
    problem = random_problem(4, 60)
    settings = GASettings(population=12, generations=25, time_limit=None, seed=1, islands=2)
    first = [(r.best_peak, r.mean_peak, r.evaluations) for r in run_ga(problem, settings).trace]
    second = [(r.best_peak, r.mean_peak, r.evaluations) for r in run_ga(problem, settings).trace]
    assert first == second


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 30))
@pytest.mark.slow
def test_never_worse_than_the_best_baseline(seed: int, n: int) -> None:
    problem = random_problem(seed, n)
    plan = run_ga(problem, GASettings(population=8, generations=3, time_limit=None, seed=seed))
    assert plan.peak <= min(baseline(problem).peak for baseline in BASELINES.values())
    assert plan.peak >= problem.lower_bound


@pytest.mark.slow
def test_finds_the_brute_force_optimum_on_small_instances() -> None:
    for seed in range(12):
        problem = random_problem(seed, 6)
        best, _ = brute_force_peaks(problem)
        plan = run_ga(problem, GASettings(population=16, generations=30, time_limit=None, seed=seed))
        assert plan.peak == best, f"instance {seed}"


def test_stops_at_the_lower_bound_and_says_optimal() -> None:
    problem = load_problem("example:seed000_queue")
    plan = run_ga(problem, GASettings(generations=1000, time_limit=None))
    assert plan.peak == 5120 and plan.optimal
    assert plan.stop_reason == "lower bound reached; first-fit's plan kept"
    assert plan.search.generations == 0  # a baseline's plan already meets the bound


@pytest.mark.slow
def test_trace_is_a_convergence_curve() -> None:
    problem = load_problem("zoo:densenet121@2")  # the baselines' plans are 16% above the bound
    plan = run_ga(problem, QUICK)
    trace = plan.trace
    assert len(trace) == plan.search.generations + 1 > 2
    best = [r.best_peak for r in trace]
    assert best == sorted(best, reverse=True) and best[0] > best[-1]  # elitism: never worse
    assert all(r.mean_peak >= r.best_peak for r in trace)
    evaluations = [r.evaluations for r in trace]
    assert evaluations == sorted(evaluations) and evaluations[0] == QUICK.population * QUICK.islands
    # The first generation's time is estimated from this bound (migrants are scored on arrival).
    bound = QUICK.islands * (most_scored_per_generation(QUICK) + QUICK.migrants)
    assert max(np.diff(evaluations)) <= bound
    assert best[-1] == plan.peak


def test_stop_request_ends_the_search_with_a_verified_plan() -> None:
    # No plan reaches this bound (blocks smaller than their alignment), so only the request ends it.
    problem = problem_from_json(unreachable_bound_document(100, seed=29))
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 3

    plan = run_ga(problem, GASettings(generations=10_000, time_limit=None), should_stop=stop)
    assert plan.stop_reason == "stopped by request"
    assert plan.search.generations <= 3
    assert find_violation(problem, plan.offsets, plan.peak) is None
    immediate = run_ga(problem, GASettings(generations=10_000, time_limit=None), should_stop=lambda: True)
    assert immediate.stop_reason == "stopped by request"
    assert immediate.search.generations == 0


def test_stall_limit() -> None:
    problem = random_problem(6, 20)
    plan = run_ga(problem, GASettings(generations=None, time_limit=None, stall_generations=15))
    if not plan.optimal:
        assert plan.stop_reason == "stalled"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (dict(population=2), "population"),
        (dict(generations=None, time_limit=None, stall_generations=None), None),
        (dict(elite=99), "elite"),
        (dict(time_limit=float("nan")), "time_limit"),
        (dict(time_limit=float("inf")), "time_limit"),
        (dict(time_limit=0), "time_limit"),
        (dict(generations=-1), "generations"),
        (dict(stall_generations=0), "stall_generations"),
        (dict(max_evaluations=0), "max_evaluations"),
        (dict(seed=-1), "seed"),
        (dict(migration_interval=0), "migration_interval"),
        (dict(tournament=0), "tournament"),
        (dict(crossover_rate=1.5), "crossover_rate"),
        (dict(hole_move_rate=float("nan")), "hole_move_rate"),
        (dict(hole_move_rate=0.6, peak_move_rate=0.6), "peak_move_rate"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(bad: dict, field: str | None) -> None:
    with pytest.raises(InputError) as refused:
        GASettings(**bad)
    assert refused.value.field == field


def test_pacing_starts_only_a_step_that_fits_the_time_left() -> None:
    pacing = Pacing.for_search(GASettings(), generation_seconds=6.0)
    assert pacing.local_search_seconds == pytest.approx(6.0 * 2 / most_scored_per_generation(GASettings()))
    assert pacing.next_step(None) == pacing.next_step(7.0) == GENERATION
    assert pacing.next_step(5.0) == LOCAL_SEARCH  # a generation would end past the limit, a local search not
    assert pacing.next_step(0.1) is None
    pacing.measured(LOCAL_SEARCH, 0.05)
    assert pacing.next_step(0.1) == LOCAL_SEARCH
    assert Pacing.for_search(GASettings(local_search=0), 6.0).next_step(5.0) is None


def test_a_generation_slowed_once_is_reckoned_again_from_the_local_search() -> None:
    settings = GASettings()
    share = settings.local_search / most_scored_per_generation(settings)
    pacing = Pacing.for_search(settings, generation_seconds=100.0)  # as if the machine stalled
    assert pacing.next_step(10.0) == LOCAL_SEARCH
    pacing.measured(LOCAL_SEARCH, 0.1)
    assert pacing.generation_seconds == pytest.approx(GENERATION_MARGIN * 0.1 / share)
    assert pacing.next_step(10.0) == GENERATION
    pacing.measured(GENERATION, 1.0)
    pacing.measured(LOCAL_SEARCH, 0.9)  # a slow local search never raises a generation's estimate
    assert pacing.generation_seconds == 1.0


def test_a_search_whose_generations_no_longer_fit_searches_locally_until_the_limit(monkeypatch) -> None:
    problem = load_problem("zoo:densenet121@4")  # 1.10 after 10 s of search: no bound reached here
    monkeypatch.setattr(Pacing, "for_search", classmethod(lambda cls, settings, seconds: cls(1e9, 0.0, True)))
    settings = replace(QUICK, generations=None, stall_generations=None, time_limit=2.0, islands=1)
    started = time.perf_counter()
    plan = run_ga(problem, settings)
    trace = plan.trace
    assert plan.stop_reason == "time limit" and time.perf_counter() - started < 10.0
    assert plan.search.generations == len(trace) - 1 > 2
    steps = np.diff([r.evaluations for r in trace])
    assert set(steps) == {QUICK.local_search}  # local searches only: a generation scores 14 children or more
    assert trace[-1].best_peak == plan.peak <= trace[0].best_peak
