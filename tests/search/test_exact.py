"""The exact search against brute force: it finds the optimum, proves it, and never claims more."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaplanner import build_problem, find_violation, load_problem
from gaplanner.errors import InputError
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.baselines import first_fit
from gaplanner.search.exact import ExactSearch, ExactSettings, exact_search, searchable
from gaplanner.search.exact.dfs import FOUND, HEURISTICS, INFEASIBLE, PAUSED, RANK, RANK_NOW, SKYLINE
from gaplanner.search.exact.parts import components, make_part
from gaplanner.search.exact.parts_search import LARGE_PART_SECONDS_PER_PAIR, PartsSearch
from gaplanner.search.exact.probes import Probe, RestartingProbe
from gaplanner.search.exact.search import incumbent_plan
from gaplanner.search.exact.strands import RandomTargets
from gaplanner.solve import solve
from tests.oracles import brute_force_peaks
from tests.strategies import graph_documents, interval_problems

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ENOUGH = ExactSettings(time_limit=30.0)  # far more than a handful of blocks needs


def _check(problem, plan) -> None:
    assert find_violation(problem, plan.offsets, plan.peak) is None
    assert problem.lower_bound <= plan.lower_bound <= plan.peak
    assert plan.optimal == (plan.peak <= plan.lower_bound)
    assert plan.bound_origin == ("exact search" if plan.lower_bound > problem.lower_bound else
                                 "max load" if problem.interval_conflicts else "clique")  # fmt: skip
    assert plan.stop_reason == ("optimal" if plan.optimal else "time limit")


@SETTINGS
@given(interval_problems(max_blocks=6))
def test_interval_optimum_found_and_proved(problem) -> None:
    best, _ = brute_force_peaks(problem)
    plan = exact_search(problem, ENOUGH)
    _check(problem, plan)
    assert plan.peak == best
    assert plan.optimal and plan.lower_bound == best
    assert plan.bound_origin == ("exact search" if best > problem.lower_bound else "max load")


@SETTINGS
@given(graph_documents(max_ops=5))
def test_graph_optimum_found_and_proved(doc) -> None:
    problem = build_problem(doc)
    if problem.n > 6:
        return
    best, _ = brute_force_peaks(problem)
    plan = exact_search(problem, ENOUGH)
    _check(problem, plan)
    assert plan.peak == best
    assert plan.optimal and plan.lower_bound == best


@SETTINGS
@given(interval_problems(max_blocks=6))
def test_no_plan_below_the_optimum_is_found(problem) -> None:
    """Every part, probed one grain below its brute-force optimum, is proved infeasible."""
    best, _ = brute_force_peaks(problem)
    for blocks in components(problem):
        part = make_part(problem, blocks)
        sub = problem_from_arrays(
            problem.sizes[blocks], problem.lower[blocks], problem.upper[blocks],
            alignment=int(problem.alignments[0]),
        )  # fmt: skip
        sub_best, _ = brute_force_peaks(sub)
        assert sub_best <= best
        for heuristic in (*HEURISTICS, *SKYLINE):
            assert Probe(part, sub_best - 1, heuristic).run(10**7) == INFEASIBLE


@st.composite
def splitting_problems(draw: st.DrawFn):
    """Seven blocks of two sizes on a short time axis: many interchangeable blocks, and placements
    that leave the rest in pieces (each searched on its own, its blocks ordered afresh)."""
    n = 7
    lower = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)))
    length = np.array(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)))
    sizes = np.array(draw(st.lists(st.sampled_from([2, 3]), min_size=n, max_size=n)))
    return problem_from_arrays(sizes, lower, lower + length)


@pytest.mark.slow
@SETTINGS
@given(splitting_problems())
def test_probes_decide_the_optimum_through_splits_and_twins(problem) -> None:
    """At the optimum every heuristic's probe (and a restarting one) finds a plan; one below, none does."""
    parts = components(problem)
    if len(parts) > 1:
        return  # parts at the top are the exact search's, tested above
    best, _ = brute_force_peaks(problem)
    part = make_part(problem, parts[0])
    for heuristic in (*HEURISTICS, *SKYLINE):
        found = Probe(part, best, heuristic)
        assert found.run(10**7) == FOUND
        assert find_violation(problem, found.offsets, best) is None
        exhausted = Probe(part, best - 1, heuristic)
        assert exhausted.run(10**7) == INFEASIBLE
        assert (exhausted.s[RANK_NOW] == exhausted.p[RANK]).all()  # every split's ranks were undone
    restarting = RestartingProbe(part, best - 1, seed=3, unit=5)
    while restarting.run(10**7) == PAUSED:
        pass
    assert restarting.status == INFEASIBLE


