"""An ONNX model written in a searched order: the same model, its nodes listed as the schedule says."""

from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from gaplanner.documents.onnx_import import import_onnx  # noqa: E402
from gaplanner.documents.onnx_schedule import scheduled_model, write_scheduled_model  # noqa: E402
from gaplanner.errors import InputError  # noqa: E402
from gaplanner.schedule import ScheduleSettings, search_schedule  # noqa: E402

BRANCHES = 4


def branches():
    """Four wide branches squeezed to small results, every wide one first; unnamed nodes and a Constant."""
    rng = np.random.default_rng(0)
    weights = []
    for i in range(BRANCHES):
        weights.append(numpy_helper.from_array(rng.standard_normal((32, 512)).astype(np.float32), f"W{i}"))
        weights.append(numpy_helper.from_array(rng.standard_normal((512, 8)).astype(np.float32), f"V{i}"))
    nodes = [helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.float32(0.5)))]
    nodes += [helper.make_node("MatMul", ["x", f"W{i}"], [f"h{i}"], name=f"up{i}") for i in range(BRANCHES)]
    nodes += [helper.make_node("Relu", [f"h{i}"], [f"r{i}"]) for i in range(BRANCHES)]  # unnamed
    nodes += [
        helper.make_node("MatMul", [f"r{i}", f"V{i}"], [f"o{i}"], name=f"down{i}") for i in range(BRANCHES)
    ]
    nodes.append(helper.make_node("Concat", [f"o{i}" for i in range(BRANCHES)], ["c"], axis=1, name="cat"))
    nodes.append(helper.make_node("Mul", ["c", "half"], ["y"], name="scale"))
    graph = helper.make_graph(
        nodes,
        "branches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 8 * BRANCHES])],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def searched(model):
    document = import_onnx(model)
    return document, search_schedule(document, settings=ScheduleSettings(time_limit=1.0, seed=0))


def test_the_written_model_lists_its_nodes_in_the_schedule_and_plans_to_the_chosen_bound():
    model = branches()
    document, result = searched(model)
    assert result.chosen_bound < result.given_bound
    written = scheduled_model(model, document, result.order)
    onnx.checker.check_model(written, full_check=True)
    assert sorted(n.SerializeToString() for n in written.graph.node) == sorted(
        n.SerializeToString() for n in model.graph.node
    )
    assert list(written.graph.initializer) == list(model.graph.initializer)
    again = import_onnx(written)
    assert [op.id for op in again.operators] != [op.id for op in document.operators]
    assert (
        search_schedule(again, settings=ScheduleSettings(time_limit=0.1)).given_bound == result.chosen_bound
    )
    by_output = {op.outputs[0]: op.id for op in document.operators}
    assert [by_output[op.outputs[0]] for op in again.operators] == list(result.order)


def test_write_refuses_an_order_that_reads_too_early_or_names_no_operator(tmp_path):
    model = branches()
    document = import_onnx(model)
    ids = [op.id for op in document.operators]
    path = tmp_path / "branches.onnx"
    onnx.save(model, str(path))
    with pytest.raises(
        InputError, match=r"schedule\[0\]: operator 'down0' reads 'Relu_5' before it is written"
    ):
        write_scheduled_model(
            path, document, ["down0", *[i for i in ids if i != "down0"]], tmp_path / "o.onnx"
        )
    with pytest.raises(InputError, match=r"schedule\[1\]: no operator 'nope' in the document"):
        write_scheduled_model(path, document, [ids[0], "nope"], tmp_path / "o.onnx")
    assert not (tmp_path / "o.onnx").exists()


def executed_nodes(model, order: str, folder) -> tuple[list[str], np.ndarray]:
    """The node names ONNX Runtime ran, in its order (from its profile), and the output."""
    ort = pytest.importorskip("onnxruntime", reason="checking ONNX Runtime's order needs onnxruntime")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / f"profile_{order}")
    options.execution_order = getattr(ort.ExecutionOrder, order)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32)
    (y,) = session.run(None, {"x": x})
    with open(session.end_profiling()) as file:
        events = json.load(file)
    names = [e["name"].removesuffix("_kernel_time") for e in events if e.get("cat") == "Node"]
    return [n for n in names if n.startswith(("up", "down"))], y


def test_onnxruntime_runs_the_file_order_only_when_asked_for_priority_based_order(tmp_path):
    model = branches()
    document, result = searched(model)
    written = scheduled_model(model, document, result.order)
    listed = [n.name for n in written.graph.node if n.name.startswith(("up", "down"))]
    file_order, y_written = executed_nodes(written, "PRIORITY_BASED", tmp_path)
    assert file_order == listed
    given_order, y_given = executed_nodes(model, "PRIORITY_BASED", tmp_path)
    assert given_order == [n.name for n in model.graph.node if n.name.startswith(("up", "down"))]
    np.testing.assert_allclose(y_written, y_given, rtol=1e-6)
    own, _ = executed_nodes(model, "DEFAULT", tmp_path)  # its own depth-first order, whatever the file's
    assert own == executed_nodes(written, "DEFAULT", tmp_path)[0] != given_order


def test_the_cli_writes_the_planned_order_and_refuses_what_it_cannot_write(tmp_path, capsys):
    from gaplanner.cli import main

    source, out = tmp_path / "branches.onnx", tmp_path / "out.onnx"
    onnx.save(branches(), str(source))
    argv = ["plan", str(source), "--schedule", "search", "--time-limit", "1", "--quiet"]
    assert main([*argv, "--write-model", str(out)]) == 0
    plan = json.loads(capsys.readouterr().out)
    written = onnx.load(str(out))
    by_output = {op.outputs[0]: op.id for op in import_onnx(source).operators}
    assert [by_output[op.outputs[0]] for op in import_onnx(written).operators] == plan["schedule"]
    assert plan["peak"] < searched(branches())[1].given_bound
    refused = [
        (["plan", str(source), "--write-model", str(out)], "--schedule search"),
        (["plan", "example:seed000_queue", "--schedule", "search", "--write-model", str(out)], "not one"),
        (["plan", str(source), str(source), "--together", "--write-model", str(out)], "one model"),
    ]
    for args, reason in refused:
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("gaplanner: error: --write-model: ") and reason in err
        assert len(err.splitlines()) == 1
