"""The verifier: valid plans pass, planted faults are caught and named, its two checks agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaplanner import PlanError, build_problem, find_violation, load_problem, verify
from gaplanner.plans.verify import _edge_overlap, _vector_overlap
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.decoder import decode
from tests.strategies import SETTINGS, clock_problems, graph_documents, interval_problems


@SETTINGS
@given(interval_problems(max_blocks=8), st.data())
def test_verifier_rejects_planted_overlaps(problem, data) -> None:
    offsets = decode(problem, problem.start_order())
    assert find_violation(problem, offsets) is None
    a, b = problem.conflicts.edges()
    if len(a):
        k = data.draw(st.integers(0, len(a) - 1))
        planted = offsets.copy()
        planted[b[k]] = planted[a[k]]
        assert "overlap" in find_violation(problem, planted)
    planted = offsets.copy()
    planted[0] = -problem.alignments[0]
    assert "negative" in find_violation(problem, planted)
    if problem.alignments[0] > 1:
        planted = offsets.copy()
        planted[0] += 1
        assert "alignment" in find_violation(problem, planted)
    peak = int((offsets + problem.sizes).max())
    assert "beyond the arena" in find_violation(problem, offsets, peak - 1)


@SETTINGS
@given(interval_problems(max_blocks=10), st.lists(st.integers(0, 30), min_size=10, max_size=10))
def test_interval_sweep_and_edge_check_agree(problem, raw_offsets) -> None:
    """The verifier's two overlap checks (time sweep, conflict edges) give the same verdict."""
    from gaplanner.plans.verify import _edge_overlap, _interval_overlap

    offsets = np.array(raw_offsets[: problem.n], np.int64)
    assert (_interval_overlap(problem, offsets) is None) == (_edge_overlap(problem, offsets) is None)


def test_the_worked_example_s_plan_is_valid_and_one_byte_less_is_not() -> None:
    problem = load_problem("example:seed000_queue")
    offsets = np.array([0, 2048, 4096, 0, 4096, 0])  # arena 5120 bytes
    assert find_violation(problem, offsets) is None
    verify(problem, offsets, 5120)
    with pytest.raises(PlanError, match="beyond the arena"):
        verify(problem, offsets, 5119)
    moved = offsets.copy()
    moved[4] = 2048  # out4 onto out3 [0, 2048)? no: onto out1's bytes while out1 lives
    assert find_violation(problem, moved) == (
        "conflicting blocks 'out1' [2048, 4096) and 'out4' [2048, 3072) overlap in memory"
    )


def test_a_multicore_graph_is_checked_edge_by_edge() -> None:
    problem = load_problem("example:multicore_fig1b")
    stacked = np.cumsum(np.r_[0, problem.sizes[:-1]])  # every block apart
    assert find_violation(problem, stacked) is None
    a, b = problem.conflicts.edges()
    together = stacked.copy()
    together[b[0]] = together[a[0]]
    assert "overlap" in find_violation(problem, together)


@SETTINGS
@given(st.one_of(clock_problems(), graph_documents(max_ops=9).map(build_problem)), st.data())
def test_multicore_plans_are_judged_alike_with_and_without_pairs(problem, data) -> None:
    """The check from the vectors (for problems too large for their pairs) against the pair list's."""
    if problem.happens_before is None:
        return
    offsets = decode(problem, np.array(data.draw(st.permutations(range(problem.n)))))
    shift = np.array(data.draw(st.lists(st.integers(-2, 2), min_size=problem.n, max_size=problem.n)))
    for planted in (offsets, np.maximum(offsets + shift * problem.alignments, 0)):
        with_pairs = _edge_overlap(problem, planted)
        without = _vector_overlap(problem, planted)
        assert (with_pairs is None) == (without is None), (with_pairs, without)


def test_a_pinned_block_moved_is_a_violation_in_one_arena_too() -> None:
    problem = problem_from_arrays(
        np.array([10, 5]), np.array([0, 1]), np.array([3, 4]), offsets=np.array([-1, 16])
    )
    assert find_violation(problem, np.array([0, 16])) is None
    assert find_violation(problem, np.array([0, 32])) == "block '1' is pinned at 16 but placed at 32"
    with pytest.raises(PlanError, match="pinned at 16"):
        verify(problem, np.array([16, 0]))