@SETTINGS
@given(interval_problems(max_blocks=6))
def test_large_parts_keep_the_optimum_with_heavy_sections_only(problem) -> None:
    """Parts built as the large ones are (heavy maximal sections, cliques of one, no splitting, twins
    by lifetime) still find the brute-force optimum, prove it, and find nothing below it."""
    best, _ = brute_force_peaks(problem)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gaplanner.search.exact.parts.MAX_SECTION_MEMBERS", 0)  # every part counts as large
        plan = exact_search(problem, ENOUGH)
        parts = [make_part(problem, blocks) for blocks in components(problem)]
    _check(problem, plan)
    assert plan.peak == best and plan.optimal
    for part in parts:
        assert part.large
        members = np.zeros(len(part.sizes), int)
        np.add.at(members, part.clq_idx, 1)
        assert (members >= 1).all()  # every block lies in some clique
        lower, upper = problem.lower[part.blocks], problem.upper[part.blocks]
        for q in range(len(part.clq_ptr) - 1):
            clique = part.clq_idx[part.clq_ptr[q] : part.clq_ptr[q + 1]]
            assert lower[clique].max() < upper[clique].min()  # its members are live at one time
        heaviest = max(part.sizes[(lower <= t) & (upper > t)].sum() for t in lower.tolist())
        assert part.bound == heaviest
        sub = problem_from_arrays(part.sizes, lower, upper, alignment=int(problem.alignments[0]))
        sub_best, _ = brute_force_peaks(sub)
        for heuristic in (*HEURISTICS, *SKYLINE):
            found = Probe(part, sub_best, heuristic)
            assert found.run(10**7) == FOUND
            assert find_violation(sub, found.offsets, sub_best) is None
            assert Probe(part, sub_best - 1, heuristic).run(10**7) == INFEASIBLE


def test_a_large_part_is_searched_only_when_the_time_limit_leaves_room(benchmarks) -> None:
    """Building a large part takes time of its own: under a short limit its plan is kept as given."""
    problem = load_problem(benchmarks / "minimalloc" / "A.1048576.csv")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gaplanner.search.exact.parts_search.MAX_SECTION_MEMBERS", 0)  # A counts as large
        pairs = problem.conflicts.edge_count
        assert searchable(problem, seconds=pairs * LARGE_PART_SECONDS_PER_PAIR)
        assert searchable(problem)  # no time limit
        assert not searchable(problem, seconds=pairs * LARGE_PART_SECONDS_PER_PAIR / 2)
        patch.setattr("gaplanner.search.exact.parts_search.MAX_SEARCHED_PAIRS", pairs - 1)
        assert not searchable(problem)
        kept = first_fit(problem)
        plan = exact_search(problem, ExactSettings(time_limit=1.0), incumbent=kept.offsets)
    assert (plan.offsets == kept.offsets).all() and plan.elapsed < 1.0


