"""The interval decoder (no conflict pairs) against plain-Python placement, with pins and alignments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.problem.problem import Problem, problem_from_arrays
from gaplanner.search import neighbours
from gaplanner.search.baselines import first_fit, greedy_size
from gaplanner.search.decoder import Decoder
from gaplanner.search.fitness import PopulationFitness
from gaplanner.search.variation import HoleGuide
from tests.strategies import SETTINGS


def _placed_ranges(problem: Problem, offsets: np.ndarray, b: int) -> list[tuple[int, int]]:
    """The ranges of the placed blocks (offset >= 0) whose lifetimes overlap ``b``'s, by start."""
    return sorted(
        (int(offsets[j]), int(offsets[j] + problem.sizes[j]))
        for j in range(problem.n)
        if j != b
        and offsets[j] >= 0
        and problem.lower[j] < problem.upper[b]
        and problem.lower[b] < problem.upper[j]
    )


def oracle(problem: Problem, order: list[int], best_fit: bool) -> list[int]:
    """Pinned blocks at their offsets, then the order's others by first-fit (or best-fit), pair by pair."""
    offsets = problem.pinned.copy()
    for b in order:
        if offsets[b] >= 0:
            continue
        align, size, frontier, gaps = int(problem.alignments[b]), int(problem.sizes[b]), 0, []
        for start, end in _placed_ranges(problem, offsets, b):
            aligned = -(-frontier // align) * align
            if start - aligned >= size:
                gaps.append((start - aligned, aligned))
            frontier = max(frontier, end)
        top = -(-frontier // align) * align
        offsets[b] = (min(gaps)[1] if best_fit else min(g[1] for g in gaps)) if gaps else top
    return offsets.tolist()


@st.composite
def pinned_interval_problems(draw: st.DrawFn, max_blocks: int = 8) -> Problem:
    """Random lifetimes, sizes and alignment; some blocks pinned where a valid plan has them."""
    n = draw(st.integers(1, max_blocks))
    lower = np.array(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)))
    upper = lower + np.array(draw(st.lists(st.integers(1, 6), min_size=n, max_size=n)))
    sizes = np.array(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)))
    alignment = draw(st.sampled_from([1, 2, 4, 8]))
    free = problem_from_arrays(sizes, lower, upper, alignment=alignment)
    spread = np.array(draw(st.permutations(range(n))))
    plan = oracle(free, [int(b) for b in spread], best_fit=False)
    pins = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    offsets = np.where(pins, plan, -1)
    return problem_from_arrays(sizes, lower, upper, alignment=alignment, offsets=offsets)


def lifetime_decoder(problem: Problem) -> Decoder:
    decoder = Decoder.for_problem(problem, population=False)
    assert decoder.intervals is not None
    return decoder


@SETTINGS
@given(pinned_interval_problems(), st.booleans(), st.randoms(use_true_random=False))
def test_both_decoders_match_the_pair_by_pair_oracle(problem, best_fit, random) -> None:
    orders = np.array([random.sample(range(problem.n), problem.n) for _ in range(3)])
    pairs = Decoder.for_problem(problem)  # small problems: the pair list
    assert pairs.intervals is None
    for decoder in (pairs, lifetime_decoder(problem)):
        peaks, offsets = decoder.decode_population(orders, best_fit)
        for order, row, peak in zip(orders, offsets, peaks, strict=True):
            assert row.tolist() == oracle(problem, order.tolist(), best_fit)
            assert peak == int((row + problem.sizes).max())


@SETTINGS
@given(pinned_interval_problems(), st.randoms(use_true_random=False), st.data())
def test_a_decode_from_a_template_prefix_is_exact(problem, random, data) -> None:
    decoder = lifetime_decoder(problem)
    order = np.array(random.sample(range(problem.n), problem.n))
    _, offsets = decoder.decode_population(order[None, :])
    prefix = data.draw(st.integers(0, problem.n))
    rest = random.sample(order[prefix:].tolist(), problem.n - prefix)
    child = np.array(order[:prefix].tolist() + rest, np.int64)
    _, from_template = decoder.decode_population(child[None, :], template=(np.array([prefix]), offsets))
    assert from_template[0].tolist() == oracle(problem, child.tolist(), best_fit=False)


def test_the_ga_scores_from_lifetimes_as_from_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    lower = rng.integers(0, 40, 60)
    upper = lower + rng.integers(1, 12, 60)
    problem = problem_from_arrays(rng.integers(1, 50, 60), lower, upper, alignment=4)
    orders = np.array([rng.permutation(problem.n) for _ in range(6)])
    by_pairs = PopulationFitness(problem)(orders)
    monkeypatch.setattr(neighbours, "PAIR_ENTRIES_LIMIT", 0)
    fitness = PopulationFitness(problem)
    assert fitness.decoder.intervals is not None and len(HoleGuide.for_problem(problem).indices) == 0
    by_lifetimes = fitness(orders)
    assert np.array_equal(by_pairs[0], by_lifetimes[0])
    for field in ("peaks", "excess", "contiguity", "offsets"):
        assert np.array_equal(getattr(by_pairs[1], field), getattr(by_lifetimes[1], field))


@SETTINGS
@given(pinned_interval_problems())
def test_greedy_size_is_first_fit_in_order_of_size(problem) -> None:
    """Largest first (ties by start, then index), each at the lowest offset clear of placed live blocks."""
    order = sorted(range(problem.n), key=lambda b: (-problem.sizes[b], problem.lower[b], b))
    assert greedy_size(problem).offsets.tolist() == oracle(problem, order, best_fit=False)
    assert not problem.conflicts.built


def test_offsets_beyond_62_bit_keys_plan_without_pairs() -> None:
    # 300 blocks live at once with sizes near 2**53: offsets reach 2**61, more than the pair decoder's
    # packed keys held with 299 neighbours.
    n, size = 300, (1 << 53) - 1
    problem = problem_from_arrays(np.full(n, size), np.zeros(n, np.int64), np.ones(n, np.int64))
    for baseline in (first_fit, greedy_size):
        plan = baseline(problem)  # verified when made
        assert plan.peak == n * size == problem.lower_bound
    assert Decoder.for_problem(problem).intervals is not None  # populations too
    assert not problem.conflicts.built


@pytest.mark.slow
def test_a_million_blocks_with_sizes_to_64_mib_plan_by_greedy_size() -> None:
    from experiments.synthetic import synthetic_problem

    problem = synthetic_problem(1_000_000, seed=0)
    assert int(problem.sizes.max()) > 32 << 20
    plan = greedy_size(problem)  # verified when made
    assert plan.peak >= problem.lower_bound
    assert not problem.conflicts.built
