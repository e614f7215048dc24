"""Baselines: valid plans between the lower bound and the worst order, the brute-force optimum below."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given

from gaplanner import build_problem, load_problem
from gaplanner.search.baselines import BASELINES, best_fit_coalescing
from tests.oracles import brute_force_peaks
from tests.strategies import SETTINGS, graph_documents, interval_problems


@SETTINGS
@given(interval_problems(max_blocks=6))
@pytest.mark.slow
def test_baselines_between_lower_bound_and_brute_force(problem) -> None:
    best, worst = brute_force_peaks(problem)
    assert problem.lower_bound <= best
    for name, baseline in BASELINES.items():
        plan = baseline(problem)
        assert best <= plan.peak <= problem.total_size + int(problem.alignments.max()) * problem.n, name
    assert best <= BASELINES["first-fit"](problem).peak <= worst


@pytest.mark.slow
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


@SETTINGS
@given(interval_problems(max_blocks=8))
def test_best_fit_coalescing_on_conflicts_is_the_time_walk_on_a_total_order(problem) -> None:
    """On intervals, the free list of the partial-order walk (the arena less a block's placed conflicts)
    is the time walk's free list, so both give the same offsets."""
    as_partial_order = replace(problem, interval_conflicts=False)
    walk = best_fit_coalescing(problem)
    assert np.array_equal(best_fit_coalescing(as_partial_order).offsets, walk.offsets)


@pytest.mark.parametrize("name", ["zoo:googlenet@2", "zoo:mobilenetv1@4"])
def test_best_fit_coalescing_on_split_graphs_reuses_each_cores_space(name) -> None:
    """Between a split and a combine the cores never synchronise: a walk that frees a block only once
    every core is surely past it reuses almost nothing (6x and 10x the bound here)."""
    problem = load_problem(name)
    assert best_fit_coalescing(problem).peak <= 1.1 * problem.lower_bound
