"""Blocks of one lifetime planned as one block: plans stay valid, peaks and bounds carry over, and the
exact search takes a problem through its merged form only where it could not take it whole."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gaplanner.search.exact.parts_search
from gaplanner import find_violation
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.decoder import decode
from gaplanner.search.exact import ExactSettings, searchable
from gaplanner.search.exact.shared_lifetimes import (
    KEPT_TOGETHER,
    merge_shared_lifetimes,
    merged_for_exact_search,
)
from gaplanner.search.ga import GASettings
from gaplanner.solve import solve
from tests.oracles import brute_force_peaks
from tests.strategies import SETTINGS


@st.composite
def problems_with_families(draw: st.DrawFn, max_blocks: int = 7):
    """Interval problems whose lifetimes come from a few, so several blocks share one."""
    n = draw(st.integers(2, max_blocks))
    spans = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 4)), min_size=1, max_size=3))
    chosen = draw(st.lists(st.sampled_from(spans), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    lower = np.array([start for start, _ in chosen])
    upper = lower + np.array([length for _, length in chosen])
    return problem_from_arrays(np.array(sizes), lower, upper, alignment=draw(st.sampled_from([1, 2])))


def test_merging_costing_more_than_its_share_of_the_time_left_is_decided_first(monkeypatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("asked whether the exact search takes the problem")

    monkeypatch.setattr(sys.modules["gaplanner.search.exact.shared_lifetimes"], "searchable", refuse)
    assert merged_for_exact_search(_family_problem(), 1e-6) is None


@SETTINGS
@given(problems_with_families(), st.randoms(use_true_random=False))
def test_every_merged_plan_is_a_plan_of_the_original_with_its_peak(problem, random) -> None:
    merged = merge_shared_lifetimes(problem)
    if merged is None:  # no two free blocks share a lifetime and an alignment that divides their sizes
        joinable = problem.sizes % problem.alignments == 0
        keys = list(zip(problem.lower[joinable].tolist(), problem.upper[joinable].tolist(), strict=True))
        assert len(set(keys)) == len(keys)
        return
    assert merged.problem.n < problem.n
    assert merged.problem.lower_bound == problem.lower_bound  # the same loads at every time
    assert merged.problem.sizes.sum() == problem.sizes.sum()
    order = list(range(merged.problem.n))
    random.shuffle(order)
    placed = decode(merged.problem, np.array(order))
    peak = int((placed + merged.problem.sizes).max())
    offsets = merged.expand(placed)
    assert find_violation(problem, offsets, peak) is None
    assert int((offsets + problem.sizes).max()) == peak
    # A family's members fill the merged block's place, from its offset to its top.
    for block in range(merged.problem.n):
        members = np.flatnonzero(merged.family == block)
        assert offsets[members].min() == placed[block]
        assert (offsets[members] + problem.sizes[members]).max() == placed[block] + merged.problem.sizes[
            block
        ]


def test_unaligned_sizes_stay_alone() -> None:
    problem = problem_from_arrays(
        np.array([4, 4, 3, 3, 4]), np.array([0, 0, 0, 0, 2]), np.array([2, 2, 2, 2, 4]), alignment=2
    )
    merged = merge_shared_lifetimes(problem)
    assert merged is not None
    assert merged.problem.n == 4  # 0 and 1 together; 2 and 3 would need padding
    assert merged.family[0] == merged.family[1]
    assert len({int(merged.family[b]) for b in range(1, 5)}) == 4


def test_a_problem_with_pinned_blocks_is_not_merged() -> None:
    """Seed 433 of the campaign, as buffers: the family (12 and 7 bytes) fits apart around the pinned
    block (6 bytes at 16), peak 29, but stacked it goes above it, peak 41."""
    problem = problem_from_arrays(
        np.array([6, 12, 7]), np.array([0, 0, 0]), np.array([2, 2, 2]), offsets=np.array([16, -1, -1])
    )
    assert merge_shared_lifetimes(problem) is None
    unpinned = problem_from_arrays(np.array([6, 12, 7]), np.array([0, 0, 0]), np.array([2, 2, 2]))
    assert merge_shared_lifetimes(unpinned) is not None


def test_no_shared_lifetimes_no_merged_problem() -> None:
    problem = problem_from_arrays(np.array([1, 2, 3]), np.array([0, 1, 2]), np.array([2, 3, 4]))
    assert merge_shared_lifetimes(problem) is None


def _family_problem():
    """A family of 30 blocks over [0, 10) under groups of short blocks; its optimum is its bound (130):
    the family at the bottom, the groups starting at even times above it, the odd ones above those."""
    sizes = [3] * 30 + [5, 7, 2, 6] * 9
    lower = [0] * 30 + [t for t in range(9) for _ in range(4)]
    upper = [10] * 30 + [t + 2 for t in range(9) for _ in range(4)]
    return problem_from_arrays(np.array(sizes), np.array(lower), np.array(upper))


@pytest.fixture
def pairs_cap(monkeypatch: pytest.MonkeyPatch) -> int:
    """The exact search's pairs cap, set between the family problem's pairs merged and whole."""
    problem = _family_problem()
    merged = merge_shared_lifetimes(problem)
    assert merged is not None
    whole = int(problem.conflicts.degrees().sum()) // 2
    cap = (whole + int(merged.problem.conflicts.degrees().sum()) // 2) // 2
    monkeypatch.setattr(gaplanner.search.exact.parts_search, "MAX_SEARCHED_PAIRS", cap)
    return cap


@pytest.mark.parametrize("algorithm", ["exact", "ga"])
def test_too_large_whole_searched_merged_and_proved_at_its_own_bound(pairs_cap, algorithm) -> None:
    problem = _family_problem()
    assert not searchable(problem) and merged_for_exact_search(problem, 10.0) is not None
    settings = ExactSettings(time_limit=10.0) if algorithm == "exact" else GASettings(time_limit=10.0, seed=1)
    plan = solve(problem, algorithm, settings)
    assert plan.problem is problem
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert plan.peak == problem.lower_bound and plan.optimal and plan.stop_reason == "optimal"


def test_the_ga_alone_plans_the_blocks_as_given(pairs_cap, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = _family_problem()
    assert merged_for_exact_search(problem, 2.0) is not None  # the default ga would merge

    def refuse(*args: object) -> None:
        raise AssertionError("the GA alone merged blocks")

    monkeypatch.setattr(sys.modules["gaplanner.registry"], "merged_for_exact_search", refuse)
    plan = solve(problem, "ga", GASettings(time_limit=2.0, seed=1, exact_share=0))
    assert find_violation(problem, plan.offsets, plan.peak) is None


@SETTINGS
@given(problems_with_families(max_blocks=6))
def test_searched_merged_the_plan_is_the_merged_optimum_and_claims_no_more(problem) -> None:
    """Each problem as if too large whole: the exact search takes its merged form (when it has one)."""
    merged = merge_shared_lifetimes(problem)
    if merged is None:
        return

    def only_merged(candidate, seconds=None) -> bool:
        return candidate.n < problem.n

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules["gaplanner.search.exact.shared_lifetimes"], "searchable", only_merged)
        plan = solve(problem, "exact", ExactSettings(time_limit=30.0))
    best, _ = brute_force_peaks(problem)
    merged_best, _ = brute_force_peaks(merged.problem)
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert plan.peak == merged_best >= best
    assert plan.lower_bound == problem.lower_bound  # a bound proved on the merged problem is not carried over
    assert plan.optimal == (plan.peak == problem.lower_bound)
    if plan.optimal:
        assert plan.peak == best
    assert plan.stop_reason == ("optimal" if plan.optimal else KEPT_TOGETHER)
