"""ONNX import: sizes from shape inference, weights left out, clear errors for dynamic shapes."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest

from gaplanner import InputError, build_problem, load_problem, verify
from gaplanner.cli import main
from gaplanner.documents.onnx_import import import_onnx
from gaplanner.documents.rules import Rules
from gaplanner.search.baselines import BASELINES

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F32 = TensorProto.FLOAT


def make_model(nodes, inputs, outputs, initializers=(), opset: int = 21):
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def branchy_model():
    """x[N,3,8,8] -> conv -> c -> relu -> r -> split (2 outputs) -> s0, s1; s0 -> sigmoid -> g;
    g + s1 -> a (join); a * (constant) -> m; concat(m, c) -> y (c is read by a second branch)."""
    x = helper.make_tensor_value_info("x", F32, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", F32, None)
    weight = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Split", ["r"], ["s0", "s1"], axis=1, num_outputs=2, name="split"),
        helper.make_node("Sigmoid", ["s0"], ["g"], name="sigmoid"),
        helper.make_node("Add", ["g", "s1"], ["a"], name="add"),
        helper.make_node(
            "Constant", [], ["k"], value=numpy_helper.from_array(np.full((1, 2, 1, 1), 2.0, np.float32))
        ),
        helper.make_node("Mul", ["a", "k"], ["m"], name="mul"),
        helper.make_node("Concat", ["m", "c"], ["y"], axis=1, name="concat"),
    ]
    return make_model(nodes, [x], [y], [weight])


def test_sizes_match_hand_computed_ones_and_weights_are_not_blocks() -> None:
    doc = import_onnx(branchy_model(), batch=2)
    sizes = {t.id: t.nbytes for t in doc.tensors or []}
    assert sizes == {
        "x": 2 * 3 * 8 * 8 * 4,  # 1536
        "c": 2 * 4 * 8 * 8 * 4,  # 2048
        "r": 2048,
        "s0": 2 * 2 * 8 * 8 * 4,  # 1024: Split's two outputs
        "s1": 1024,
        "g": 1024,
        "a": 1024,
        "m": 1024,
        "y": 2 * 6 * 8 * 8 * 4,  # 3072
    }
    assert "w" not in sizes and "k" not in sizes  # initializer and Constant output are weights
    ops = [(op.id, op.inputs, op.outputs, op.core) for op in doc.operators or []]
    assert ops == [
        ("conv", ["x"], ["c"], 0),
        ("relu", ["c"], ["r"], 0),
        ("split", ["r"], ["s0", "s1"], 0),
        ("sigmoid", ["s0"], ["g"], 0),
        ("add", ["g", "s1"], ["a"], 0),
        ("mul", ["a"], ["m"], 0),
        ("concat", ["m", "c"], ["y"], 0),
    ]


def test_imported_graph_plans_and_every_plan_verifies() -> None:
    problem = build_problem(import_onnx(branchy_model(), batch=2))
    # Live at 'concat' (position 6): c (kept by the branch), m and y = 2048 + 1024 + 3072.
    assert problem.lower_bound == 6144
    for solve in BASELINES.values():
        plan = solve(problem)
        verify(problem, plan.offsets)
        assert plan.peak >= 6144


def test_symbolic_batch_is_an_error_naming_the_tensor_unless_fixed() -> None:
    with pytest.raises(InputError) as caught:
        import_onnx(branchy_model())
    assert caught.value.field == "graph.input[0]"
    assert "tensor 'x' has a dynamic shape [N, 3, 8, 8]" in str(caught.value)
    assert "--batch" in str(caught.value) and "\n" not in str(caught.value)
    assert import_onnx(branchy_model(), batch=3).tensors[0].shape == [3, 3, 8, 8]  # type: ignore[index]


def test_a_dynamic_dimension_other_than_batch_is_still_an_error() -> None:
    x = helper.make_tensor_value_info("x", F32, [1, "height", 8])
    y = helper.make_tensor_value_info("y", F32, None)
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [x], [y])
    with pytest.raises(InputError, match=r"tensor 'x' has a dynamic shape \[1, height, 8\]"):
        import_onnx(model, batch=4)


def test_data_dependent_shape_names_the_output_tensor() -> None:
    x = helper.make_tensor_value_info("x", F32, [2, 3])
    y = helper.make_tensor_value_info("idx", TensorProto.INT64, None)
    model = make_model([helper.make_node("NonZero", ["x"], ["idx"], name="nz")], [x], [y])
    with pytest.raises(InputError) as caught:
        import_onnx(model)
    assert caught.value.field == "graph.node[0].output[0]"
    assert "tensor 'idx' has a dynamic shape [2, " in str(caught.value)


def test_shapes_computed_by_shape_ops_resolve_with_data_propagation() -> None:
    x = helper.make_tensor_value_info("x", F32, ["batch", 3, 4, 4])
    y = helper.make_tensor_value_info("y", F32, None)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Reshape", ["f", "shape"], ["y"]),
    ]
    sizes = {
        "x": ([5, 3, 4, 4], 960),
        "r": ([5, 3, 4, 4], 960),
        "f": ([5, 48], 960),
        "y": ([5, 3, 4, 4], 960),
    }
    doc = import_onnx(make_model(nodes, [x], [y]), batch=5, fold=False)
    assert {t.id: (t.shape, t.nbytes) for t in doc.tensors or []} == {**sizes, "shape": ([4], 32)}  # int64
    folded = import_onnx(make_model(nodes, [x], [y]), batch=5)  # Shape(x) is a constant once x is fixed
    assert {t.id: (t.shape, t.nbytes) for t in folded.tensors or []} == sizes


def test_sub_byte_types_round_up_to_whole_bytes() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.INT4, [3, 5])
    y = helper.make_tensor_value_info("y", TensorProto.INT4, None)
    doc = import_onnx(make_model([helper.make_node("Identity", ["x"], ["y"])], [x], [y]))
    assert [t.nbytes for t in doc.tensors or []] == [8, 8]  # ceil(15 * 4 / 8)


def test_an_element_type_onnx_does_not_define_is_refused_naming_the_tensor() -> None:
    """Found by atheris (the file it wrote, kept): a value typed 91, which passed shape inference in
    this mutated Whisper encoder, made protobuf's enum lookup raise ValueError."""
    crash = Path(__file__).parents[1] / "data" / "fuzz" / "onnx-element-type-91.onnx"
    with pytest.raises(InputError, match="'transpose_8' has element type 91, which ONNX does not define"):
        load_problem(crash)


