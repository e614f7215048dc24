"""Baselines: valid plans between the lower bound and the worst order, the brute-force optimum below."""

from __future__ import annotations

from hypothesis import given

from gaplanner import BASELINES, build_problem
from tests.oracles import brute_force_peaks
from tests.strategies import SETTINGS, graph_documents, interval_problems


@SETTINGS
@given(interval_problems(max_blocks=6))
def test_baselines_between_lower_bound_and_brute_force(problem) -> None:
    best, worst = brute_force_peaks(problem)
    assert problem.lower_bound <= best
    for name, baseline in BASELINES.items():
        plan = baseline(problem)
        assert best <= plan.peak <= problem.total_size + int(problem.alignments.max()) * problem.n, name
    assert best <= BASELINES["first-fit"](problem).peak <= worst


@SETTINGS
@given(graph_documents(max_ops=5))
def test_graph_baselines_verify_and_respect_the_bound(doc) -> None:
    problem = build_problem(doc)
    for baseline in BASELINES.values():
        plan = baseline(problem)
        assert problem.lower_bound <= plan.peak
    if problem.n <= 6:
        best, _ = brute_force_peaks(problem)
        assert problem.lower_bound <= best <= min(b(problem).peak for b in BASELINES.values())
