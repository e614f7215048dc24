"""``gaplanner plan A B --together``: several inputs in one pool, each model also planned alone."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

import gaplanner.cli
from gaplanner.deadline import Deadline
from gaplanner.plans.pool_report import compare_alone, model_id, pool_inputs
from gaplanner.search.baselines import first_fit
from tests.problem.test_pools import chain, overlap
from tests.test_cli import run, write


def tensor_layout(plan: dict) -> tuple[dict[str, int], dict[str, int]]:
    return {t["id"]: t["offset"] for t in plan["tensors"]}, {t["id"]: t["size"] for t in plan["tensors"]}


@pytest.mark.parametrize(("how", "pooled"), [("sequential", 64), ("concurrent", 96)])
def test_two_chains_pool_to_the_known_optimum(capsys, tmp_path: Path, how: str, pooled: int) -> None:
    a = write(tmp_path, "a.json", chain("a", [16, 16]))  # alone: 32 bytes
    b = write(tmp_path, "b.json", chain("b", [32, 32]))  # alone: 64 bytes
    code, out, err = run(
        capsys, "plan", a, b, "--together", how, "--generations", "3", "--workers", "1", "-q"
    )
    assert code == 0, err
    plan = json.loads(out)
    assert plan["peak"] == pooled and plan["lower_bound"] <= pooled
    assert plan["pool"]["models"] == [
        {"id": "a", "peak": 32, "lower_bound": 32},
        {"id": "b", "peak": 64, "lower_bound": 64},
    ]
    assert (plan["pool"]["sum_alone"], plan["pool"]["max_alone"]) == (96, 64)
    assert plan["pool"]["saving"] == 96 - pooled
    offsets, sizes = tensor_layout(plan)
    assert set(offsets) == {"a/a0", "a/a1", "b/b0", "b/b1"}
    if how == "concurrent":  # nothing of one model shares bytes with anything of the other
        assert not any(overlap(offsets, sizes, x, y) for x in ("a/a0", "a/a1") for y in ("b/b0", "b/b1"))
    pool_doc = {
        "models": [
            {"id": "a", "document": chain("a", [16, 16])},
            {"id": "b", "document": chain("b", [32, 32])},
        ],
        "together": how,
    }
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(out)
    code, out, _ = run(capsys, "verify", write(tmp_path, "pool.json", pool_doc), str(plan_file))
    assert code == 0 and out.startswith("valid")


def test_a_shared_kv_cache_is_one_buffer_that_persists(capsys, tmp_path: Path) -> None:
    prefill = write(tmp_path, "prefill.json", chain("p", [16, 16], writes="kv"))
    decode = write(tmp_path, "decode.json", chain("d", [32, 32], reads="kv"))
    code, out, err = run(
        capsys, "plan", prefill, decode, "--together", "--shared", "kv", "--algorithm", "first-fit", "-q"
    )
    assert code == 0, err
    plan = json.loads(out)
    offsets, sizes = tensor_layout(plan)
    assert "kv" in offsets and not any(t.endswith("/kv") for t in offsets)
    assert not any(overlap(offsets, sizes, "kv", t) for t in offsets if t != "kv")
    # alone, prefill keeps kv (its output) to its end and decode holds it (its input) from its start
    assert [m["peak"] for m in plan["pool"]["models"]] == [40, 72]
    assert plan["peak"] == 72 == plan["lower_bound"]


def test_the_same_model_twice_runs_twice_and_declared_inputs_pool(capsys, tmp_path: Path) -> None:
    doc = chain("x", [8, 8, 8])
    doc["inputs"] = ["x0"]  # declared, as ONNX documents do
    doc["operators"][0]["inputs"] = []
    doc["operators"] = doc["operators"][1:]
    path = write(tmp_path, "m.json", doc)
    pool = pool_inputs([path, path], "concurrent")
    assert [m for m, _ in pool.models] == ["m", "m-2"]
    assert pool.problem.lower_bound >= 16
    code, out, err = run(capsys, "plan", path, path, "--concurrent", "--algorithm", "greedy-size", "-q")
    assert code == 0, err
    assert json.loads(out)["peak"] == 32


def test_each_model_alone_gets_its_blocks_share_of_the_time_left(tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", chain("a", [16, 16]))
    b = write(tmp_path, "b.json", chain("b", [32, 32, 32]))
    pool = pool_inputs([a, b], "sequential")
    given = []

    def plan_one(problem, deadline):
        given.append((problem.n, deadline.left()))
        return first_fit(problem)

    comparison = compare_alone(pool, first_fit(pool.problem), plan_one, Deadline(10.0))
    (n_a, left_a), (n_b, left_b) = given
    assert (n_a, n_b) == (2, 3) and 3.5 < left_a <= 4.0 and 9.0 < left_b <= 10.0  # 2 of 5 blocks, then all
    assert [m.peak for m in comparison.alone] == [32, 64]
    compare_alone(pool, first_fit(pool.problem), plan_one)
    assert [left for _, left in given[2:]] == [math.inf, math.inf]  # no time limit


def test_the_pooled_plan_and_each_model_alone_share_the_time_limit(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = write(tmp_path, "a.json", chain("a", [16, 16]))
    b = write(tmp_path, "b.json", chain("b", [32, 32, 32]))
    calls = []
    solving = sys.modules["gaplanner.solve"]  # the package's name `solve` is the function
    solve = solving.solve

    def spy(problem, *args, deadline=None, **kwargs):
        calls.append((problem.n, None if deadline is None else deadline.left()))
        return solve(problem, *args, deadline=deadline, **kwargs)

    monkeypatch.setattr(solving, "solve", spy)  # the pooled plan's, through plan_input
    monkeypatch.setattr(gaplanner.cli, "solve", spy)  # each model's alone
    argv = [a, b, "--together", "--time-limit", "20", "--generations", "2", "--workers", "1", "-q"]
    code, out, err = run(capsys, "plan", *argv)
    assert code == 0, err
    assert json.loads(out)["pool"]["sum_alone"] == 32 + 64
    (pooled, left), (n_a, left_a), (n_b, left_b) = calls
    assert (pooled, n_a, n_b) == (5, 2, 3)
    assert left_a is not None and left_b is not None
    # half of the time for the pool, then 2 of 5 blocks for the first model alone, then all that is left
    assert left < 11 and left_a < 9 and left_a < left_b < 20


def test_model_ids_come_from_the_input_names() -> None:
    assert model_id("zoo:resnet50@2") == "resnet50@2"
    assert model_id("example:sram_dram") == "sram_dram"
    assert model_id("/models/bert.ts.onnx") == "bert.ts"


def test_zoo_networks_one_after_another_need_the_largest(capsys) -> None:
    code, out, err = run(
        capsys, "plan", "zoo:mobilenetv1", "zoo:googlenet", "--together", "--algorithm", "greedy-size", "-q"
    )
    assert code == 0, err
    pool = json.loads(out)["pool"]
    assert pool["lower_bound"] == max(m["lower_bound"] for m in pool["models"])
    assert pool["max_alone"] <= pool["peak"] <= pool["sum_alone"]
    assert "pooled" in err and "alone: sum" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["A", "B"], "input: 2 inputs: plan them in one pool with --together"),
        (["A", "C", "--together"], "is a graph and"),
        (["A", "B", "--together", "--shared", "nope"], "--shared: no model has a tensor 'nope'"),
        (["A", "--shared", "kv"], "--shared: shared tensors apply to a pool of models"),
        (["A", "missing.json", "--together"], "no such file"),
        (
            ["A", "--schedule", "S"],
            "s.txt (line 1): no operator 'a/op0' in the document",
        ),  # one model's order
        (["A", "B", "--together", "interleaved", "--schedule", "S"], "s.txt (line 4): no operator 'b/op7'"),
        (["A", "B", "--together", "interleaved"], "--schedule: a schedule is given with together"),
        (["A", "B", "--together", "interleaved", "--schedule", "nope.txt"], "--schedule: cannot read"),
    ],
)
def test_bad_combinations_are_one_line_and_exit_2(
    capsys, tmp_path: Path, argv: list[str], words: str
) -> None:
    names = {
        "A": write(tmp_path, "a.json", chain("a", [16])),
        "B": write(tmp_path, "b.json", chain("b", [16])),
        "C": write(tmp_path, "c.json", {"buffers": [{"id": "c", "lower": 0, "upper": 1, "size": 4}]}),
        "missing.json": str(tmp_path / "missing.json"),
        "S": write_text(tmp_path / "s.txt", "a/op0\n# b runs once a is done\nb/op0\nb/op7\n"),
    }
    code, out, err = run(capsys, "plan", *[names.get(a, a) for a in argv], "--algorithm", "first-fit")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err


@pytest.mark.slow
def test_inputs_with_the_same_memories_pool_and_report_costs(capsys, tmp_path: Path) -> None:
    memories = [{"id": "sram", "capacity": 32, "read_cost": 1}, {"id": "dram", "read_cost": 10}]
    a = write(tmp_path, "a.json", {**chain("a", [16, 16]), "memories": memories})
    b = write(tmp_path, "b.json", {**chain("b", [32, 32]), "memories": memories})
    quick = ("--generations", "30", "-q")
    code, out, err = run(capsys, "plan", a, b, "--together", *quick)
    assert code == 0, err
    plan = json.loads(out)
    assert plan["cost"] == 768 and {m["id"] for m in plan["memories"]} == {"sram", "dram"}
    assert [m["cost"] for m in plan["pool"]["models"]] == [64, 704]  # each alone: the same SRAM to itself
    assert plan["pool"]["cost"] == 768 == plan["pool"]["sum_alone_cost"]
    code, out, err = run(capsys, "plan", a, b, "--concurrent", *quick)
    assert code == 0, err
    assert json.loads(out)["pool"]["cost"] == 1344  # at the same time they share the SRAM's 32 bytes


def test_plan_without_an_input_still_plans_the_default(capsys) -> None:
    code, out, err = run(capsys, "plan", "--algorithm", "first-fit", "-q")
    assert code == 0, err
    assert json.loads(out)["name"] == "resnet50@2"


def write_text(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_an_interleaving_from_a_schedule_file(capsys, tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", chain("a", [16, 16]))
    b = write(tmp_path, "b.json", chain("b", [32, 32]))
    schedule = write_text(tmp_path / "order.txt", "a/op0\nb/op0\nb/op1\n\na/op1\n")
    argv = ["plan", a, b, "--together", "interleaved", "--schedule", schedule, "--algorithm", "first-fit"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    plan = json.loads(out)
    assert plan["peak"] == plan["lower_bound"] == 80  # a0 waits through all of b: a0 + b0 + b1
    assert plan["pool"]["together"] == "interleaved" and plan["pool"]["sum_alone"] == 96
