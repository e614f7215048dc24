"""torch.export import: the document's tensors, views and in-place chances, and plans that run right."""

from __future__ import annotations

import json
import operator

import pytest

torch = pytest.importorskip("torch")

from gaplanner import InputError, build_problem, from_exported_program, parse_document  # noqa: E402
from gaplanner.cli import main  # noqa: E402
from gaplanner.documents.rules import Rules  # noqa: E402
from gaplanner.documents.torch_import import load_exported_program  # noqa: E402
from gaplanner.search.ga import GASettings  # noqa: E402
from gaplanner.solve import solve  # noqa: E402
from tests.documents.test_torch_schedule import Mutating  # noqa: E402
from tests.torch_models import Block  # noqa: E402


class Mixed(torch.nn.Module):
    """Views (transpose, slice, split, flatten), an in-place write, a buffer update and a tuple output."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.register_buffer("steps", torch.zeros(32))

    def forward(self, x):
        y = torch.relu(self.a(x))
        z = y.transpose(0, 1).reshape(-1, 8)  # a transpose's reshape to its own shape: still a view
        self.steps.add_(1)
        q = x.clone()
        q.add_(1)
        left, right = y.split(16, dim=1)
        values, _ = torch.max(z, dim=1)  # the indices are written and never read
        return z.flatten() + 1, y[:, :4], left * right + self.steps[:16], q, values


def export(model, *inputs, **kwargs):
    torch.manual_seed(0)
    return torch.export.export(model.eval(), inputs, **kwargs)


def operators(doc):
    return {op.id: op for op in doc.operators}


def test_tensors_views_inplace_chances_inputs_and_outputs():
    ep = export(Mixed(), torch.randn(8, 16))
    doc = from_exported_program(ep)
    ops = operators(doc)
    ids = {t.id for t in doc.tensors}
    assert not ids & {"p_a_weight", "p_a_bias", "b_steps", "add_", "slice_2"}  # weights and buffers
    assert doc.inputs == ["x"]
    assert doc.outputs == ["add", "slice_1", "add_1", "add__1", "max_1.0"]
    assert [t.model_dump(exclude_none=True) for t in doc.tensors if t.id == "x"] == [
        {"id": "x", "shape": [8, 16], "dtype": "float32"}
    ]
    assert ops["transpose"].views == {"transpose": "relu"}
    assert ops["reshape"].views == {"reshape": "transpose"}
    assert ops["flatten"].views == {}  # flattening a transposed layout copies
    assert ops["split"].views == {"split.0": "relu", "split.1": "relu"}
    assert ops["slice_1"].views == {"slice_1": "relu"}
    assert ops["add__1"].views == {"add__1": "clone"}  # an in-place write returns its input's bytes
    assert ops["max_1"].outputs == ["max_1.0", "max_1.1"]
    assert ops["relu"].inplace == {"relu": "linear"}
    assert ops["add"].inplace == {"add": "flatten"}
    assert (
        ops["mul"].inplace == {}
    )  # both inputs are views of one tensor: writing over one clobbers the other
    assert "linear" not in ops["linear"].inplace  # no in-place variant


def arena_run(ep, doc, offsets: dict[str, int], peak: int, inputs):
    """The oracle: run the program with every planned tensor living in one byte arena at its offset.

    Each operator's result is copied into the arena at its planned place and
    read back from there; a view is taken of the arena-backed input, so it must
    land in the arena itself. A plan that lets a tensor overwrite another one
    still to be read changes the outputs.
    """
    arena = torch.zeros(peak + 16, dtype=torch.uint8)
    signature = ep.graph_signature
    state = {**ep.state_dict, **ep.constants}
    weights = {**signature.inputs_to_parameters, **signature.inputs_to_buffers}
    weights |= signature.inputs_to_lifted_tensor_constants
    views = {out for op in doc.operators for out in op.views}
    planned = {t.id for t in doc.tensors}

    def place(tid, value):
        if tid not in planned:
            return value
        if tid in views:
            assert value.untyped_storage().data_ptr() == arena.untyped_storage().data_ptr(), tid
            return value
        slot = arena[offsets[tid] :].view(value.dtype)
        backed = torch.as_strided(slot, value.shape, value.stride())
        backed.copy_(value)
        return backed

    with torch.no_grad():  # arena-backed views of split outputs are written in place
        return _interpret(ep, state, weights, place, inputs)


def _interpret(ep, state, weights, place, inputs):
    env = {}
    user = iter(inputs)
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            env[node] = state[weights[node.name]].clone() if node.name in weights else next(user)
            env[node] = place(node.name, env[node])
        elif node.op == "call_function" and node.target is operator.getitem:
            env[node] = env[node.args[0]][node.args[1]]
        elif node.op == "call_function":
            args, kwargs = torch.fx.map_arg((node.args, node.kwargs), lambda n: env[n])
            result = node.target(*args, **kwargs)
            if isinstance(result, tuple | list):
                result = type(result)(place(f"{node.name}.{k}", r) for k, r in enumerate(result))
            else:
                result = place(node.name, result)
            env[node] = result
        elif node.op == "output":
            return [env[n] for n in torch.utils._pytree.tree_leaves(node.args[0])]
    raise AssertionError("no output node")


@pytest.mark.parametrize("inplace", ["auto", "always", "never"])
@pytest.mark.parametrize("name", ["mixed", "block"])
def test_plans_of_imported_programs_compute_what_the_model_computes(name, inplace):
    model, inputs = (
        (Mixed(), (torch.randn(8, 16),)) if name == "mixed" else (Block(), (torch.randn(2, 8, 32),))
    )
    ep = export(model, *inputs)
    doc = from_exported_program(ep)
    problem = build_problem(doc, rules=Rules(inplace=inplace))
    plan = solve(problem, "ga", GASettings(time_limit=2.0))
    got = arena_run(ep, doc, plan.tensor_offsets(), plan.peak, inputs)
    expected = torch.utils._pytree.tree_leaves(ep.module()(*inputs))  # after: it updates the buffer
    for have, want in zip(got, expected, strict=True):
        torch.testing.assert_close(have, want)


def test_the_oracle_catches_a_plan_that_overlaps_live_tensors():
    ep = export(Block(), torch.randn(2, 8, 32))
    doc = from_exported_program(ep)
    everything_at_zero = {t.id: 0 for t in doc.tensors}
    peak = max(t.nbytes for t in doc.tensors)
    got = arena_run(ep, doc, everything_at_zero, peak, (torch.randn(2, 8, 32),))
    assert not torch.allclose(got[0], ep.module()(torch.randn(2, 8, 32)))


def test_dynamic_sizes_plan_at_their_upper_bound_and_unbounded_ones_are_refused():
    class Double(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2

    bounded = export(Double(), torch.randn(4, 8), dynamic_shapes=({0: torch.export.Dim("batch", max=64)},))
    assert {t.id: t.shape for t in from_exported_program(bounded).tensors} == {
        "x": [64, 8],
        "relu": [64, 8],
        "mul": [64, 8],
    }
    unbounded = export(Double(), torch.randn(4, 8), dynamic_shapes=({0: torch.export.Dim("batch")},))
    with pytest.raises(InputError, match="without an upper bound") as error:
        from_exported_program(unbounded)
    assert error.value.field == "shape"


def test_the_cli_imports_a_saved_program(tmp_path, capsys):
    ep = export(Block(), torch.randn(2, 8, 32))
    path = tmp_path / "block.pt2"
    torch.export.save(ep, path)
    assert main(["import", str(path), "-o", str(tmp_path / "block.json")]) == 0
    saved = json.loads((tmp_path / "block.json").read_text())
    assert parse_document(saved) == from_exported_program(load_exported_program(path))
    assert "lower bound" in capsys.readouterr().err


def test_a_file_that_is_not_an_exported_program_is_one_clear_error(tmp_path, capsys):
    torch.save({"weights": torch.zeros(2)}, tmp_path / "state.pt2")
    assert main(["import", str(tmp_path / "state.pt2")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gaplanner: error: input: state.pt2 is not a saved ExportedProgram")
    assert len(err.splitlines()) == 1
    with pytest.raises(InputError, match=r"expected a torch\.export\.ExportedProgram"):
        from_exported_program(Block())


def test_plan_reads_a_saved_program_as_it_reads_its_import(tmp_path, capsys):
    ep = export(Block(), torch.randn(2, 8, 32))
    torch.export.save(ep, tmp_path / "block.pt2")
    argv = ["plan", str(tmp_path / "block.pt2"), "--algorithm", "first-fit"]
    assert main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert main(["import", str(tmp_path / "block.pt2"), "-o", str(tmp_path / "block.json")]) == 0
    capsys.readouterr()
    assert main(["plan", str(tmp_path / "block.json"), "--algorithm", "first-fit"]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert (plan["peak"], plan["lower_bound"]) == (imported["peak"], imported["lower_bound"])
    (tmp_path / "junk.pt2").write_bytes(b"PK\x03\x04 not a zip at all")
    assert main(["plan", str(tmp_path / "junk.pt2")]) == 2
    err = capsys.readouterr().err.strip()
    assert "junk.pt2 is not a saved ExportedProgram" in err and len(err.splitlines()) == 1


def test_in_place_writes_keep_their_order_with_after_edges():
    ops = operators(from_exported_program(export(Mutating(), torch.randn(4, 8))))
    assert ops["add_"].after == ["sum_1"]  # the sum reads y's old value: the write waits for it
    assert ops["add__1"].inputs == ["sum_1"] and ops["add__1"].outputs == []  # writes the buffer alone
    assert ops["add"].after == ["add__1"]  # reads the buffer's new value
    assert ops["mul_1"].after == []  # reads the write's result: a data edge already orders it


class SmallNet(torch.nn.Module):
    """A convolution, batch norm in training mode, a linear head and a cross-entropy loss."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.norm = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, images, labels):
        pooled = torch.relu(self.norm(self.conv(images))).mean(dim=(2, 3))
        return (torch.nn.functional.cross_entropy(self.head(pooled), labels),)


def test_a_joint_forward_backward_program_imports_with_its_gradients_as_outputs():
    from torch.export.experimental import _export_forward_backward

    torch.manual_seed(0)
    inputs = (torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,)))
    joint = _export_forward_backward(torch.export.export(SmallNet().train(), inputs))
    doc = from_exported_program(joint)
    specs = joint.graph_signature.output_specs
    kinds = [spec.kind.name for spec in specs]
    assert kinds.count("GRADIENT_TO_PARAMETER") == 6 and kinds.count("LOSS_OUTPUT") == 1
    assert doc.inputs == ["images", "labels"]
    assert len(doc.outputs) == len(specs)  # loss, gradients, the statistics' new values: all planned
    sizes = {t.id: t.nbytes for t in doc.tensors}
    assert sizes["convolution_backward.1"] == 8 * 3 * 3 * 3 * 4  # the weight's gradient, a tuple's second
    assert "convolution_backward.1" in doc.outputs
    assert build_problem(doc).lower_bound > 0
