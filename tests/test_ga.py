"""The genetic search: reproducibility, never worse than the baselines, optimal on small instances."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaplanner import BASELINES, find_violation, load_problem, operators, problem_from_arrays
from gaplanner.errors import InputError
from gaplanner.fitness import PopulationFitness, Scores, _sort_by_address, shared_prefix
from gaplanner.ga import GENERATION, LOCAL_SEARCH, GASettings, Pacing, most_scored_per_generation, run_ga
from gaplanner.operators import MUTATIONS, PEAK_MOVE, HoleGuide, _crossover_all, mutate, ordered_crossover
from gaplanner.placement import decode
from tests.oracles import address_order, brute_force_peaks

QUICK = GASettings(population=16, generations=40, time_limit=None, stall_generations=None)


def random_problem(seed: int, n: int) -> object:
    rng = np.random.default_rng(seed)
    lower = rng.integers(0, 10, n)
    return problem_from_arrays(rng.integers(1, 10, n), lower, lower + rng.integers(1, 6, n))


def test_same_seed_same_plan_also_when_run_concurrently() -> None:
    problem = random_problem(3, 40)
    settings = GASettings(population=12, generations=30, time_limit=None, seed=7)
    alone = run_ga(problem, settings)
    results: dict[int, np.ndarray] = {}

    def search(slot: int) -> None:
        results[slot] = run_ga(problem, settings).offsets

    threads = [threading.Thread(target=search, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for offsets in results.values():
        assert np.array_equal(offsets, alone.offsets)


def test_same_seed_same_trace_of_peaks() -> None:
    problem = random_problem(4, 60)
    settings = GASettings(population=12, generations=25, time_limit=None, seed=1, islands=2)
    first = [(r.best_peak, r.mean_peak, r.evaluations) for r in run_ga(problem, settings).trace]
    second = [(r.best_peak, r.mean_peak, r.evaluations) for r in run_ga(problem, settings).trace]
    assert first == second


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 30))
def test_never_worse_than_the_best_baseline(seed: int, n: int) -> None:
    problem = random_problem(seed, n)
    plan = run_ga(problem, GASettings(population=8, generations=3, time_limit=None, seed=seed))
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert plan.peak <= min(baseline(problem).peak for baseline in BASELINES.values())
    assert plan.peak >= problem.lower_bound


def test_finds_the_brute_force_optimum_on_small_instances() -> None:
    for seed in range(12):
        problem = random_problem(seed, 6)
        best, _ = brute_force_peaks(problem)
        plan = run_ga(problem, GASettings(population=16, generations=30, time_limit=None, seed=seed))
        assert plan.peak == best, f"instance {seed}"


def test_stops_at_the_lower_bound_and_says_optimal() -> None:
    problem = load_problem("example:seed000_queue")
    plan = run_ga(problem, GASettings(generations=1000, time_limit=None))
    assert plan.peak == 5120 and plan.optimal
    assert plan.stop_reason == "lower bound reached"
    assert plan.search.generations == 0  # a baseline's plan already meets the bound


def test_trace_is_a_convergence_curve() -> None:
    problem = load_problem("zoo:densenet121@2")  # the baselines' plans are 16% above the bound
    plan = run_ga(problem, QUICK)
    trace = plan.trace
    assert len(trace) == plan.search.generations + 1 > 2
    best = [r.best_peak for r in trace]
    assert best == sorted(best, reverse=True) and best[0] > best[-1]  # elitism: never worse
    assert all(r.mean_peak >= r.best_peak for r in trace)
    evaluations = [r.evaluations for r in trace]
    assert evaluations == sorted(evaluations) and evaluations[0] == QUICK.population * QUICK.islands
    # The first generation's time is estimated from this bound (migrants are scored on arrival).
    bound = QUICK.islands * (most_scored_per_generation(QUICK) + QUICK.migrants)
    assert max(np.diff(evaluations)) <= bound
    assert best[-1] == plan.peak


def test_stop_request_ends_the_search_with_a_verified_plan() -> None:
    problem = random_problem(29, 100)
    assert min(baseline(problem).peak for baseline in BASELINES.values()) > problem.lower_bound
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 3

    plan = run_ga(problem, GASettings(generations=10_000, time_limit=None), should_stop=stop)
    assert plan.stop_reason in ("stopped by request", "lower bound reached")
    assert plan.search.generations <= 3
    assert find_violation(problem, plan.offsets, plan.peak) is None
    immediate = run_ga(problem, GASettings(generations=10_000, time_limit=None), should_stop=lambda: True)
    assert immediate.stop_reason == "stopped by request"
    assert immediate.search.generations == 0


def test_stall_limit() -> None:
    problem = random_problem(6, 20)
    plan = run_ga(problem, GASettings(generations=None, time_limit=None, stall_generations=15))
    if not plan.optimal:
        assert plan.stop_reason == "stalled"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (dict(population=2), "population"),
        (dict(generations=None, time_limit=None, stall_generations=None), None),
        (dict(elite=99), "elite"),
        (dict(time_limit=float("nan")), "time_limit"),
        (dict(time_limit=float("inf")), "time_limit"),
        (dict(time_limit=0), "time_limit"),
        (dict(generations=-1), "generations"),
        (dict(stall_generations=0), "stall_generations"),
        (dict(max_evaluations=0), "max_evaluations"),
        (dict(seed=-1), "seed"),
        (dict(migration_interval=0), "migration_interval"),
        (dict(tournament=0), "tournament"),
        (dict(crossover_rate=1.5), "crossover_rate"),
        (dict(hole_move_rate=float("nan")), "hole_move_rate"),
        (dict(hole_move_rate=0.6, peak_move_rate=0.6), "peak_move_rate"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(bad: dict, field: str | None) -> None:
    with pytest.raises(InputError) as refused:
        GASettings(**bad)
    assert refused.value.field == field


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_operators_keep_permutations(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    parents = np.array([rng.permutation(n) for _ in range(4)])
    pairs = rng.integers(0, 4, size=(6, 2))
    for keep_prefix in (True, False):
        for child in ordered_crossover(parents, pairs, rng, keep_prefix):
            assert sorted(child) == list(range(n))
    orders = np.array([rng.permutation(n) for _ in MUTATIONS])
    critical = rng.random((len(MUTATIONS), n)) < 0.3
    mutate(orders, np.arange(len(MUTATIONS)), np.array(list(MUTATIONS.values())), critical, rng)
    for order in orders:
        assert sorted(order) == list(range(n))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_hole_moves_keep_permutations(n: int, seed: int) -> None:
    problem = random_problem(seed, n)
    rng = np.random.default_rng(seed)
    parents = np.array([rng.permutation(n) for _ in range(6)])
    offsets = np.array([decode(problem, order) for order in parents])
    orders = parents.copy()
    operators.hole_moves(orders, np.arange(6), offsets, HoleGuide.for_problem(problem), rng)
    for order in orders:
        assert sorted(order) == list(range(n))


def test_hole_move_puts_the_lid_before_its_blockers() -> None:
    """X [0,6) sits at 6 over a hole at 3-6 when it is live with Z [0,3): Y [3,5) and W [5,6), both
    live over [5,8) and pushed up by V, keep it out. The move puts X just before Y. Y, which covers
    the most of the hole, always moves on to an earlier place; W, covering half as much, moves when
    its draw is below 1/2."""
    sizes, lower, upper = np.array([1, 3, 2, 1, 3]), np.array([0, 0, 5, 5, 6]), np.array([6, 3, 8, 8, 8])
    problem = problem_from_arrays(sizes, lower, upper)
    x, z, y, w, v = range(5)
    parent = np.array([z, v, y, w, x])
    offsets = decode(problem, parent)
    assert offsets.tolist() == [6, 0, 3, 5, 0]
    g = HoleGuide.for_problem(problem)
    moved = []
    for w_draw in (0.99, 0.0):
        order, draws = parent.copy(), np.full(2 + 2 * operators.HOLE_BLOCKERS, 0.99)
        draws[:4], draws[4] = (0.0, 0.0, 0.99, 0.0), w_draw
        operators._hole_move(
            order, offsets, g.sizes, g.lower, g.upper, g.start_load, g.indptr, g.indices, draws
        )
        moved.append(order.tolist())
    assert moved == [[y, z, v, x, w], [y, w, z, v, x]]


def test_ordered_crossover_keeps_a_slice_and_the_other_parents_order() -> None:
    parents = np.array([np.arange(10), np.arange(10)[::-1]])
    child = np.empty((1, 10), np.int64)
    _crossover_all(parents, np.array([[0, 1]]), np.array([[3, 6]]), child)
    assert child[0].tolist() == [9, 8, 7, 3, 4, 5, 6, 2, 1, 0]


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_prefix_crossover_keeps_a_prefix_of_the_first_parent_and_the_second_ones_order(
    n: int, seed: int
) -> None:
    """Past the part it shares with its first parent, a child is the second parent's order of the
    other blocks."""
    rng = np.random.default_rng(seed)
    parents = np.array([rng.permutation(n) for _ in range(3)])
    pairs = rng.integers(0, 3, size=(30, 2))
    children = ordered_crossover(parents, pairs, rng)
    kept = shared_prefix(children, parents[pairs[:, 0]])
    for child, (first, second), b in zip(children, pairs, kept, strict=True):
        rest = [g for g in parents[second] if g not in set(parents[first][:b])]
        assert child[b:].tolist() == rest
    if n >= 10:  # the cuts are uniform over 0..n: thirty children do not all keep one length
        assert kept.max() > kept.min()


def test_peak_move_moves_a_critical_block_earlier() -> None:
    rng = np.random.default_rng(0)
    orders = np.tile(np.arange(8), (20, 1))
    critical = np.zeros((20, 8), bool)
    critical[:, 7] = True
    mutate(orders, np.arange(20), np.full(20, PEAK_MOVE), critical, rng)
    for order in orders:
        assert order[-1] != 7 and sorted(order) == list(range(8))


def test_fitness_matches_decoding_and_sorting_by_address_keeps_the_offsets() -> None:
    problem = load_problem("example:multicore_fig1b")
    rng = np.random.default_rng(0)
    orders = np.array([rng.permutation(problem.n) for _ in range(20)])
    fitness = PopulationFitness(problem)
    by_address, scores = fitness(orders)
    for order, peak, offsets in zip(orders, scores.peaks, scores.offsets, strict=True):
        assert np.array_equal(decode(problem, order), offsets)
        assert peak == (offsets + problem.sizes).max()
    assert np.all((scores.contiguity >= 0) & (scores.contiguity <= 1))
    assert np.array_equal(by_address, address_order(orders, scores.offsets))
    again, rescored = fitness(by_address)
    assert np.array_equal(rescored.offsets, scores.offsets)
    assert np.array_equal(again, by_address)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200), st.integers(0, 2**32 - 1), st.integers(0, 400), st.integers(1, 8))
def test_sort_by_address_is_a_stable_sort(n, seed, moved, distinct) -> None:
    """Nearly sorted rows (the insertion path) and shuffled ones (the merge-sort fallback), with ties."""
    rng = np.random.default_rng(seed)
    offsets = rng.integers(0, distinct, n)
    order = np.argsort(offsets, kind="stable")
    for _ in range(moved):  # a few genes moved, as in a child; many moves make it random
        i, j = rng.integers(0, n, 2)
        order[[i, j]] = order[[j, i]]
    out = np.empty_like(order)
    _sort_by_address(order, offsets, out)
    assert np.array_equal(out, order[np.argsort(offsets[order], kind="stable")])


def test_ranking_breaks_equal_peaks_by_excess_then_contiguity() -> None:
    offsets = np.zeros((4, 1), np.int64)
    scores = Scores(
        peaks=np.array([7, 7, 6, 7]),
        excess=np.array([5.0, 2.0, 9.0, 2.0]),
        contiguity=np.array([0.9, 0.1, 0.0, 0.5]),
        offsets=offsets,
    )
    assert scores.ranking().tolist() == [2, 3, 1, 0]
    assert scores.ranking(use_excess=False).tolist() == [2, 0, 3, 1]
    assert scores.ranking(use_excess=False, use_contiguity=False).tolist() == [2, 0, 1, 3]


def test_pacing_starts_only_a_step_that_fits_the_time_left() -> None:
    pacing = Pacing.for_search(GASettings(), generation_seconds=6.0)
    assert pacing.local_search_seconds == pytest.approx(6.0 * 2 / most_scored_per_generation(GASettings()))
    assert pacing.next_step(None) == pacing.next_step(7.0) == GENERATION
    assert pacing.next_step(5.0) == LOCAL_SEARCH  # a generation would end past the limit, a local search not
    assert pacing.next_step(0.1) is None
    pacing.measured(LOCAL_SEARCH, 0.05)
    assert pacing.next_step(0.1) == LOCAL_SEARCH
    assert Pacing.for_search(GASettings(local_search=0), 6.0).next_step(5.0) is None


def test_a_search_whose_generations_no_longer_fit_searches_locally_until_the_limit(monkeypatch) -> None:
    problem = load_problem("zoo:densenet121@4")  # 1.10 after 10 s of search: no bound reached here
    monkeypatch.setattr(Pacing, "for_search", classmethod(lambda cls, settings, seconds: cls(1e9, 0.0, True)))
    settings = replace(QUICK, generations=None, stall_generations=None, time_limit=2.0, islands=1)
    started = time.perf_counter()
    plan = run_ga(problem, settings)
    trace = plan.trace
    assert plan.stop_reason == "time limit" and time.perf_counter() - started < 10.0
    assert plan.search.generations == len(trace) - 1 > 2
    steps = np.diff([r.evaluations for r in trace])
    assert set(steps) == {QUICK.local_search}  # local searches only: a generation scores 14 children or more
    assert trace[-1].best_peak == plan.peak <= trace[0].best_peak
    assert find_violation(problem, plan.offsets) is None
