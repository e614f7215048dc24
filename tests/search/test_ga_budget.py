"""The GA's population fitted to a time limit (gaplanner/search/ga/budget.py): from a model of the
problem and the nominal budget, so that the same seed and generations give the same plan under any load."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from gaplanner import load_problem, native, solve
from gaplanner.deadline import Deadline
from gaplanner.search.ga import GASettings
from gaplanner.search.ga.budget import (
    GENERATIONS_AFFORDED,
    fit_first_generation,
    fit_population_to_budget,
    modelled_decode_seconds,
    nominal_seconds,
)


def _lagging_clock(lag: float) -> Callable[[], float]:
    """``time.perf_counter`` as a loaded machine shows it to the search: every reading on the main
    thread comes ``lag`` seconds later than the one before it (the process waited for a core between
    them), so every interval it measures, a decode's included, looks longer."""
    real, main = time.perf_counter, threading.main_thread()
    late = [0.0]

    def clock() -> float:
        if threading.current_thread() is main:
            late[0] += lag
        return real() + late[0]

    return clock


def test_the_same_seed_and_generations_give_the_same_plan_at_the_default_time_limit(benchmarks) -> None:
    """With the default time limit (10 s) set, the population is sized for it: twice the same offsets,
    the first run in the process (whose first decodes load the compiled code) included."""
    problem = load_problem(benchmarks / "minimalloc" / "A.1048576.csv")
    settings = GASettings(generations=30, seed=7)
    first, second = (solve(problem, "ga", settings) for _ in range(2))
    assert first.stop_reason == second.stop_reason == "generation limit"
    assert np.array_equal(first.offsets, second.offsets)
    assert first.search.evaluations == second.search.evaluations


def test_a_slow_clock_changes_nothing_a_generation_budget_searches(benchmarks, monkeypatch) -> None:
    """Measured times end a run (the time limit), never change what it searches: with every interval
    measured 10 ms longer, as on a busy machine, the same seed and generations give the same offsets."""
    problem = load_problem(benchmarks / "minimalloc" / "A.1048576.csv")
    settings = GASettings(generations=30, seed=7)  # the default time limit, 10 s, set too
    quiet = solve(problem, "ga", settings)
    monkeypatch.setattr(time, "perf_counter", _lagging_clock(0.01))
    loaded = solve(problem, "ga", settings)
    assert loaded.stop_reason == quiet.stop_reason == "generation limit"
    assert np.array_equal(quiet.offsets, loaded.offsets)
    assert [r.best_peak for r in quiet.trace] == [r.best_peak for r in loaded.trace]
    assert quiet.search.evaluations == loaded.search.evaluations


def test_sizing_the_population_reads_no_clock(benchmarks, monkeypatch) -> None:
    problem = load_problem(benchmarks / "minimalloc" / "A.1048576.csv")

    def no_clock() -> float:
        raise AssertionError("the population was sized from a measured time")

    monkeypatch.setattr(time, "perf_counter", no_clock)
    assert fit_population_to_budget(problem, GASettings()) == GASettings()  # a small input: all of it
    short = fit_population_to_budget(problem, GASettings(time_limit=0.05))
    assert (short.islands, short.elite) == (1, 2) and 4 <= short.population < GASettings().population
    assert fit_population_to_budget(problem, GASettings(time_limit=None, generations=5)).islands == 4


LARGE = [("iopddl_Y_1.csv", 10.0), ("somas_tensors_pangu_2.6B.csv", 60.0)]


@pytest.mark.parametrize(("name", "limit"), LARGE)
def test_a_large_input_gets_a_population_about_twenty_generations_fit(benchmarks, name, limit) -> None:
    """Islands go first, then the population shrinks (to 4 at least) so that about 20 generations fit."""
    problem = load_problem(benchmarks / "large" / name)
    fitted = fit_population_to_budget(problem, GASettings(time_limit=limit))
    assert fitted.islands == 1
    generation = fitted.population * modelled_decode_seconds(problem)
    assert fitted.population == 4 or generation * GENERATIONS_AFFORDED <= limit
    assert fitted.population < GASettings().population


def test_the_nominal_budget_is_the_least_limit_given_never_the_time_left() -> None:
    assert nominal_seconds(GASettings(time_limit=10.0)) == 10.0
    assert nominal_seconds(GASettings(time_limit=10.0), Deadline(4.0, started=time.perf_counter() - 3)) == 4.0
    assert nominal_seconds(GASettings(time_limit=None, generations=5), Deadline(None)) is None
    assert nominal_seconds(GASettings(time_limit=None, generations=5), Deadline(6.0)) == 6.0


def test_a_first_generation_too_long_for_the_time_left_shrinks_and_none_fits_below_four() -> None:
    settings = GASettings(population=48, islands=4, elite=2)
    threads = max(1, native.threads())
    per_decode = 0.001 * threads  # a millisecond an individual
    assert fit_first_generation(settings, per_decode, 1.0) == settings
    shrunk = fit_first_generation(settings, per_decode, 0.1)  # a hundred individuals fit
    assert shrunk is not None and shrunk.islands == 2 and shrunk.population == 48
    small = fit_first_generation(settings, per_decode, 0.03)
    assert small is not None and (small.islands, small.population) == (1, 30) and small.elite == 2
    assert fit_first_generation(settings, per_decode, 0.0035) is None
