"""The runtime's rules (outputs, views, in-place writes, workspaces, pinned blocks) against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gaplanner import InputError, PlanError, build_problem, parse_document
from gaplanner.documents.rules import Rules
from gaplanner.plans.plan import make_plan
from gaplanner.plans.tensor_check import check_tensor_plan
from gaplanner.search.baselines import BASELINES
from gaplanner.search.decoder import decode
from tests.oracles import RulesOracle

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALL_RULES = [Rules(inplace=c) for c in ("auto", "always", "never")] + [
    Rules(views=False),
    Rules(keep_outputs=False),
]


@st.composite
def graphs_with_aliases(draw: st.DrawFn, max_ops: int = 4, max_cores: int = 2):
    """Small random graphs whose operators declare views, in-place chances and workspaces."""
    n_ops = draw(st.integers(1, max_ops))
    cores = draw(st.integers(1, max_cores))
    sizes = {"in0": draw(st.integers(1, 6))}
    operators: list[dict] = []
    for k in range(n_ops):
        inputs = draw(st.lists(st.sampled_from(sorted(sizes)), max_size=2, unique=True))
        n_out = draw(st.integers(0 if inputs else 1, 2))
        outputs = [f"t{k}_{m}" for m in range(n_out)]
        op: dict = {
            "id": f"op{k}",
            "inputs": inputs,
            "outputs": outputs,
            "core": draw(st.integers(0, cores - 1)),
        }
        for out in outputs:
            kind = draw(st.sampled_from(["plain", "view", "inplace"] if inputs else ["plain"]))
            host = draw(st.sampled_from(inputs)) if inputs else None
            if kind == "view":
                sizes[out] = sizes[host]
                op["views"] = {out: host}
            else:
                sizes[out] = draw(st.integers(1, 6))
                if kind == "inplace":
                    op.setdefault("inplace", {})[out] = inputs
        if draw(st.integers(0, 4)) == 0:
            op["workspace"] = draw(st.integers(1, 4))
        if len(op.get("views", {})) > 1 or set(op.get("views", {})) & set(op.get("inplace", {})):
            op.pop("inplace", None)
        operators.append(op)
    used = {t for op in operators for t in op["inputs"] + op["outputs"]}
    doc = {"tensors": [{"id": t, "size": s} for t, s in sizes.items() if t in used], "operators": operators}
    written = [t for op in operators for t in op["outputs"]]
    if written and draw(st.booleans()):
        doc["outputs"] = draw(st.lists(st.sampled_from(written), min_size=1, max_size=2, unique=True))
    return parse_document(doc)


def tensor_offsets(plan) -> dict[str, int]:
    return plan.tensor_offsets()


@SETTINGS
@given(graphs_with_aliases(), st.sampled_from(ALL_RULES))
def test_every_plan_keeps_the_rules_and_no_plan_beats_the_brute_force_optimum(doc, rules) -> None:
    problem = build_problem(doc, rules=rules)
    oracle = RulesOracle(doc, rules)
    assume(len(oracle.sizes) <= 7)
    optimum = oracle.optimum()
    assert problem.lower_bound <= optimum  # the bound holds whatever in-place writes a plan takes
    for name, algorithm in BASELINES.items():
        plan = algorithm(problem)
        assert oracle.violation(tensor_offsets(plan)) is None, name
        assert plan.peak >= optimum, name
        if plan.optimal:
            assert plan.peak == optimum, name


@SETTINGS
@given(graphs_with_aliases(), st.sampled_from(ALL_RULES), st.data())
def test_the_model_check_agrees_with_the_pairwise_oracle_on_any_offsets(doc, rules, data) -> None:
    oracle = RulesOracle(doc, rules)
    ids = list(oracle.sizes)
    offsets = {t: data.draw(st.integers(0, 8), label=t) for t in ids}
    for view, host in oracle.view_of.items():  # mostly views in place, sometimes not
        if data.draw(st.integers(0, 3), label="keep view") > 0:
            offsets[view] = offsets[oracle.view_root(host)]
    expected = oracle.violation(offsets)
    found = check_tensor_plan(doc, rules, offsets)
    assert (expected is None) == (found is None), (expected, found)


@pytest.mark.slow
@SETTINGS
@given(graphs_with_aliases())
def test_the_best_order_reaches_the_optimum_of_the_rules_when_in_place_is_always_taken(doc) -> None:
    """With every legal chance taken, some first-fit order of the blocks is as good as brute force
    over that same choice (the search space loses nothing)."""
    import itertools

    problem = build_problem(doc, rules=Rules(inplace="always"))
    assume(problem.n <= 6)
    best = min(
        int((decode(problem, np.array(order)) + problem.sizes).max())
        for order in itertools.permutations(range(problem.n))
    )
    assert best >= RulesOracle(doc, Rules()).optimum()


def bert_like(early_output_read_later: bool) -> dict:
    """Two layers and a pooler; the first layer's output is a model output too (an early one)."""
    operators = [
        {"id": "embed", "inputs": ["ids"], "outputs": ["h0"]},
        {"id": "layer1", "inputs": ["h0"], "outputs": ["h1"], "inplace": {"h1": "h0"}},
        {"id": "layer2", "inputs": ["h1"] if early_output_read_later else ["h0x"], "outputs": ["h2"]},
        {"id": "reshape", "inputs": ["h2"], "outputs": ["h2v"], "views": {"h2v": "h2"}},
        {"id": "pool", "inputs": ["h2v"], "outputs": ["pooled"]},
    ]
    tensors = [{"id": t, "size": 64} for t in ("ids", "h0", "h1", "h2", "h2v")] + [
        {"id": "pooled", "size": 16}
    ]
    if not early_output_read_later:
        operators[1]["outputs"].append("h0x")
        tensors.append({"id": "h0x", "size": 64})
    return {"tensors": tensors, "operators": operators, "outputs": ["h1", "h2v", "pooled"]}


