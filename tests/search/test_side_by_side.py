"""The GA with exact probes, side by side or in turns: never worse than the GA, proves what the exact
search proves."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaplanner import Problem, find_violation, load_problem, native
from gaplanner.errors import InputError
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.baselines import first_fit
from gaplanner.search.exact import ExactSettings, exact_search, usable_cores
from gaplanner.search.exact.parts_search import PartsSearch
from gaplanner.search.ga import GASettings, run_ga
from gaplanner.solve import solve
from tests.oracles import brute_force_peaks
from tests.strategies import interval_problems


@pytest.mark.parametrize(
    ("options", "field"),
    [({"exact_share": 1.0}, "exact_share"), ({"exact_share": -0.1}, "exact_share"),
     ({"exact_share": 0.5, "time_limit": None, "generations": 5}, "exact_share")],
)  # fmt: skip
def test_settings_refuse_a_bad_exact_share(options, field) -> None:
    with pytest.raises(InputError) as caught:
        GASettings(**options)
    assert caught.value.field == field


def test_exact_probes_after_the_ga_reach_and_prove_the_optimum(benchmarks) -> None:
    problem = load_problem(benchmarks / "minimalloc" / "C.1048576.csv")  # the exact search solves it at once
    plan = solve(problem, "ga", GASettings(time_limit=3.0, exact_share=0.5, seed=1))
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert plan.algorithm == "ga" and plan.peak == problem.lower_bound and plan.optimal
    assert [r.best_peak for r in plan.trace] == sorted((r.best_peak for r in plan.trace), reverse=True)


def test_the_ga_alone_without_exact_probes() -> None:
    problem = load_problem("example:multicore_fig1b")
    plan = solve(problem, "ga", GASettings(time_limit=1.0, seed=1, exact_share=0))
    assert plan.search is not None and plan.search.population is not None  # the GA's own plan
    assert plan.bound_origin == "clique"


def test_by_default_exact_probes_prove_a_small_multicore_optimum() -> None:
    problem = load_problem("example:multicore_fig1b")
    plan = solve(problem, "ga", GASettings(time_limit=2.0, seed=1))
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert plan.algorithm == "ga" and plan.optimal and plan.stop_reason == "optimal"


def test_the_ga_starts_from_the_exact_search_plan(benchmarks) -> None:
    """D is not closed by the first exact turn; the GA after it starts from its plan, so the best peak
    never rises along the trace (the GA alone would start at the baselines' far higher peaks)."""
    problem = load_problem(benchmarks / "minimalloc" / "D.1048576.csv")
    plan = solve(problem, "ga", GASettings(time_limit=2.0, seed=1, exact_share=0.5))
    assert find_violation(problem, plan.offsets, plan.peak) is None
    peaks = [r.best_peak for r in plan.trace]
    assert peaks == sorted(peaks, reverse=True)
    assert plan.search is not None and plan.search.population is not None  # the GA ran between the turns
    assert not plan.optimal


class _Giving:
    """An exchange that gives one plan at the first trade and keeps every plan it is given."""

    def __init__(self, plan) -> None:
        self.plan, self.given = plan, []

    def trade(self, offsets, evaluations):
        assert evaluations > 0  # the islands' first populations at least
        self.given.append(offsets.copy())
        return (self.plan,) if len(self.given) == 1 else ()


def _forty_blocks() -> Problem:
    """Forty random blocks whose optimum the exact search proves at once, and that a GA of one
    generation misses."""
    rng = np.random.default_rng(42)
    lower, length = rng.integers(0, 80, 40), rng.integers(1, 20, 40)
    return problem_from_arrays(rng.integers(1, 64, 40) * 16, lower, lower + length)


def test_the_ga_takes_a_plan_traded_to_it_and_gives_its_best() -> None:
    problem = _forty_blocks()
    optimum = exact_search(problem, ExactSettings(time_limit=5.0))
    assert optimum.optimal
    settings = GASettings(generations=1, time_limit=None, seed=1)
    plans = {"first-fit": first_fit(problem)}  # the starting plans' window repair finds the optimum
    assert run_ga(problem, settings, plans=plans).peak > optimum.peak  # alone, the same GA misses it
    exchange = _Giving(optimum.offsets)
    plan = run_ga(problem, settings, exchange=exchange, plans=plans)
    assert plan.peak == optimum.peak and plan.stop_reason == "lower bound reached"
    assert len(exchange.given) == 1  # traded once, after the first generation
    for offsets in exchange.given:
        assert find_violation(problem, offsets, int((offsets + problem.sizes).max())) is None


def test_a_plan_posted_from_another_thread_closes_the_search() -> None:
    problem = _forty_blocks()
    optimum = exact_search(problem, ExactSettings(time_limit=5.0))
    start = first_fit(problem)
    assert start.peak > optimum.peak
    search = PartsSearch(problem, start.offsets)
    poster = threading.Thread(target=search.post, args=(optimum.offsets,))
    poster.start()
    poster.join()
    result = search.run(time.perf_counter() + 30.0)
    assert result.closed and int((result.offsets + problem.sizes).max()) == optimum.peak
    assert result.nodes == 0  # taken before the first probe ran


@pytest.mark.skipif(usable_cores() < 2, reason="the searches run side by side on two cores or more")
def test_side_by_side_the_default_proves_the_optimum_and_keeps_the_kernels_threads(benchmarks) -> None:
    problem = load_problem(benchmarks / "minimalloc" / "C.1048576.csv")
    threads = native.threads()
    plan = solve(problem, "ga", GASettings(time_limit=5.0, seed=1))
    assert native.threads() == threads
    assert plan.optimal and plan.stop_reason == "optimal" and plan.peak == problem.lower_bound
    assert find_violation(problem, plan.offsets, plan.peak) is None
    peaks = [r.best_peak for r in plan.trace]
    assert peaks == sorted(peaks, reverse=True) and [r.generation for r in plan.trace] == list(
        range(len(peaks))
    )


@pytest.mark.skipif(usable_cores() < 2, reason="the searches run side by side on two cores or more")
def test_side_by_side_a_stop_request_ends_both_searches(benchmarks) -> None:
    problem = load_problem(benchmarks / "minimalloc" / "J.1048576.csv")  # no search closes J
    seen: list[int] = []
    began = time.perf_counter()
    plan = solve(
        problem, "ga", GASettings(time_limit=30.0, seed=1), on_progress=lambda r: seen.append(r.best_peak),
        should_stop=lambda: time.perf_counter() - began > 1.0,
    )  # fmt: skip
    assert time.perf_counter() - began < 5.0
    assert plan.stop_reason == "stopped by request" and not plan.optimal
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert seen == [r.best_peak for r in plan.trace] and seen[-1] == plan.peak
    assert plan.search is not None and plan.search.population is not None  # the GA ran


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interval_problems(max_blocks=6), st.integers(0, 3))
@pytest.mark.slow
def test_the_default_never_claims_more_than_brute_force(problem, seed) -> None:
    """Side by side (or in turns on one core): the optimum found and proved, no bound above it."""
    best, _ = brute_force_peaks(problem)
    plan = solve(problem, "ga", GASettings(time_limit=2.0, seed=seed))
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert problem.lower_bound <= plan.lower_bound <= best <= plan.peak
    assert plan.optimal and plan.peak == best and plan.stop_reason in ("optimal", "lower bound reached")


@contextlib.contextmanager
def _busy_core() -> Iterator[None]:
    """A process spinning on a core beside the test, as another user's job would."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.skipif(usable_cores() < 2, reason="the searches run side by side on two cores or more")
@pytest.mark.parametrize("workers", [1, 2])
def test_the_same_seed_and_generations_give_the_same_plan_whatever_the_load(benchmarks, workers) -> None:
    """The GA and the exact probes trade plans at points counted in work (generations, placements), so
    the same input, seed and generation budget give the same offsets, also with a core kept busy."""
    problem = load_problem(benchmarks / "minimalloc" / "A.1048576.csv")  # no search closes A at once
    settings = GASettings(generations=10, time_limit=120.0, seed=7)
    quiet = solve(problem, "ga", settings, workers=workers)
    with _busy_core():
        loaded = solve(problem, "ga", settings, workers=workers)
    assert quiet.stop_reason == loaded.stop_reason != "time limit"
    assert np.array_equal(quiet.offsets, loaded.offsets)
    assert [r.best_peak for r in quiet.trace] == [r.best_peak for r in loaded.trace]
    assert max(r.evaluations for r in quiet.trace) > quiet.search.evaluations  # the exact probes ran too
