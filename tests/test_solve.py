"""The front door: ``gaplanner.solve`` by algorithm name, settings per algorithm, ``compare``."""

from __future__ import annotations

import time

import pytest

import gaplanner
from gaplanner import ALGORITHMS, GASettings, InputError, RandomSearchSettings, compare, load_problem, solve
from gaplanner.search.baselines import BASELINES
from gaplanner.search.exact.search import ExactSettings
from gaplanner.solve import settings_for

SEED000 = "example:seed000_queue"  # six blocks, lower bound 5120, every planner reaches it


def test_the_package_exports_the_front_door() -> None:
    for name in (
        "solve",
        "compare",
        "GASettings",
        "RandomSearchSettings",
        "Plan",
        "load_problem",
        "ALGORITHMS",
    ):
        assert name in gaplanner.__all__ and hasattr(gaplanner, name)
    assert gaplanner.solve is solve


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_plans_through_solve(algorithm: str) -> None:
    plan = solve(load_problem(SEED000), algorithm)
    assert plan.algorithm == algorithm and plan.peak == plan.lower_bound == 5120 and plan.optimal


def test_random_search_takes_its_settings_through_solve() -> None:
    problem = load_problem("zoo:googlenet@2")
    settings = RandomSearchSettings(evaluations=40, batch=16, seed=3, stop_at_lower_bound=False)
    plan = solve(problem, "random-search", settings)
    assert [r.evaluations for r in plan.trace] == [16, 32, 40]
    assert plan.stop_reason == "evaluation limit" and plan.search.seed == 3
    assert plan.peak == plan.trace[-1].best_peak


@pytest.mark.parametrize("baseline", BASELINES)
def test_a_baseline_refuses_settings_naming_itself(baseline: str) -> None:
    with pytest.raises(InputError, match=f"{baseline} takes no settings, got GASettings") as refused:
        solve(load_problem(SEED000), baseline, GASettings())
    assert refused.value.field == "settings"


def test_a_search_refuses_another_search_s_settings() -> None:
    problem = load_problem(SEED000)
    with pytest.raises(InputError, match="ga takes GASettings, not RandomSearchSettings"):
        solve(problem, "ga", RandomSearchSettings())
    with pytest.raises(InputError, match="random-search takes RandomSearchSettings, not GASettings"):
        solve(problem, "random-search", GASettings())


def test_an_unknown_algorithm_is_refused_with_the_choices() -> None:
    with pytest.raises(InputError, match="unknown algorithm 'magic'; choose from ga, first-fit") as refused:
        solve(load_problem(SEED000), "magic")
    assert refused.value.field == "algorithm"


def test_settings_for_takes_what_each_algorithm_uses() -> None:
    options = {"seed": 4, "time_limit": 2.0, "population": 12, "islands": 1}
    assert settings_for("ga", options) == GASettings(seed=4, time_limit=2.0, population=12, islands=1)
    assert settings_for("random-search", options) == RandomSearchSettings(seed=4, time_limit=2.0)
    assert settings_for("first-fit", options) is None
    with pytest.raises(InputError) as refused:
        settings_for("ga", {"population": 2})
    assert refused.value.field == "population"


def test_settings_given_by_name_that_the_algorithm_does_not_use_are_refused() -> None:
    with pytest.raises(
        InputError, match=r"first-fit does not use this setting \(only ga, random-search"
    ) as no:
        settings_for("first-fit", {"seed": 4}, refuse_unused=True)
    assert no.value.field == "seed"
    with pytest.raises(InputError, match="random-search does not use this setting") as no:
        settings_for("random-search", {"seed": 4, "population": 12}, refuse_unused=True)
    assert no.value.field == "population"
    assert settings_for("exact", {"threads": 2}, refuse_unused=True) == ExactSettings(threads=2)
    with pytest.raises(InputError, match="first-fit takes no settings"):  # the same check, from the API
        solve(load_problem(SEED000), "first-fit", GASettings(seed=4))


def test_compare_runs_every_baseline_then_the_ga() -> None:
    rows = compare(load_problem(SEED000), GASettings(generations=2, time_limit=None))
    assert [row.algorithm for row in rows] == [*BASELINES, "ga"]
    assert all(row.peak == 5120 and row.optimal and row.ratio == 1.0 for row in rows)


def test_compare_gives_the_ga_its_own_deadline_of_the_time_limit() -> None:
    """4,000 blocks whose starting plans leave a gap to the bound: the GA's row keeps the time limit
    (its starting plans and verification included), counted from its own start, not the comparison's."""
    from experiments.synthetic import synthetic_arrays
    from gaplanner.problem.loading import problem_from_json

    sizes, lower, upper = synthetic_arrays(4000, seed=1)
    buffers = [{"id": f"b{k}", "lower": int(lo), "upper": int(up), "size": int(size)}
               for k, (size, lo, up) in enumerate(zip(sizes, lower, upper, strict=True))]  # fmt: skip
    problem = problem_from_json({"buffers": buffers})
    started = time.perf_counter()
    rows = compare(problem, GASettings(time_limit=1.0))
    seconds = time.perf_counter() - started
    assert rows[-1].algorithm == "ga" and rows[-1].seconds <= 2 * (1 * 1.1 + 1), rows[-1]  # loaded machine
    assert sum(row.seconds for row in rows) <= seconds  # the total is the sum of the rows
    assert all(row.peak >= problem.lower_bound for row in rows)
