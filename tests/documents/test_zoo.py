"""The model zoo: bundled graphs load, their sizes and bounds are pinned and match the benchmarks."""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from gaplanner import InputError, load_problem, verify
from gaplanner.cli import main
from gaplanner.documents.zoo import parse_zoo_spec, zoo_document, zoo_names
from gaplanner.search.baselines import BASELINES

#: name -> (blocks, lower bound, total bytes) of the single-core graph.
PINNED = {
    "densenet121": (429, 8_429_568, 199_706_448),
    "googlenet": (84, 4_014_080, 24_135_264),
    "inceptionv3": (313, 11_063_808, 130_217_548),
    "mobilenetv1": (91, 6_480_128, 67_388_896),
    "mobilenetv2": (156, 9_720_192, 87_263_840),
    "resnet50": (177, 9_633_792, 148_480_848),
}

#: The shared benchmark folder's buffer lists of the same networks (GoogLeNet is not there).
BENCHMARK_FILE = {
    "densenet121": "densenet121_b1",
    "inceptionv3": "inceptionv3_b1",
    "mobilenetv1": "mobilenet_b1",
    "mobilenetv2": "mobilenetv2_b1",
    "resnet50": "resnet50_b1",
}


def test_the_six_networks_of_seed_003_are_bundled() -> None:
    assert zoo_names() == sorted(PINNED)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_zoo_graph_loads_with_pinned_blocks_and_lower_bound(name: str) -> None:
    problem = load_problem(f"zoo:{name}")
    assert (problem.n, problem.lower_bound, problem.total_size) == PINNED[name]
    assert problem.interval_conflicts  # one core: lifetimes on the Keras execution order
    doc = zoo_document(name)
    assert doc.name == name
    assert {op.core for op in doc.operators or []} == {0}
    for tensor in doc.tensors or []:
        assert tensor.dtype == "float32" and tensor.shape is not None and tensor.shape[0] == 1
    # One tensor per operator output plus the one model input.
    outputs = sum(len(op.outputs) for op in doc.operators or [])
    assert len(doc.tensors or []) == outputs + 1


@pytest.mark.parametrize("name", sorted(BENCHMARK_FILE))
def test_zoo_matches_the_shared_benchmark_buffer_lists(name: str, benchmarks: Path) -> None:
    """Same Keras graphs, same conventions: the lifetimes must agree block for block.

    The zoo graph's lifetimes are derived by gaplanner from operators (writer to
    last reader, inclusive); the benchmark CSV was written directly as half-open
    ``[producer, last consumer + 1)`` intervals. Model inputs start at 0 in
    both. The model output is written by the last operator; gaplanner keeps it
    one step longer, for the caller who reads it after the last operator.
    """
    ours = load_problem(f"zoo:{name}")
    theirs = load_problem(benchmarks / "zoo" / f"{BENCHMARK_FILE[name]}.csv")
    np.testing.assert_array_equal(ours.sizes, theirs.sizes)
    np.testing.assert_array_equal(ours.lower, theirs.lower)
    caller = ours.upper.max()
    np.testing.assert_array_equal(np.where(ours.upper == caller, caller - 1, ours.upper), theirs.upper)
    assert (ours.upper == caller).sum() == 1  # one model output
    table = (benchmarks / "zoo" / "README.md").read_text(encoding="utf-8")
    row = re.search(rf"`{BENCHMARK_FILE[name]}\.csv` \| ([\d,]+) \| ([\d,]+) \|", table)
    assert row is not None
    assert (ours.n, ours.lower_bound) == (int(row[1].replace(",", "")), int(row[2].replace(",", "")))
    meta = json.loads((benchmarks / "zoo" / f"{BENCHMARK_FILE[name]}.json").read_text(encoding="utf-8"))
    assert [op.id for op in zoo_document(name).operators or []] == [op["name"] for op in meta["operators"]]