def test_if_node_reads_the_outer_tensors_its_branches_use() -> None:
    x = helper.make_tensor_value_info("x", F32, [2, 3])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", F32, None)
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["h"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", F32, [2, 3])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["h"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F32, [2, 3])]
    )
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["h"], name="sigmoid"),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch, name="if"),
    ]
    doc = import_onnx(make_model(nodes, [x, cond], [y]))
    ops = {op.id: op for op in doc.operators or []}
    assert ops["if"].inputs == ["cond", "h"]  # h must stay live until the If runs
    problem = build_problem(doc, rules=Rules(inplace="never"))
    h, y_block = problem.ids.index("h"), problem.ids.index("y")
    assert problem.upper[h] == problem.lower[y_block] + 1  # h lives until the If that writes y


def test_nodes_out_of_order_and_non_onnx_files_are_input_errors(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", F32, [2, 3])
    y = helper.make_tensor_value_info("y", F32, None)
    backwards = make_model(
        [helper.make_node("Relu", ["h"], ["y"]), helper.make_node("Neg", ["x"], ["h"])], [x], [y]
    )
    with pytest.raises(InputError, match="reads tensor 'h', which no earlier node writes") as caught:
        import_onnx(backwards)
    assert caught.value.field == "graph.node[0].input[0]"
    junk = tmp_path / "junk.onnx"
    junk.write_text("not a protobuf")
    with pytest.raises(InputError, match=r"junk\.onnx is not an ONNX model"):
        import_onnx(junk)
    with pytest.raises(InputError, match="no such file"):
        import_onnx(tmp_path / "missing.onnx")
    with pytest.raises(InputError, match="batch size must be a positive integer"):
        import_onnx(branchy_model(), batch=0)


def test_cli_import_then_plan_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_path = tmp_path / "branchy.onnx"
    onnx.save(branchy_model(), str(model_path))
    graph = tmp_path / "graph.json"

    assert main(["import", str(model_path), "-o", str(graph)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gaplanner: error: graph.input[0]: tensor 'x' has a dynamic shape")
    assert len(err.splitlines()) == 1 and not graph.exists()

    assert main(["import", str(model_path), "-o", str(graph), "--batch", "2"]) == 0
    # relu cannot write over c (concat reads it later); sigmoid, add and mul chain over s0's bytes
    assert "7 operators, 9 tensors in 6 blocks, lower bound 6,144 bytes" in capsys.readouterr().err
    data = json.loads(graph.read_text())
    assert data["name"] == "tiny" and len(data["tensors"]) == 9
    assert load_problem(graph).lower_bound == 6144

    plan = tmp_path / "plan.json"
    assert main(["plan", str(graph), "-o", str(plan)]) == 0
    assert main(["verify", str(graph), str(plan)]) == 0
    assert capsys.readouterr().out.startswith("valid: 6 blocks (9 tensors), peak ")


def test_imported_graph_splits_over_cores() -> None:
    from gaplanner.documents.split import split_graph

    problem = build_problem(split_graph(import_onnx(branchy_model(), batch=2), 2))
    for solve in BASELINES.values():
        verify(problem, solve(problem).offsets)


def encoder_with_an_early_output():
    """A BERT-like stack: embeddings, two layers (MatMul + Add + Gelu, a Reshape view), a pooler.

    Outputs: the first layer's hidden state (written early, read by nothing later), the last
    hidden state and the pooler's output, as a BertModel asked for its hidden states returns.
    """

    def w(name, shape):
        return numpy_helper.from_array(np.zeros(shape, np.float32), name)

    ids = helper.make_tensor_value_info("ids", F32, [1, 16, 32])
    outs = [helper.make_tensor_value_info(n, F32, None) for n in ("early", "last", "pooled")]
    nodes = [
        helper.make_node("Add", ["ids", "pos"], ["emb"], name="embed"),
        helper.make_node("MatMul", ["emb", "w1"], ["m1"], name="mm1"),
        helper.make_node("Gelu", ["m1"], ["early"], name="gelu1"),
        helper.make_node("MatMul", ["m1", "w2"], ["m2"], name="mm2"),
        helper.make_node("Add", ["m2", "b2"], ["a2"], name="bias2"),
        helper.make_node("Reshape", ["a2", "shape"], ["last"], name="reshape"),
        helper.make_node("Gather", ["last", "zero"], ["cls"], axis=1, name="cls"),
        helper.make_node("Tanh", ["cls"], ["pooled"], name="tanh"),
    ]
    inits = [
        w("pos", (1, 16, 32)), w("w1", (32, 32)), w("w2", (32, 32)), w("b2", (32,)),
        numpy_helper.from_array(np.array([1, 16, 32], np.int64), "shape"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
    ]  # fmt: skip
    return make_model(nodes, [ids], outs, inits)


def test_an_early_onnx_output_stays_whole_until_the_model_ends() -> None:
    doc = import_onnx(encoder_with_an_early_output())
    assert doc.inputs == ["ids"] and doc.outputs == ["early", "last", "pooled"]
    ops = {op.id: op for op in doc.operators or []}
    assert ops["reshape"].views == {"last": "a2"}
    assert ops["bias2"].inplace == {"a2": ["m2"]} and ops["gelu1"].inplace == {"early": ["m1"]}
    problem = build_problem(doc)
    block = dict(zip(problem.tensors.ids, problem.tensors.block_of, strict=True))
    assert block["early"] != block["m1"]  # declared, but not taken: mm2 reads m1 afterwards
    for name, algorithm in BASELINES.items():
        offsets = algorithm(problem).tensor_offsets()
        early = range(offsets["early"], offsets["early"] + 2048)
        for later in ("m2", "a2", "last", "cls", "pooled"):  # written after 'early'
            assert offsets[later] >= early.stop or offsets[later] + 128 <= early.start, (name, later)
        assert offsets["last"] == offsets["a2"] == offsets["m2"]  # a view and an in-place write


def test_no_inplace_import_declares_no_in_place_writes() -> None:
    doc = import_onnx(encoder_with_an_early_output(), inplace=False)
    assert all(not op.inplace for op in doc.operators or [])
    assert any(op.views for op in doc.operators or [])


def test_a_shape_computed_at_run_time_is_folded_and_the_error_does_not_blame_the_batch() -> None:
    """TorchScript exports build Expand's target shape with Where/Equal/ConstantOfShape chains."""
    x = helper.make_tensor_value_info("x", F32, [2, 8])
    y = helper.make_tensor_value_info("y", F32, None)
    nodes = [
        helper.make_node(
            "ConstantOfShape", ["two"], ["ones"], value=numpy_helper.from_array(np.array([1], np.int64))
        ),
        helper.make_node("Mul", ["ones", "minus_one"], ["minus"]),
        helper.make_node("Equal", ["wanted", "minus"], ["keep"]),
        helper.make_node("Where", ["keep", "ones", "wanted"], ["target"]),
        helper.make_node("Expand", ["row", "target"], ["e"]),
        helper.make_node("Add", ["x", "e"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array(-1, np.int64), "minus_one"),
        numpy_helper.from_array(np.array([2, 8], np.int64), "wanted"),
        numpy_helper.from_array(np.ones((1, 8), np.float32), "row"),
    ]
    model = make_model(nodes, [x], [y], inits)
    # Folded, the expanded row is a constant (a weight, not planned), as ONNX Runtime computes it
    assert {t.id: t.shape for t in import_onnx(model).tensors or []} == {"x": [2, 8], "y": [2, 8]}
    with pytest.raises(InputError, match="the model's inputs are static") as caught:
        import_onnx(model, fold=False)
    assert "--batch" not in str(caught.value)


def padded_windows_model():
    """Swin's window partition as its TorchScript export writes it: the padding is computed from x's
    shape, and the windows' shape from the padded tensor's (known only once the padding is folded)."""
    x = helper.make_tensor_value_info("x", F32, [1, 5, 4])
    y = helper.make_tensor_value_info("y", F32, None)
    scalar = numpy_helper.from_array
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "one"], ["length"]),
        helper.make_node("Mod", ["length", "window"], ["rest"]),
        helper.make_node("Sub", ["window", "rest"], ["short"]),
        helper.make_node("Mod", ["short", "window"], ["pad"]),
        helper.make_node("Unsqueeze", ["pad", "axis0"], ["pad_1d"]),
        helper.make_node("Concat", ["zeros4", "pad_1d", "zero"], ["pads"], axis=0),  # at the end of axis 1
        helper.make_node("Pad", ["x", "pads"], ["padded"]),
        helper.make_node("Shape", ["padded"], ["padded_shape"]),
        helper.make_node("Gather", ["padded_shape", "one"], ["padded_length"]),
        helper.make_node("Div", ["padded_length", "window"], ["windows"]),
        helper.make_node("Unsqueeze", ["windows", "axis0"], ["windows_1d"]),
        helper.make_node("Concat", ["one_1d", "windows_1d", "window_and_channels"], ["target"], axis=0),
        helper.make_node("Reshape", ["padded", "target"], ["y"]),
    ]
    inits = [
        scalar(np.array(1, np.int64), "one"),
        scalar(np.array(7, np.int64), "window"),
        scalar(np.array([0], np.int64), "axis0"),
        scalar(np.zeros(4, np.int64), "zeros4"),
        scalar(np.zeros(1, np.int64), "zero"),
        scalar(np.array([1], np.int64), "one_1d"),
        scalar(np.array([7, 4], np.int64), "window_and_channels"),
    ]
    return make_model(nodes, [x], [y], inits)


def test_a_shape_that_depends_on_a_folded_padding_resolves_in_a_second_round(monkeypatch) -> None:
    shapes = {t.id: t.shape for t in import_onnx(padded_windows_model()).tensors or []}
    assert shapes == {"x": [1, 5, 4], "padded": [1, 7, 4], "y": [1, 1, 7, 4]}
    monkeypatch.setattr("gaplanner.documents.onnx_import.MAX_FOLD_ROUNDS", 1)
    with pytest.raises(InputError, match="shape"):
        import_onnx(padded_windows_model())


def symbolic_model():
    """x[N, 3, seq] -> relu -> r -> sigmoid -> s; s + r -> y (float32)."""
    x = helper.make_tensor_value_info("x", F32, ["N", 3, "seq"])
    y = helper.make_tensor_value_info("y", F32, None)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["r"], ["s"], name="sig"),
        helper.make_node("Add", ["s", "r"], ["y"], name="add"),
    ]
    return make_model(nodes, [x], [y])


