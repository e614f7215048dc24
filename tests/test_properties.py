"""Property tests on small random instances against brute-force oracles."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaplanner import BASELINES, build_problem, decode, find_violation, parse_document, problem_from_arrays
from gaplanner.conflicts import conflicts_from_intervals
from tests.oracles import brute_force_peaks, conflict_pairs, graph_conflicts

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def interval_problems(draw: st.DrawFn, max_blocks: int = 6, alignment: int | None = None):
    n = draw(st.integers(1, max_blocks))
    lower = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    align = alignment or draw(st.sampled_from([1, 1, 2, 4]))
    return problem_from_arrays(
        np.array(sizes), np.array(lower), np.array(lower) + np.array(length), alignment=align
    )


@st.composite
def graph_documents(draw: st.DrawFn, max_ops: int = 7):
    """Random acyclic multi-core graphs: operators read tensors written earlier in the list."""
    n_ops = draw(st.integers(1, max_ops))
    cores = draw(st.integers(1, 3))
    tensors: list[dict] = [{"id": "in0", "size": draw(st.integers(1, 9))}]
    operators: list[dict] = []
    for k in range(n_ops):
        available = [t["id"] for t in tensors]
        inputs = draw(st.lists(st.sampled_from(available), max_size=3, unique=True))
        outputs = [f"t{k}_{m}" for m in range(draw(st.integers(0 if inputs else 1, 2)))]
        tensors += [{"id": o, "size": draw(st.integers(1, 9))} for o in outputs]
        operators.append(
            {"id": f"op{k}", "inputs": inputs, "outputs": outputs, "core": draw(st.integers(0, cores - 1))}
        )
    used = {t for op in operators for t in op["inputs"] + op["outputs"]}
    doc = {"tensors": [t for t in tensors if t["id"] in used], "operators": operators}
    if n_ops > 1 and draw(st.booleans()):
        a, b = sorted(draw(st.lists(st.integers(0, n_ops - 1), min_size=2, max_size=2, unique=True)))
        doc["sync"] = [{"before": f"op{a}", "after": f"op{b}"}]
    return parse_document(doc)


@SETTINGS
@given(interval_problems(max_blocks=12))
def test_interval_conflicts_are_exactly_the_overlapping_pairs(problem) -> None:
    expected = {
        frozenset((problem.ids[i], problem.ids[j]))
        for i in range(problem.n)
        for j in range(i + 1, problem.n)
        if problem.lower[i] < problem.upper[j] and problem.lower[j] < problem.upper[i]
    }
    assert conflict_pairs(problem) == expected


@SETTINGS
@given(graph_documents())
def test_graph_conflicts_follow_the_happens_before_definition(doc) -> None:
    problem = build_problem(doc)
    assert conflict_pairs(problem) == graph_conflicts(doc)


@SETTINGS
@given(graph_documents())
def test_conflicting_blocks_overlap_on_their_reuse_intervals(doc) -> None:
    """The time walk of best-fit-coalescing is only safe if this holds."""
    problem = build_problem(doc)
    index = {bid: i for i, bid in enumerate(problem.ids)}
    for pair in conflict_pairs(problem):
        a, b = (index[x] for x in pair)
        assert problem.lower[a] < problem.reuse_at[b] and problem.lower[b] < problem.reuse_at[a]


@SETTINGS
@given(interval_problems(max_blocks=6))
def test_baselines_between_lower_bound_and_brute_force(problem) -> None:
    best, worst = brute_force_peaks(problem)
    assert problem.lower_bound <= best
    for name, baseline in BASELINES.items():
        plan = baseline(problem)
        assert find_violation(problem, plan.offsets, plan.peak) is None
        assert best <= plan.peak <= problem.total_size + int(problem.alignments.max()) * problem.n, name
    assert best <= BASELINES["first-fit"](problem).peak <= worst


@SETTINGS
@given(graph_documents(max_ops=5))
def test_graph_baselines_verify_and_respect_the_bound(doc) -> None:
    problem = build_problem(doc)
    for baseline in BASELINES.values():
        plan = baseline(problem)
        assert find_violation(problem, plan.offsets, plan.peak) is None
        assert problem.lower_bound <= plan.peak
    if problem.n <= 6:
        best, _ = brute_force_peaks(problem)
        assert problem.lower_bound <= best <= min(b(problem).peak for b in BASELINES.values())


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
    from gaplanner.verify import _edge_overlap, _interval_overlap

    offsets = np.array(raw_offsets[: problem.n], np.int64)
    assert (_interval_overlap(problem, offsets) is None) == (_edge_overlap(problem, offsets) is None)


def test_interval_sweep_scales_linearly_in_edges() -> None:
    rng = np.random.default_rng(0)
    lower = rng.integers(0, 10_000, 5_000)
    upper = lower + rng.integers(1, 50, 5_000)
    graph = conflicts_from_intervals(lower, upper)
    order = np.argsort(lower)
    lo, up = lower[order], upper[order]
    expected = sum(int(np.searchsorted(lo, up[i], "left") - i - 1) for i in range(len(lo)))
    assert graph.edge_count == expected