def _brute_force_with_pins(problem) -> int:
    """Smallest peak over every aligned placement of the free blocks below the first-fit peak."""
    top = first_fit(problem).peak
    free = [b for b in range(problem.n) if problem.pinned[b] < 0]
    conflicts = {(int(a), int(b)) for a, b in zip(*problem.conflicts.edges(), strict=True)}
    offsets = problem.pinned.copy()
    ends = problem.pinned + problem.sizes  # of the pinned blocks; the free ones' are set as they are placed
    best = top

    def clash(b: int) -> bool:
        for c in range(problem.n):
            related = c != b and offsets[c] >= 0 and (min(b, c), max(b, c)) in conflicts
            if related and offsets[b] < ends[c] and offsets[c] < offsets[b] + problem.sizes[b]:
                return True
        return False

    def place(k: int, peak: int) -> None:
        nonlocal best
        if peak >= best:
            return
        if k == len(free):
            best = peak
            return
        b = free[k]
        for offset in range(0, best - int(problem.sizes[b]), int(problem.alignments[b])):
            offsets[b], ends[b] = offset, offset + problem.sizes[b]
            if not clash(b):
                place(k + 1, max(peak, offset + int(problem.sizes[b])))
        offsets[b] = -1

    place(0, int(np.where(problem.pinned >= 0, ends, 0).max()))
    return best


@SETTINGS
@given(interval_problems(max_blocks=4), st.data())
def test_pinned_blocks_stay_and_the_optimum_holds(problem, data) -> None:
    reference = first_fit(problem).offsets
    pins = data.draw(st.lists(st.booleans(), min_size=problem.n, max_size=problem.n))
    offsets = np.where(pins, reference, -1)
    pinned = problem_from_arrays(
        problem.sizes, problem.lower, problem.upper, alignment=int(problem.alignments[0]), offsets=offsets
    )
    plan = exact_search(pinned, ENOUGH)
    _check(pinned, plan)
    kept = offsets >= 0
    assert (plan.offsets[kept] == offsets[kept]).all()
    assert plan.peak == _brute_force_with_pins(pinned)
    assert plan.optimal


def test_interchangeable_blocks_keep_the_search_small() -> None:
    """Twelve identical blocks live at once and one odd one: one order of the twelve is tried."""
    sizes = np.array([3] * 12 + [5])
    problem = problem_from_arrays(sizes, np.zeros(13, int), np.r_[np.full(12, 4), 2])
    plan = exact_search(problem, ENOUGH)
    assert plan.optimal and plan.peak == 41
    assert plan.search is not None and plan.search.evaluations < 100


def test_multicore_example_is_optimal() -> None:
    problem = load_problem("example:multicore_fig1b")
    assert not problem.interval_conflicts
    best, _ = brute_force_peaks(problem) if problem.n <= 7 else (None, None)
    plan = solve(problem, "exact", ENOUGH)
    _check(problem, plan)
    assert plan.optimal
    if best is not None:
        assert plan.peak == best


def test_time_limit_is_honoured_and_nothing_unproved_is_claimed(benchmarks) -> None:
    problem = load_problem(benchmarks / "minimalloc" / "D.1048576.csv")  # open: not solved in a second
    exact_search(problem, ExactSettings(time_limit=0.05))  # loads the compiled code
    plan = exact_search(problem, ExactSettings(time_limit=1.0))
    assert plan.elapsed < 2.5  # its second and the set-up around it (the clock starts after loading)
    _check(problem, plan)
    assert plan.stop_reason == "time limit"
    assert not plan.optimal  # the best known plan of D lies above its bound


def test_a_stop_request_ends_the_search_and_progress_is_the_trace(benchmarks) -> None:
    problem = load_problem(benchmarks / "minimalloc" / "D.1048576.csv")  # open: the search would go on
    seen = []
    plan = exact_search(
        problem, ExactSettings(time_limit=60.0), on_progress=seen.append, should_stop=lambda: len(seen) >= 2
    )
    assert plan.stop_reason == "stopped by request" and plan.elapsed < 10
    assert seen == list(plan.trace) and len(seen) >= 2
    assert find_violation(problem, plan.offsets, plan.peak) is None


