"""The multi-core split transform: Figure 1b, bytes per tensor, plans that verify, sane bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaplanner import InputError, build_problem, load_problem, parse_document, verify
from gaplanner.documents.schema import Document
from gaplanner.documents.split import balanced, plan_split, split_graph
from gaplanner.documents.zoo import zoo_document, zoo_names
from gaplanner.problem.problem import Problem
from gaplanner.search.baselines import BASELINES
from tests.oracles import conflict_pairs, graph_conflicts

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def chain_fig1a() -> Document:
    """Figure 1a of seed 003 (NHWC): D0 -> conv -> D1 -> pool -> D2, on one core."""
    return parse_document(
        {
            "alignment": 64,
            "tensors": [
                {"id": "D0", "shape": [1, 56, 56, 32], "dtype": "float16"},
                {"id": "D1", "shape": [1, 56, 56, 64], "dtype": "float16"},
                {"id": "D2", "shape": [1, 28, 28, 64], "dtype": "float16"},
            ],
            "operators": [
                {"id": "conv", "inputs": ["D0"], "outputs": ["D1"]},
                {"id": "pool", "inputs": ["D1"], "outputs": ["D2"]},
            ],
        }
    )


def test_splitting_figure_1a_over_two_cores_gives_figure_1b() -> None:
    split = split_graph(chain_fig1a(), 2)
    fig1b = load_problem("example:multicore_fig1b")
    names = {
        "D0": "D0",
        "D0@0": "D00",
        "D0@1": "D01",
        "D1@0": "D10",
        "D1@1": "D11",
        "D2@0": "D20",
        "D2@1": "D21",
        "D2": "D2",
    }
    ops = [
        (op.core, [names[t] for t in op.inputs], [names[t] for t in op.outputs])
        for op in split.operators or []
    ]
    assert ops == [
        (0, ["D0"], ["D00", "D01"]),  # A.split
        (0, ["D00"], ["D10"]),  # A.conv
        (1, ["D01"], ["D11"]),  # B.conv
        (0, ["D10"], ["D20"]),  # A.pool
        (1, ["D11"], ["D21"]),  # B.pool
        (0, ["D20", "D21"], ["D2"]),  # A.combine
    ]
    assert [op.id for op in split.operators or []] == [
        "D0/split",
        "conv@0",
        "conv@1",
        "pool@0",
        "pool@1",
        "D2/combine",
    ]
    part_of = {names[t.id]: t.part_of and names[t.part_of] for t in split.tensors or []}
    assert part_of == {
        "D0": None,
        "D00": "D0",
        "D01": "D0",
        "D10": None,  # no whole D1 exists, as in the figure
        "D11": None,
        "D20": "D2",
        "D21": "D2",
        "D2": None,
    }
    ours = build_problem(split)
    sizes = dict(zip([names[i] for i in ours.ids], ours.sizes.tolist(), strict=True))
    assert sizes == dict(zip(fig1b.ids, fig1b.sizes.tolist(), strict=True))
    assert {frozenset(names[i] for i in pair) for pair in conflict_pairs(ours)} == conflict_pairs(fig1b)
    assert ours.lower_bound == fig1b.lower_bound


@pytest.mark.parametrize(
    ("total", "parts", "expected"), [(10, 4, (3, 3, 2, 2)), (8, 2, (4, 4)), (7, 7, (1,) * 7), (5, 1, (5,))]
)
def test_balanced_cuts(total: int, parts: int, expected: tuple[int, ...]) -> None:
    assert balanced(total, parts) == expected


def test_uneven_and_short_dimensions() -> None:
    doc = parse_document(
        {
            "tensors": [
                {"id": "x", "shape": [1, 7, 3], "dtype": "float32"},  # H=7 over 4 cores: 2, 2, 2, 1
                {"id": "h", "shape": [1, 7, 5], "dtype": "float32"},  # cut like x: a reads x in parts
                {"id": "y", "shape": [1, 3], "dtype": "int8"},  # only 3 elements: 3 parts
                {"id": "z", "size": 10},  # size only: cut in bytes, 3, 3, 2, 2
                {"id": "s", "shape": [], "dtype": "float64"},  # a scalar cannot be cut
            ],
            "operators": [
                {"id": "a", "inputs": ["x"], "outputs": ["h"]},
                {"id": "b", "inputs": ["h"], "outputs": ["y"]},
                {"id": "c", "inputs": ["y"], "outputs": ["z"]},
                {"id": "d", "inputs": ["z"], "outputs": ["s"]},
            ],
        }
    )
    split = split_graph(doc, 4)
    tensors = {t.id: t for t in split.tensors or []}
    assert [tensors[f"x@{c}"].shape for c in range(4)] == [[1, 2, 3], [1, 2, 3], [1, 2, 3], [1, 1, 3]]
    assert [tensors[f"h@{c}"].shape for c in range(4)] == [[1, 2, 5], [1, 2, 5], [1, 2, 5], [1, 1, 5]]
    assert [tensors[f"y@{c}"].shape for c in range(3)] == [[1, 1]] * 3 and "y@3" not in tensors
    assert [tensors[f"z@{c}"].nbytes for c in range(4)] == [3, 3, 2, 2]
    assert "s" in tensors and "s@0" not in tensors
    ops = [(op.id, op.core, op.inputs, op.outputs) for op in split.operators or []]
    assert ops == [
        ("x/split", 0, ["x"], ["x@0", "x@1", "x@2", "x@3"]),
        *[(f"a@{c}", c, [f"x@{c}"], [f"h@{c}"]) for c in range(4)],  # same cut: data stays on its core
        ("h/combine", 0, ["h@0", "h@1", "h@2", "h@3"], ["h"]),  # y is cut differently: h is read whole
        *[(f"b@{c}", c, ["h"], [f"y@{c}"]) for c in range(3)],  # y has 3 elements: 3 copies of b
        ("y/combine", 0, ["y@0", "y@1", "y@2"], ["y"]),
        *[(f"c@{c}", c, ["y"], [f"z@{c}"]) for c in range(4)],
        ("z/combine", 0, ["z@0", "z@1", "z@2", "z@3"], ["z"]),
        ("d", 0, ["z"], ["s"]),  # the scalar's writer runs whole on core 0
    ]
    assert tensors["h@0"].part_of == "h" and tensors["x@3"].part_of == "x"
    problem = build_problem(split)
    assert conflict_pairs(problem) == graph_conflicts(split)
    _check_bytes_preserved(doc, split, 4)


@pytest.mark.parametrize("name", zoo_names())
@pytest.mark.parametrize("cores", [2, 3, 4])
def test_split_preserves_the_bytes_of_every_zoo_tensor(name: str, cores: int) -> None:
    base = zoo_document(name)
    split = split_graph(base, cores)
    _check_bytes_preserved(base, split, cores)


@pytest.mark.parametrize("name", zoo_names())
@pytest.mark.parametrize("cores", [2, 4])
def test_every_baseline_plan_on_a_split_zoo_network_verifies(name: str, cores: int) -> None:
    problem = load_problem(f"zoo:{name}@{cores}")
    assert not problem.interval_conflicts
    for algorithm, solve in BASELINES.items():
        plan = solve(problem)
        verify(problem, plan.offsets)
        assert plan.peak >= problem.lower_bound, algorithm
    _check_lower_bound_is_sane(problem)


@pytest.mark.parametrize("name", zoo_names())
@pytest.mark.parametrize("cores", [2, 4])
def test_split_zoo_graph_keeps_the_single_core_memory_pressure(name: str, cores: int) -> None:
    """The cores run unsynchronised between the input split and the first combine, so the parts
    live at one single-core step on every core conflict pairwise: a clique at least as heavy as the
    single-core lower bound exists (the max-load bound of the split graph is weaker than that)."""
    single = load_problem(f"zoo:{name}")
    split = load_problem(f"zoo:{name}@{cores}")
    clique = _greedy_clique(split)
    _assert_clique(split, clique)
    weight = int(split.sizes[clique].sum())
    assert weight >= single.lower_bound
    assert weight >= split.lower_bound
    for solve in BASELINES.values():
        assert solve(split).peak >= weight


def test_densenet121_on_four_cores_builds() -> None:
    problem = load_problem("zoo:densenet121@4")
    assert problem.n == 1719 and problem.conflicts.edge_count == 1_097_118


@pytest.mark.parametrize(
    ("spec", "blocks", "lower_bound"),
    [
        ("resnet50@2", 357, 9_633_792),
        ("resnet50@4", 711, 9_633_792),
        ("mobilenetv1@2", 186, 6_480_128),
        ("googlenet@4", 340, 4_014_080),
        ("densenet121@2", 861, 8_429_568),
        ("inceptionv3@4", 1255, 11_063_808),
    ],
)
def test_split_zoo_blocks_and_bounds_are_pinned(spec: str, blocks: int, lower_bound: int) -> None:
    problem = load_problem(f"zoo:{spec}")
    assert (problem.n, problem.lower_bound) == (blocks, lower_bound)
    assert problem.name == spec


def test_resnet50_split_structure() -> None:
    doc = zoo_document("resnet50@2")
    ops = {op.id: op for op in doc.operators or []}
    assert ops["input_layer/split"].outputs == ["input_layer@0", "input_layer@1"]
    assert ops["conv1_conv@1"].core == 1 and ops["conv1_conv@1"].inputs == ["conv1_pad@1"]
    assert ops["conv2_block1_add@0"].inputs == ["conv2_block1_0_bn@0", "conv2_block1_3_bn@0"]
    # Global pooling changes the layout: its input is gathered and read whole by both copies.
    assert ops["conv5_block3_out/combine"].core == 0
    assert ops["avg_pool@1"].inputs == ["conv5_block3_out"]
    assert [op.id for op in doc.operators or [] if "/" in op.id] == [
        "input_layer/split",
        "conv5_block3_out/combine",
        "predictions/combine",
    ]


def test_one_core_is_the_identity() -> None:
    doc = zoo_document("googlenet")
    assert split_graph(doc, 1) is doc


def test_bad_splits_are_input_errors() -> None:
    with pytest.raises(InputError, match="buffer lists") as caught:
        split_graph(parse_document({"buffers": [{"id": "a", "lower": 0, "upper": 1, "size": 4}]}), 2)
    assert caught.value.field == "buffers"
    fig1b = parse_document(_read_example("multicore_fig1b"))
    with pytest.raises(InputError, match="already multi-core") as caught:
        split_graph(fig1b, 2)
    assert caught.value.field == "operators[2].core"
    with pytest.raises(InputError, match="positive integer"):
        split_graph(chain_fig1a(), 0)
    clash = parse_document(
        {
            "tensors": [{"id": "a", "size": 8}, {"id": "b", "size": 8}, {"id": "b@0", "size": 8}],
            "operators": [
                {"id": "p", "inputs": ["a"], "outputs": ["b"]},
                {"id": "q", "inputs": ["b"], "outputs": ["b@0"]},
            ],
        }
    )
    with pytest.raises(InputError, match="'b@0' twice"):
        split_graph(clash, 2)
    cyclic = parse_document(
        {
            "tensors": [{"id": "a", "size": 8}, {"id": "b", "size": 8}],
            "operators": [
                {"id": "p", "inputs": ["b"], "outputs": ["a"]},
                {"id": "q", "inputs": ["a"], "outputs": ["b"]},
            ],
        }
    )
    with pytest.raises(InputError, match="cycle"):
        split_graph(cyclic, 2)


# --- random graphs ----------------------------------------------------------------------------------


@st.composite
def single_core_graphs(draw: st.DrawFn, max_ops: int = 6) -> Document:
    """Random single-core graphs with shaped (rank 0-4, short dims included) and size-only tensors."""

    def tensor(tid: str) -> dict:
        if draw(st.integers(0, 4)) == 0:
            return {"id": tid, "size": draw(st.integers(1, 40))}
        rank = draw(st.integers(0, 4))
        shape = draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank))
        return {"id": tid, "shape": shape, "dtype": draw(st.sampled_from(["float32", "int8", "float16"]))}

    tensors = [tensor("in0")]
    operators = []
    for k in range(draw(st.integers(1, max_ops))):
        available = [t["id"] for t in tensors]
        inputs = draw(st.lists(st.sampled_from(available), max_size=3, unique=True))
        outputs = [f"t{k}_{m}" for m in range(draw(st.integers(0 if inputs else 1, 2)))]
        tensors += [tensor(o) for o in outputs]
        operators.append({"id": f"op{k}", "inputs": inputs, "outputs": outputs})
    used = {t for op in operators for t in op["inputs"] + op["outputs"]}
    alignment = draw(st.sampled_from([1, 1, 4, 64]))
    return parse_document(
        {"alignment": alignment, "tensors": [t for t in tensors if t["id"] in used], "operators": operators}
    )


@SETTINGS
@given(single_core_graphs(), st.integers(1, 4))
def test_random_split_graphs_preserve_bytes_and_plan_verifiably(doc: Document, cores: int) -> None:
    split = split_graph(doc, cores)
    _check_bytes_preserved(doc, split, cores)
    problem = build_problem(split)
    for solve in BASELINES.values():
        plan = solve(problem)
        verify(problem, plan.offsets)
        assert plan.peak >= problem.lower_bound
    _check_lower_bound_is_sane(problem)


@SETTINGS
@given(single_core_graphs(max_ops=4), st.integers(2, 3))
def test_random_split_graph_conflicts_match_the_definition(doc: Document, cores: int) -> None:
    split = split_graph(doc, cores)
    assert conflict_pairs(build_problem(split)) == graph_conflicts(split)


# --- helpers ----------------------------------------------------------------------------------------


def _read_example(name: str) -> dict:
    import json
    from importlib import resources

    return json.loads((resources.files("gaplanner.documents") / "examples" / f"{name}.json").read_text())


def _check_bytes_preserved(base: Document, split: Document, cores: int) -> None:
    plan = plan_split(base, cores)
    out = {t.id: t for t in split.tensors or []}
    represented: set[str] = set()
    for tensor in base.tensors or []:
        parts = plan.part_ids(tensor.id)
        assert plan.whole[tensor.id] or parts, tensor.id  # every tensor is still somewhere
        if plan.whole[tensor.id]:
            assert out[tensor.id] == tensor  # the whole tensor is unchanged
            represented.add(tensor.id)
        if parts:
            assert 2 <= len(parts) <= cores
            assert sum(out[p].nbytes for p in parts) == tensor.nbytes
            expected_part_of = tensor.id if plan.whole[tensor.id] else None
            assert all(out[p].part_of == expected_part_of for p in parts)
            if tensor.shape is not None:  # cut along one dimension only
                for p in parts:
                    shape = out[p].shape
                    assert shape is not None and len(shape) == len(tensor.shape)
                    assert sum(a != b for a, b in zip(shape, tensor.shape, strict=True)) <= 1
            represented.update(parts)
    assert represented == set(out)  # nothing else was made
    assert all(op.core < cores for op in split.operators or [])


def _check_lower_bound_is_sane(problem: Problem) -> None:
    assert int(problem.sizes.max()) <= problem.lower_bound <= problem.total_size
    # Blocks live at one position of the bound's linear extension conflict pairwise (bounds.py).
    pairs = conflict_pairs(problem) if problem.n <= 60 else None
    for t in np.unique(problem.lower)[:50]:
        live = np.flatnonzero((problem.lower <= t) & (t < problem.upper))
        assert int(problem.sizes[live].sum()) <= problem.lower_bound
        if pairs is not None:
            ids = [problem.ids[i] for i in live]
            assert all(frozenset((a, b)) in pairs for k, a in enumerate(ids) for b in ids[k + 1 :])


def _greedy_clique(problem: Problem) -> np.ndarray:
    """A heavy clique: each position's live set, greedily extended by the heaviest common neighbour."""
    neighbours = [set(problem.conflicts.neighbors(i).tolist()) for i in range(problem.n)]
    best: list[int] = []
    best_weight = -1
    for t in np.unique(problem.lower):
        clique = np.flatnonzero((problem.lower <= t) & (t < problem.upper)).tolist()
        candidates = set.intersection(*(neighbours[i] for i in clique)) - set(clique) if clique else set()
        while candidates:
            j = max(candidates, key=lambda j: (problem.sizes[j], -j))
            clique.append(j)
            candidates &= neighbours[j]
        weight = int(problem.sizes[clique].sum())
        if weight > best_weight:
            best, best_weight = clique, weight
    return np.array(sorted(best))


def _assert_clique(problem: Problem, clique: np.ndarray) -> None:
    members = set(clique.tolist())
    for i in clique:
        assert members - {int(i)} <= set(problem.conflicts.neighbors(int(i)).tolist())