def test_plan_and_compare_take_batch_and_dim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sym.onnx"
    onnx.save(symbolic_model(), str(path))
    assert main(["plan", str(path), "--algorithm", "first-fit"]) == 2
    err = capsys.readouterr().err
    assert "--batch N and the other symbols by name, --dim seq=N" in err and err.count("\n") == 1
    assert main(["plan", str(path), "--algorithm", "first-fit", "--batch", "2"]) == 2
    assert "fix it with --dim seq=N" in capsys.readouterr().err
    # r and s are live at the add, which writes y over s: 2 tensors of 2*3*5 float32
    assert main(["plan", str(path), "--algorithm", "first-fit", "--batch", "2", "--dim", "seq=5"]) == 0
    assert json.loads(capsys.readouterr().out)["lower_bound"] == 2 * 2 * 3 * 5 * 4
    assert main(["plan", str(path), "--algorithm", "first-fit", "--dim", "N=1", "--dim", "seq=7"]) == 0
    assert json.loads(capsys.readouterr().out)["lower_bound"] == 2 * 1 * 3 * 7 * 4
    assert main(["compare", str(path), "--batch", "1", "--dim", "seq=2", "--generations", "1", "-q"]) == 0
    assert "lower bound 48" in capsys.readouterr().out
    graph = tmp_path / "graph.json"
    assert main(["import", str(path), "-o", str(graph), "--batch", "3", "--dim", "seq=2"]) == 0
    assert load_problem(graph).lower_bound == 2 * 3 * 3 * 2 * 4


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--dim", "zz=3"], "--dim: the model has no symbolic dimension 'zz' (it has: N, seq)"),
        (["--batch", "0"], "--batch: must be at least 1"),
        (["--dim", "seq"], "--dim: expected NAME=N"),
    ],
)
def test_bad_dimension_flags_name_the_flag(tmp_path: Path, capsys, argv: list[str], expected: str) -> None:
    path = tmp_path / "sym.onnx"
    onnx.save(symbolic_model(), str(path))
    with pytest.raises(SystemExit) if argv[1] in ("0", "seq") else contextlib.nullcontext():
        assert main(["plan", str(path), *argv]) == 2
    assert expected in capsys.readouterr().err


def test_batch_on_an_input_that_is_not_onnx_is_refused(capsys) -> None:
    assert main(["plan", "example:seed000_queue", "--batch", "2"]) == 2
    assert "--batch: applies to ONNX models only" in capsys.readouterr().err