def test_work_budgets_shorter_than_a_round_search_as_one_long_budget(benchmarks) -> None:
    """Advanced a few hundred placements at a time (the GA beside it hands out such budgets), the
    probes take their turns across the budgets as in one long run: the same plans, found in the same
    order, and the same placements for each probe."""
    problem = load_problem(benchmarks / "minimalloc" / "D.1048576.csv")  # open: the probes find plans

    def advanced(budget: int) -> ExactSearch:
        search = ExactSearch.start(problem, time.perf_counter(), None)
        while search.nodes < 60_000:
            search.advance(time.perf_counter() + 60.0, nodes=min(60_000, search.nodes + budget))
        return search

    short, long = advanced(700), advanced(60_000)
    peaks = [event["peak"] for event in long.parts.events]
    assert len(set(peaks)) > 3 and [event["peak"] for event in short.parts.events] == peaks
    assert np.array_equal(short.best_offsets(), long.best_offsets())
    nodes = [[probe.nodes for probe in state.probes.values()] for state in long.parts.states]
    assert [[probe.nodes for probe in state.probes.values()] for state in short.parts.states] == nodes


@pytest.mark.parametrize("limit", [0, -1, float("nan"), float("inf"), "10", True])
def test_settings_refuse_bad_time_limits(limit) -> None:
    with pytest.raises(InputError) as caught:
        ExactSettings(time_limit=limit)
    assert caught.value.field == "time_limit"


