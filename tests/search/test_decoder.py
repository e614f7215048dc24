"""The decoders against plain-Python first-fit, on both integer widths, and the exactness the GA relies on."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gaplanner import build_problem
from gaplanner.native import _decoder
from gaplanner.problem.problem import Problem, problem_from_arrays
from gaplanner.search.decoder import SORT_MIN_RANGES, Decoder, decode
from gaplanner.search.fitness import PopulationFitness
from gaplanner.search.neighbours import NEIGHBOUR_LANES
from tests.oracles import address_order, best_fit_offsets, first_fit_offsets
from tests.strategies import SETTINGS, graph_documents, interval_problems


def widened(problem: Problem) -> Problem:
    """The same instance with every size times 2**32: the decoder must switch to int64."""
    return problem_from_arrays(
        problem.sizes << 32, problem.lower, problem.upper, alignment=int(problem.alignments[0])
    )


@SETTINGS
@given(interval_problems(max_blocks=8), st.booleans(), st.randoms(use_true_random=False))
def test_first_fit_matches_the_plain_python_decoder(problem, wide, random) -> None:
    problem = widened(problem) if wide else problem
    assert Decoder.for_problem(problem).sizes.dtype == (np.int64 if wide else np.int32)
    order = random.sample(range(problem.n), problem.n)
    assert decode(problem, np.array(order)).tolist() == first_fit_offsets(problem, tuple(order)).tolist()


@SETTINGS
@given(interval_problems(max_blocks=8), st.booleans(), st.randoms(use_true_random=False))
def test_best_fit_matches_the_plain_python_decoder(problem, wide, random) -> None:
    problem = widened(problem) if wide else problem
    order = random.sample(range(problem.n), problem.n)
    expected = best_fit_offsets(problem, tuple(order))
    assert decode(problem, np.array(order), best_fit=True).tolist() == expected.tolist()


def test_best_fit_takes_the_smallest_gap_and_first_fit_the_lowest() -> None:
    # Four blocks alive together; three placed at 0, 3 and 5 leave gaps of 2 and 1 bytes.
    problem = problem_from_arrays(np.array([1, 1, 5, 1]), np.zeros(4, np.int64), np.ones(4, np.int64))
    known = (np.array([3]), np.array([[0, 3, 5, 0]]))
    decoder = Decoder.for_problem(problem)
    for best_fit, offset in ((False, 1), (True, 4)):
        _, offsets = decoder.decode_population(np.array([[0, 1, 2, 3]]), best_fit, known)
        assert offsets[0].tolist() == [0, 3, 5, offset]


def test_neighbour_lists_are_padded_to_whole_vectors_with_the_never_placed_block() -> None:
    problem = problem_from_arrays(np.ones(12, np.int64), np.zeros(12, np.int64), np.arange(1, 13))
    decoder = Decoder.for_problem(problem)  # every block conflicts with the 11 others
    lists = np.split(decoder.indices, decoder.indptr[1:-1])
    for b, padded in enumerate(lists):
        assert len(padded) == -(-11 // NEIGHBOUR_LANES) * NEIGHBOUR_LANES
        assert sorted(padded[:11].tolist()) == [j for j in range(12) if j != b]
        assert set(padded[11:].tolist()) <= {problem.n}


def deep_stack_problem(seed: int, alignment: int) -> tuple[Problem, np.ndarray]:
    """Small long-lived blocks placed last over ~550 short ones, 20-60 deep at any time.

    The long-lived blocks have more than ``SORT_MIN_RANGES`` placed neighbours and
    need 44-50 sweeps to climb the stack (seeds 0-4), so first-fit finishes them
    with its sorted pass.
    """
    rng = np.random.default_rng(seed)
    short, long_lived = SORT_MIN_RANGES + 40, 8
    lower = np.concatenate([np.arange(short), np.zeros(long_lived, np.int64)])
    upper = np.concatenate([np.arange(short) + rng.integers(20, 60, short), np.full(long_lived, short + 60)])
    sizes = np.concatenate([rng.integers(1, 100, short), rng.integers(1, 8, long_lived)]) * 8
    order = np.concatenate([rng.permutation(short), short + rng.permutation(long_lived)])
    return problem_from_arrays(sizes, lower, upper, alignment=alignment), order


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 8, 24]), st.booleans())
def test_first_fit_through_a_deep_stack_matches_the_plain_python_decoder(seed, alignment, wide) -> None:
    problem, order = deep_stack_problem(seed, alignment)
    problem = widened(problem) if wide else problem
    assert decode(problem, order).tolist() == first_fit_offsets(problem, tuple(order)).tolist()


@SETTINGS
@given(
    st.lists(st.integers(0, 2**40), min_size=0, max_size=300),
    st.integers(0, 2**40),
    st.integers(0, 300),
    st.sampled_from([np.int32, np.int64]),
)
def test_sorting_range_indices_by_start_matches_numpy(keys, outlier, bunched, dtype) -> None:
    """Spread keys take the bucket path; a run of close keys and one far outlier take the fallback."""
    keys = np.array(keys + list(range(7, 7 + bunched)) + [outlier], np.int64)
    if dtype is np.int32:
        keys = keys % 2**31
    keys = keys.astype(dtype)
    index_bits = max(1, len(keys).bit_length())
    index = np.random.default_rng(len(keys)).permutation(len(keys)).astype(np.int64)
    _decoder.sort_indices(index, len(keys), keys, index_bits)
    assert sorted(index.tolist()) == list(range(len(keys)))
    assert keys[index].tolist() == sorted(keys.tolist())


@SETTINGS
@given(graph_documents(), st.randoms(use_true_random=False))
def test_first_fit_matches_the_plain_python_decoder_on_graphs(doc, random) -> None:
    problem = build_problem(doc)
    order = random.sample(range(problem.n), problem.n)
    assert decode(problem, np.array(order)).tolist() == first_fit_offsets(problem, tuple(order)).tolist()


@SETTINGS
@given(interval_problems(max_blocks=10), st.data())
def test_decoding_from_a_known_prefix_equals_decoding_everything(problem, data) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    decoder = Decoder.for_problem(problem)
    parent = rng.permutation(problem.n)
    _, parent_offsets = decoder.decode_population(parent[None, :])
    prefix = data.draw(st.integers(0, problem.n))
    child = parent.copy()
    child[prefix:] = rng.permutation(child[prefix:])
    full = decoder.decode_population(child[None, :])
    partial = decoder.decode_population(child[None, :], template=(np.array([prefix]), parent_offsets))
    assert full[0].tolist() == partial[0].tolist()
    assert full[1].tolist() == partial[1].tolist()


@SETTINGS
@given(st.one_of(interval_problems(max_blocks=10), graph_documents().map(build_problem)), st.data())
def test_an_order_sorted_by_address_decodes_to_the_same_offsets(problem, data) -> None:
    """The GA stores re-sorted orders with the offsets of the order before sorting: they must agree."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    orders = np.array([rng.permutation(problem.n) for _ in range(4)])
    fitness = PopulationFitness(problem)
    by_address, scores = fitness(orders)
    assert by_address.tolist() == address_order(orders, scores.offsets).tolist()
    again, rescored = fitness(by_address)
    assert rescored.offsets.tolist() == scores.offsets.tolist()
    assert again.tolist() == by_address.tolist()
    ends = scores.offsets + problem.sizes
    assert scores.peaks.tolist() == ends.max(axis=1).tolist()
    above = np.clip(ends - np.maximum(scores.offsets, problem.lower_bound), 0, None)
    lifetimes = np.maximum(problem.upper - problem.lower, 1)
    assert np.allclose(scores.excess, (above * lifetimes).sum(axis=1))