def test_googlenet_follows_table_1_of_the_paper() -> None:
    shapes = {t.id: t.shape for t in zoo_document("googlenet").tensors or []}
    expected = {
        "conv1_7x7_s2": [1, 112, 112, 64],
        "pool1_3x3_s2": [1, 56, 56, 64],
        "conv2_3x3": [1, 56, 56, 192],
        "pool2_3x3_s2": [1, 28, 28, 192],
        "inception_3a_output": [1, 28, 28, 256],
        "inception_3b_output": [1, 28, 28, 480],
        "pool3_3x3_s2": [1, 14, 14, 480],
        "inception_4a_output": [1, 14, 14, 512],
        "inception_4b_output": [1, 14, 14, 512],
        "inception_4c_output": [1, 14, 14, 512],
        "inception_4d_output": [1, 14, 14, 528],
        "inception_4e_output": [1, 14, 14, 832],
        "pool4_3x3_s2": [1, 7, 7, 832],
        "inception_5a_output": [1, 7, 7, 832],
        "inception_5b_output": [1, 7, 7, 1024],
        "pool5_7x7_s1": [1, 1, 1, 1024],
        "loss3_classifier": [1, 1000],
    }
    assert {k: shapes[k] for k in expected} == expected
    # Each inception module: four branches concatenated, six convolutions and a pool.
    assert sum(1 for t in shapes if t.startswith("inception_4d_")) == 8


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_baseline_plans_a_zoo_network_and_the_plan_verifies(name: str) -> None:
    problem = load_problem(f"zoo:{name}")
    for algorithm, solve in BASELINES.items():
        plan = solve(problem)
        verify(problem, plan.offsets)
        assert problem.lower_bound <= plan.peak <= problem.total_size, algorithm


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("zoo:resnet50", ("resnet50", 1)),
        ("resnet50@4", ("resnet50", 4)),
        ("zoo:googlenet@2", ("googlenet", 2)),
    ],
)
def test_zoo_specs_parse(spec: str, expected: tuple[str, int]) -> None:
    assert parse_zoo_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("zoo:alexnet", "unknown zoo network 'alexnet'"),
        ("zoo:resnet50@0", "core count"),
        ("zoo:resnet50@two", "core count"),
        ("zoo:resnet50@", "core count"),
    ],
)
def test_bad_zoo_names_are_input_errors(spec: str, words: str) -> None:
    with pytest.raises(InputError, match=words) as caught:
        load_problem(spec)
    assert caught.value.field == "input"


def test_cli_zoo_lists_every_network_with_blocks_and_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zoo", "--format", "json", "--cores", "1", "2"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(PINNED) | {f"{name}@2" for name in PINNED}
    for name, (blocks, lower_bound, _) in PINNED.items():
        assert (rows[name]["blocks"], rows[name]["lower_bound"]) == (blocks, lower_bound)
        assert rows[f"{name}@2"]["blocks"] > 2 * blocks - 2
    assert main(["zoo"]) == 0
    table = capsys.readouterr().out
    assert "zoo:resnet50 " in table and "9,633,792" in table and "@2" not in table


def test_cli_plans_and_verifies_a_split_zoo_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_file = tmp_path / "plan.json"
    assert main(["plan", "zoo:mobilenetv2@2", "--algorithm", "first-fit", "-o", str(plan_file)]) == 0
    plan = json.loads(plan_file.read_text())
    assert plan["lower_bound"] == load_problem("zoo:mobilenetv2@2").lower_bound
    assert main(["verify", "zoo:mobilenetv2@2", str(plan_file)]) == 0
    blocks = load_problem("zoo:mobilenetv2@2").n
    assert capsys.readouterr().out.startswith(f"valid: {blocks} blocks (315 tensors), peak ")
    assert main(["bounds", "zoo:nosuchnet@2"]) == 2
    assert "unknown zoo network 'nosuchnet'" in capsys.readouterr().err


def test_zoo_json_is_what_the_generator_writes(tmp_path: Path) -> None:
    """Regenerate one network from Keras and compare with the bundled file (skips without Keras)."""
    os.environ.setdefault("KERAS_BACKEND", "numpy")  # no TensorFlow needed
    pytest.importorskip("keras")
    from experiments.zoo import generate

    assert generate.main(["googlenet", "mobilenetv1", "--out", str(tmp_path)]) == 0
    for name in ("googlenet", "mobilenetv1"):
        bundled = (resources.files("gaplanner.documents.zoo") / f"{name}.json").read_text(encoding="utf-8")
        assert (tmp_path / f"{name}.json").read_text(encoding="utf-8") == bundled