def test_cli_plans_with_the_exact_search(tmp_path, capsys) -> None:
    from gaplanner.cli import main

    path = tmp_path / "small.csv"
    rows = ["id,lower,upper,size", "a,0,3,4", "b,1,4,4", "c,2,5,4", "d,3,6,8"]
    path.write_text("\n".join(rows) + "\n")
    assert main(["plan", str(path), "--algorithm", "exact", "--time-limit", "5", "--quiet"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["algorithm"] == "exact" and data["optimal"] and data["peak"] == data["lower_bound"]
    assert main(["plan", str(path), "--algorithm", "exact", "--time-limit", "nan"]) == 2
    capsys.readouterr()
    assert main(["plan", str(path), "--algorithm", "exact", "--threads", "2", "--time-limit", "5", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["optimal"]
    assert main(["plan", str(path), "--threads", "2"]) == 2  # the GA takes no threads: said, not ignored
    assert "--threads" in capsys.readouterr().err


def test_small_brute_force_agrees_with_itself() -> None:
    """The pinned oracle agrees with the order oracle when nothing is pinned."""
    for lower, length, sizes in itertools.islice(
        zip(
            itertools.product([0, 1, 2], repeat=3),
            itertools.product([1, 2, 3], repeat=3),
            itertools.product([1, 2, 3], repeat=3),
            strict=False,
        ),
        20,
    ):
        problem = problem_from_arrays(np.array(sizes), np.array(lower), np.array(lower) + np.array(length))
        assert _brute_force_with_pins(problem) == brute_force_peaks(problem)[0]


@SETTINGS
@given(interval_problems(max_blocks=6))
def test_random_targets_alone_close_on_the_optimum(problem) -> None:
    """Drawn targets alone converge: on a handful of blocks each probe answers within its placements,
    finding a plan at most its target or proving the target infeasible."""
    best, _ = brute_force_peaks(problem)
    portfolio = PartsSearch(problem, first_fit(problem).offsets)
    strand = RandomTargets(problem, first_fit(problem).offsets, parts_of=portfolio, seed=0)
    result = strand.run(time.perf_counter() + 30.0)
    assert find_violation(problem, result.offsets, best) is None
    assert result.closed and result.lower_bound == best


@SETTINGS
@given(graph_documents(max_ops=5), st.integers(0, 3))
@pytest.mark.slow
def test_two_threads_find_and_prove_the_optimum_of_graphs(doc, seed) -> None:
    problem = build_problem(doc)
    if problem.n > 6:
        return
    best, _ = brute_force_peaks(problem)
    plan = exact_search(problem, ExactSettings(time_limit=30.0, threads=2, seed=seed))
    _check(problem, plan)
    assert plan.peak == best and plan.optimal


def test_the_other_thread_s_plans_reach_the_plan_and_its_trace(benchmarks, monkeypatch) -> None:
    """With the portfolio idle, every better plan comes from the random targets' thread."""

    def idle(self, deadline, on_event):
        time.sleep(0.005)
        return True

    problem = load_problem(benchmarks / "minimalloc" / "J.1048576.csv")
    exact_search(problem, ExactSettings(time_limit=0.05, threads=1))  # loads the compiled code
    start = int((incumbent_plan(problem) + problem.sizes).max())
    monkeypatch.setattr(PartsSearch, "_round", idle)
    plan = exact_search(problem, ExactSettings(time_limit=2.0, threads=2, seed=1))
    _check(problem, plan)
    assert plan.peak < start and plan.trace[-1].best_peak == plan.peak
    assert plan.search is not None and plan.search.evaluations > 0  # the other thread's placements
    assert plan.elapsed < 3.5


def test_an_error_on_the_other_thread_is_raised(benchmarks, monkeypatch) -> None:
    def broken(self, deadline, on_event):
        raise RuntimeError("broken strand")

    monkeypatch.setattr(RandomTargets, "_round", broken)
    problem = load_problem(benchmarks / "minimalloc" / "J.1048576.csv")  # open: the search goes on
    started = time.perf_counter()
    with pytest.raises(RuntimeError, match="broken strand"):
        exact_search(problem, ExactSettings(time_limit=30.0, threads=2))
    assert time.perf_counter() - started < 10  # the portfolio stopped too


@pytest.mark.parametrize(
    ("field", "value"), [("threads", 0), ("threads", True), ("threads", 1.5), ("seed", "1")]
)
def test_settings_refuse_bad_threads_and_seeds(field, value) -> None:
    with pytest.raises(InputError) as caught:
        ExactSettings(**{field: value})
    assert caught.value.field == field


@pytest.mark.slow
def test_the_best_starting_plan_is_the_best_plan_known_from_the_start(benchmarks, monkeypatch) -> None:
    """With the probes idle, the plan is the best starting plan's (on iopddl_S the heaviest instant
    first, at the bound), not the plan the targets start from."""
    from gaplanner.search.starting_plans import starting_plans

    def idle(self, deadline, on_event):
        time.sleep(0.005)
        return True

    problem = load_problem(benchmarks / "large" / "iopddl_S_1.csv")
    best = min(plan.peak for plan in starting_plans(problem).values())
    assert best < int((incumbent_plan(problem) + problem.sizes).max())
    monkeypatch.setattr(PartsSearch, "_round", idle)
    # Time enough to make every starting plan on a slow machine (a first-fit decode of this input
    # takes seconds there); at the bound the search returns at once.
    plan = solve(problem, "exact", ExactSettings(time_limit=30.0, threads=1))
    assert plan.peak == best == problem.lower_bound and plan.stop_reason == "optimal"
    assert find_violation(problem, plan.offsets, plan.peak) is None


@SETTINGS
@given(interval_problems(max_blocks=12))
def test_the_parts_of_interval_lifetimes_are_the_conflict_graphs_components(problem) -> None:
    """Found from the lifetimes alone (no pairs), as a search over the overlapping pairs finds them."""
    lower, upper = problem.lower.tolist(), problem.upper.tolist()
    label: dict[int, int] = {}
    for start in range(problem.n):  # numbered by their first block
        if start in label:
            continue
        label[start], stack = len(set(label.values())), [start]
        while stack:
            a = stack.pop()
            for b in range(problem.n):
                if b not in label and max(lower[a], lower[b]) < min(upper[a], upper[b]):
                    label[b] = label[start]
                    stack.append(b)
    expected = [[b for b in range(problem.n) if label[b] == k] for k in range(len(set(label.values())))]
    assert [part.tolist() for part in components(problem)] == expected