@pytest.mark.parametrize("read_later", [True, False])
def test_an_early_model_output_is_never_overwritten(read_later: bool) -> None:
    doc = parse_document(bert_like(read_later))
    problem = build_problem(doc)
    for algorithm in BASELINES.values():
        offsets = algorithm(problem).tensor_offsets()
        for later in ("h2", "h2v", "pooled"):  # written after h1, while the caller still needs h1
            assert offsets[later] >= offsets["h1"] + 64 or offsets[later] + 64 <= offsets["h1"]
        assert offsets["h2v"] == offsets["h2"]  # the view shares its input's bytes


def test_a_planted_illegal_in_place_overlap_is_rejected() -> None:
    doc = parse_document(
        {
            "tensors": [{"id": t, "size": 8} for t in ("x", "a", "b", "c")],
            "operators": [
                {"id": "p", "inputs": ["x"], "outputs": ["a"]},
                {"id": "q", "inputs": ["a"], "outputs": ["b"], "inplace": {"b": "a"}},
                {"id": "r", "inputs": ["a", "b"], "outputs": ["c"]},  # a is still read: b may not take it
            ],
        }
    )
    problem = build_problem(doc, rules=Rules(inplace="always"))
    assert len(set(problem.tensors.block_of.tolist())) == 4  # the illegal chance was not taken
    offsets = {"x": 0, "a": 8, "b": 8, "c": 16}
    assert "'a' [8, 16) and 'b' [8, 16)" in check_tensor_plan(doc, Rules(), offsets)
    good = {"x": 0, "a": 8, "b": 16, "c": 0}
    assert check_tensor_plan(doc, Rules(), good) is None


def test_a_legal_in_place_write_shares_and_the_bound_drops() -> None:
    doc = parse_document(
        {
            "tensors": [{"id": t, "size": 8} for t in ("x", "a", "b")],
            "operators": [
                {"id": "p", "inputs": ["x"], "outputs": ["a"]},
                {"id": "relu", "inputs": ["a"], "outputs": ["b"], "inplace": {"b": "a"}},
            ],
        }
    )
    taken, refused = build_problem(doc), build_problem(doc, rules=Rules(inplace="never"))
    assert (taken.n, taken.lower_bound) == (2, 16) and (refused.n, refused.lower_bound) == (3, 16)
    plan = BASELINES["first-fit"](taken)
    assert plan.tensor_offsets()["b"] == plan.tensor_offsets()["a"]
    rows = {row["id"]: row for row in plan.to_dict()["tensors"]}
    assert rows["b"]["shares_with"] == "a" and "shares_with" not in rows["a"]


