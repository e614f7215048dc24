"""The GA followed by exact probes: never worse than the GA, proves what the exact search proves."""

from __future__ import annotations

import pytest

from gaplanner import find_violation, load_problem
from gaplanner.errors import InputError
from gaplanner.ga import GASettings
from gaplanner.solve import solve


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
