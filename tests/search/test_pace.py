"""The exact probes' quanta beside the GA: the shape of the cost model, not its timings."""

from __future__ import annotations

import time

import numpy as np

from gaplanner import load_problem
from gaplanner.problem.problem import Problem, problem_from_arrays
from gaplanner.search.baselines import first_fit
from gaplanner.search.exact import ExactSearch
from gaplanner.search.ga import GASettings
from gaplanner.search.pace import (
    PLACEMENTS_PER_EVALUATION,
    QUANTUM_GENERATIONS,
    Pace,
    placements_per_evaluation,
)


def _nested(copies: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``copies`` of one set of 20 overlapping lifetimes, each copy after the last has ended."""
    rng = np.random.default_rng(3)
    lower, length, sizes = rng.integers(0, 30, 20), rng.integers(5, 20, 20), rng.integers(1, 9, 20) * 64
    shift = np.repeat(np.arange(copies) * 100, 20)
    return np.tile(sizes, copies), np.tile(lower, copies) + shift, np.tile(lower + length, copies) + shift


def _started(problem: Problem) -> ExactSearch:
    """The exact search from first-fit's plan, above the bound here: from a starting plan at the bound
    (the heaviest instant's, on one copy) it would have no part left to search."""
    return ExactSearch.start(problem, time.perf_counter(), None, {"first-fit": first_fit(problem)})


def test_one_part_of_interval_lifetimes_takes_the_constant() -> None:
    problem = problem_from_arrays(*_nested(1))
    search = _started(problem)
    assert search.part_sizes() == [20]
    assert placements_per_evaluation(problem, search.part_sizes()) == PLACEMENTS_PER_EVALUATION


def test_the_ratio_grows_with_the_blocks_over_the_searched_parts() -> None:
    """Three parts of 20: an evaluation decodes all 60 blocks, a placement scans one part's 20."""
    problem = problem_from_arrays(*_nested(3))
    search = _started(problem)
    assert search.part_sizes() == [20, 20, 20]
    assert placements_per_evaluation(problem, search.part_sizes()) == 3 * PLACEMENTS_PER_EVALUATION
    # The parts weigh by their size: a part of a few blocks beside a large one barely counts.
    large_and_small = placements_per_evaluation(problem, [56, 4])
    assert PLACEMENTS_PER_EVALUATION < large_and_small < 1.2 * PLACEMENTS_PER_EVALUATION


def test_parts_at_their_bound_are_not_searched() -> None:
    problem = problem_from_arrays(*_nested(2))
    search = _started(problem)
    assert search.part_sizes() == [20, 20]
    state = search.parts.states[0]
    state.hi = state.lo  # as when a plan at the part's bound was found
    assert search.part_sizes() == [20]


def test_on_a_conflict_graph_the_ratio_grows_with_the_degree() -> None:
    sparse, dense = load_problem("zoo:resnet50@2"), load_problem("zoo:resnet50@4")
    assert not sparse.interval_conflicts and not dense.interval_conflicts
    assert dense.conflicts.degrees().mean() > 2 * sparse.conflicts.degrees().mean()
    ratios = [placements_per_evaluation(p, [p.n]) for p in (sparse, dense)]
    assert PLACEMENTS_PER_EVALUATION < ratios[0] < ratios[1]


def test_quanta_follow_the_ga_s_evaluations_and_the_first_its_first_populations() -> None:
    problem = problem_from_arrays(*_nested(1))
    search = _started(problem)
    small = Pace.of(problem, search, GASettings(islands=1, population=8))
    large = Pace.of(problem, search, GASettings(islands=4, population=48))
    per = QUANTUM_GENERATIONS * PLACEMENTS_PER_EVALUATION
    assert QUANTUM_GENERATIONS >= 1  # the probes wait less than the GA
    assert small.first_quantum == round(per * 8) and large.first_quantum == round(per * 4 * 48)
    assert [large.quantum(k) for k in (0, 1, 100)] == [1, round(per), round(100 * per)]
