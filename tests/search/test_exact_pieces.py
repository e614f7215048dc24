"""The exact search split where no free block crosses (gaplanner.search.exact.pieces), against brute force."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.plans.verify import find_violation
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search import window_repair
from gaplanner.search.baselines import greedy_size_order
from gaplanner.search.decoder import decode
from gaplanner.search.exact.pieces import fit_pieces, pieces
from gaplanner.search.window_repair import repair
from tests.strategies import SETTINGS

BUDGET = 1_000_000  # far more placements than a handful of blocks needs


def _overlap(lower, upper, i: int, j: int) -> bool:
    return lower[i] < upper[j] and lower[j] < upper[i]


def _first_fit(sizes, aligns, lower, upper, offsets, order) -> np.ndarray:
    """Plain-Python first-fit of ``order`` around the blocks ``offsets`` already places (>= 0)."""
    offsets = offsets.copy()
    for b in order:
        placed = sorted(
            (int(offsets[j]), int(offsets[j] + sizes[j]))
            for j in range(len(sizes))
            if offsets[j] >= 0 and _overlap(lower, upper, b, j)
        )
        candidate = 0
        for start, end in placed:
            if start >= candidate + sizes[b]:
                break
            candidate = max(candidate, -(-end // int(aligns[b])) * int(aligns[b]))
        offsets[b] = candidate
    return offsets


def _fits_oracle(window, free: int, offsets: np.ndarray, target: int) -> bool:
    """Whether the free blocks fit under ``target`` around the placed ones: first-fit over every order of
    the free blocks (around fixed blocks, the order of an optimal plan's offsets gets each block no
    higher than that plan's)."""
    start = offsets.copy()
    start[:free] = -1
    for order in itertools.permutations(range(free)):
        placed = _first_fit(window.sizes, window.alignments, window.lower, window.upper, start, order)
        if (placed + window.sizes).max() <= target:
            return True
    return False


@st.composite
def windows(draw: st.DrawFn):
    """A small interval problem, its first ``free`` blocks free and the rest pinned where a first-fit plan
    of every block put them; that plan; a target."""
    n = draw(st.integers(1, 8))
    lower = np.array(draw(st.lists(st.integers(0, 10), min_size=n, max_size=n)))
    upper = lower + np.array(draw(st.lists(st.integers(1, 6), min_size=n, max_size=n)))
    sizes = np.array(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)))
    align = draw(st.sampled_from([1, 1, 2, 4]))
    free = draw(st.integers(0, min(n, 6)))
    order = draw(st.permutations(range(n)))
    offsets = _first_fit(sizes, np.full(n, align), lower, upper, np.full(n, -1), order)
    pinned = np.where(np.arange(n) >= free, offsets, -1)
    window = problem_from_arrays(sizes, lower, upper, offsets=pinned, alignment=align)
    peak = int((offsets + sizes).max())
    target = draw(st.integers(max(1, window.lower_bound - 2), peak))
    return window, free, offsets, target


@SETTINGS
@given(windows())
def test_the_pieces_fit_exactly_when_brute_force_says_so(case) -> None:
    """Sound (a plan under the target is valid and moves no placed block; a proof is right) and complete
    (with placements enough, every window the brute force fits is fitted)."""
    window, free, offsets, target = case
    result = fit_pieces(window, free, offsets, target, BUDGET)
    fits = _fits_oracle(window, free, offsets, target)
    assert (result.offsets is not None) == fits
    if result.offsets is None:
        assert result.proved
        return
    assert find_violation(window, result.offsets) is None
    assert int((result.offsets + window.sizes).max()) <= target
    assert np.array_equal(result.offsets[free:], offsets[free:])


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 5)), min_size=1, max_size=10))
def test_pieces_split_exactly_where_no_lifetime_crosses(spans) -> None:
    """Against the components of the overlap graph, pair by pair (empty lifetimes meet nothing)."""
    lower = np.array([a for a, _ in spans])
    upper = lower + np.array([w for _, w in spans])
    found = pieces(lower, upper)
    assert sorted(np.concatenate(found).tolist()) == list(range(len(spans)))
    label = {int(b): k for k, piece in enumerate(found) for b in piece}
    for i, j in itertools.combinations(range(len(spans)), 2):
        if _overlap(lower, upper, i, j):
            assert label[i] == label[j]
    for piece in found:  # each piece is connected: its lifetimes, by start, overlap the reach so far
        order = piece[np.argsort(lower[piece], kind="stable")]
        reach = np.maximum.accumulate(upper[order])
        assert (lower[order][1:] < reach[:-1]).all()
    starts = [int(lower[piece].min()) for piece in found]
    assert starts == sorted(starts)


# A puzzle of seven blocks above a block of size 4 that lives through the whole run: the max load (18)
# fits only in an arrangement greedy-size misses (19).
PUZZLE = ([5, 3, 3, 1, 1, 0, 0], [6, 4, 7, 4, 5, 3, 3], [5, 4, 4, 3, 3, 5, 2])


def _puzzles(copies: int):
    """``copies`` of the puzzle one after another in time, over one pinned block of size 4 at 0."""
    lower, upper, sizes = (np.array(column) for column in PUZZLE)
    free = copies * len(sizes)
    lower = np.r_[np.concatenate([lower + 7 * k for k in range(copies)]), 0]
    upper = np.r_[np.concatenate([upper + 7 * k for k in range(copies)]), 7 * copies]
    pinned = np.r_[np.full(free, -1), 0]
    window = problem_from_arrays(np.r_[np.tile(sizes, copies), 4], lower, upper, offsets=pinned)
    return window, free


def test_copies_of_a_puzzle_are_fitted_piece_by_piece_at_the_bound() -> None:
    """Nothing unplaced crosses the times between the copies: each copy is a piece, searched on its own
    (placements add up copy by copy; each piece gets the same plan) and the whole fits at the max load,
    where greedy-size does not."""
    one, free_one = _puzzles(1)
    window, free = _puzzles(12)
    assert len(pieces(window.lower[:free], window.upper[:free])) == 12
    start = decode(window, greedy_size_order(window))
    assert int((start + window.sizes).max()) > window.lower_bound == 18
    single = fit_pieces(one, free_one, decode(one, greedy_size_order(one)), one.lower_bound, BUDGET)
    result = fit_pieces(window, free, start, window.lower_bound, BUDGET)
    assert result.offsets is not None and single.offsets is not None
    assert find_violation(window, result.offsets) is None
    assert int((result.offsets + window.sizes).max()) == window.lower_bound
    assert result.placements == 12 * single.placements
    assert (result.offsets[:free].reshape(12, free_one) == single.offsets[:free_one]).all()


def test_the_repair_fits_a_window_first_fit_cannot(monkeypatch) -> None:
    """Twelve random blocks: the window repair reaches the max load (21) once its windows are searched
    exactly, and stays one above it with first-fit's orders alone."""
    lower = np.array([6, 1, 8, 2, 6, 4, 0, 9, 5, 1, 9, 8])
    upper = np.array([7, 2, 9, 4, 9, 8, 4, 13, 8, 6, 11, 11])
    sizes = np.array([4, 8, 8, 8, 5, 6, 4, 1, 5, 7, 1, 8])
    problem = problem_from_arrays(sizes, lower, upper)
    start = decode(problem, greedy_size_order(problem))
    repaired = repair(problem, start)
    assert find_violation(problem, repaired) is None
    assert int((repaired + sizes).max()) == problem.lower_bound == 21
    monkeypatch.setattr(window_repair, "MAX_PLACEMENTS_PER_BLOCK", 0)
    assert int((repair(problem, start) + sizes).max()) == 22