def test_workspaces_live_only_while_their_operator_runs() -> None:
    doc = parse_document(
        {
            "tensors": [{"id": "x", "size": 4}, {"id": "y", "size": 4}, {"id": "z", "size": 4}],
            "operators": [
                {"id": "conv", "inputs": ["x"], "outputs": ["y"], "workspace": 100},
                {"id": "relu", "inputs": ["y"], "outputs": ["z"]},
            ],
        }
    )
    problem = build_problem(doc, rules=Rules(inplace="never"))
    assert problem.lower_bound == 108  # x, y and conv's scratch at once; z comes after the scratch is free
    assert "conv#workspace" in problem.ids
    plan = BASELINES["greedy-size"](problem)
    assert plan.peak == 108


def test_pinned_blocks_stay_put_and_bad_pins_are_refused() -> None:
    base = {
        "tensors": [{"id": "x", "size": 8, "offset": 16}, {"id": "y", "size": 8}, {"id": "z", "size": 8}],
        "operators": [
            {"id": "a", "inputs": ["x"], "outputs": ["y"]},
            {"id": "b", "inputs": ["y"], "outputs": ["z"]},
        ],
    }
    problem = build_problem(parse_document(base))
    for name in ("first-fit", "greedy-size"):
        plan = BASELINES[name](problem)
        assert plan.tensor_offsets()["x"] == 16 and plan.peak >= 24
    with pytest.raises(InputError, match="cannot keep pinned blocks"):
        BASELINES["best-fit-coalescing"](problem)
    clash = {
        **base,
        "tensors": [*base["tensors"][:1], {"id": "y", "size": 8, "offset": 20}, base["tensors"][2]],
    }
    with pytest.raises(InputError, match="are live at once and overlap"):
        build_problem(parse_document(clash))
    misaligned = {
        **base,
        "alignment": 8,
        "tensors": [{"id": "x", "size": 8, "offset": 4}, *base["tensors"][1:]],
    }
    with pytest.raises(InputError, match="not a multiple of the alignment") as caught:
        build_problem(parse_document(misaligned))
    assert caught.value.field == "tensors[0].offset"
    with pytest.raises(PlanError, match="pinned"):
        make_plan(problem, np.array([0, 8, 0]), "hand", 0.0)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"views": {"y": "x"}, "outputs": ["y"]}, "operators[0].views.y", "has 8 bytes, its input 'x' 4"),
        ({"views": {"q": "x"}}, "operators[0].views.q", "not an output"),
        ({"inplace": {"y": ["nope"]}}, "operators[0].inplace.y", "not an input"),
        ({"inplace": {"y": "x"}, "views": {"y": "x"}}, "operators[0].inplace.y", "both a view and"),
        ({"workspace": 0}, "operators[0].workspace", "greater than 0"),
    ],
)
def test_bad_aliases_are_one_clear_error(change: dict, field: str, message: str) -> None:
    op = {
        "id": "op",
        "inputs": ["x"],
        "outputs": ["y"],
        **{k: v for k, v in change.items() if k != "outputs"},
    }
    size_y = 8 if "views" in change and change["views"].get("y") == "x" and "inplace" not in change else 4
    doc = {"tensors": [{"id": "x", "size": 4}, {"id": "y", "size": size_y}], "operators": [op]}
    with pytest.raises(InputError, match=message) as caught:
        build_problem(parse_document(doc))
    assert caught.value.field == field


def test_outputs_copied_out_free_their_bytes_at_the_last_reader() -> None:
    doc = parse_document(bert_like(True))
    kept, copied = build_problem(doc), build_problem(doc, rules=Rules(keep_outputs=False))
    assert copied.lower_bound < kept.lower_bound
