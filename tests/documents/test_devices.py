"""Heterogeneous units: each tensor one buffer, aligned and placed for every device touching it."""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gaplanner import InputError, build_problem, load_problem, parse_document
from gaplanner.cli import main
from gaplanner.documents.rules import Rules
from gaplanner.documents.split import split_graph
from gaplanner.plans.tensor_check import check_tensor_plan
from gaplanner.plans.verify import find_memory_violation, find_violation
from gaplanner.search.baselines import BASELINES
from gaplanner.search.memories.baselines import plan_order, spill_greedy
from tests.oracles import graph_conflicts
from tests.strategies import SETTINGS, graph_documents


def first_fit_memories(problem):
    """The execution order decoded across the memories (``--algorithm first-fit``)."""
    return plan_order(problem, problem.start_order(), "first-fit")


def shared_by_npu_and_dsp() -> dict[str, Any]:
    """A DSP (16-byte alignment) writes ``a``; an NPU (64) reads it and writes ``b``; the DSP reads ``b``."""
    return {
        "devices": [{"id": "npu", "alignment": 64}, {"id": "dsp", "alignment": 16}],
        "tensors": [
            {"id": "x", "size": 8},
            {"id": "a", "size": 24},
            {"id": "b", "size": 24},
            {"id": "y", "size": 8},
        ],
        "operators": [
            {"id": "fft", "inputs": ["x"], "outputs": ["a"], "device": "dsp"},
            {"id": "conv", "inputs": ["a"], "outputs": ["b"], "device": "npu"},
            {"id": "ifft", "inputs": ["b"], "outputs": ["y"], "device": "dsp"},
        ],
    }


def test_a_tensor_shared_by_a_64_and_a_16_byte_unit_sits_at_a_multiple_of_64() -> None:
    problem = load_problem(shared_by_npu_and_dsp())
    plan = BASELINES["first-fit"](problem)
    offsets = plan.tensor_offsets()
    # x (dsp: 16) at 0; a (dsp and npu: 64) clear of x, so at 64 (16 would do for the DSP alone);
    # b (npu and dsp: 64) clear of a: 0; y (dsp: 16) clear of b: 32.
    assert offsets == {"x": 0, "a": 64, "b": 0, "y": 32}
    assert plan.peak == 88
    rows = {row["id"]: row for row in plan.to_dict()["tensors"]}
    assert rows["a"]["devices"] == ["npu", "dsp"] and rows["a"]["alignment"] == 64
    assert rows["x"]["devices"] == ["dsp"] and rows["x"]["alignment"] == 16
    # without the table, the same order packs a right after x
    plain = shared_by_npu_and_dsp()
    del plain["devices"]
    for op in plain["operators"]:
        del op["device"]
    assert BASELINES["first-fit"](load_problem(plain)).tensor_offsets()["a"] == 8


def test_an_operator_without_a_device_asks_nothing_and_the_graph_alignment_still_holds() -> None:
    doc = shared_by_npu_and_dsp()
    doc["alignment"] = 4
    del doc["operators"][0]["device"]
    problem = load_problem(doc)
    rows = {t["id"]: t for t in BASELINES["first-fit"](problem).to_dict()["tensors"]}
    assert rows["x"]["devices"] == [] and rows["x"]["alignment"] == 4
    assert rows["a"]["devices"] == ["npu"] and rows["a"]["alignment"] == 64


def two_memories() -> dict[str, Any]:
    """The NPU reaches SRAM and DRAM, the DSP only DRAM: what both touch must live in DRAM."""
    doc = shared_by_npu_and_dsp()
    doc["devices"][0]["memories"] = ["sram", "dram"]
    doc["devices"][1]["memories"] = ["dram"]
    doc["memories"] = [{"id": "sram", "capacity": 1024}, {"id": "dram"}]
    doc["tensors"].append({"id": "h", "size": 16})
    doc["operators"].insert(2, {"id": "act", "inputs": ["b"], "outputs": ["h"], "device": "npu"})
    doc["outputs"] = ["y", "h"]
    return doc


@pytest.mark.parametrize("algorithm", [spill_greedy, first_fit_memories])
def test_a_tensor_goes_to_a_memory_every_unit_using_it_reaches(algorithm) -> None:
    problem = load_problem(two_memories())
    plan = algorithm(problem)
    where = {row["id"]: row["memory"] for row in plan.tensor_rows()}
    # x, a, b, y are touched by the DSP: DRAM; h only by the NPU: SRAM is cheaper and has room
    assert where == {"x": "dram", "a": "dram", "b": "dram", "y": "dram", "h": "sram"}
    assert plan.cost_lower_bound == plan.cost


def test_no_in_place_write_joins_tensors_whose_units_share_no_memory() -> None:
    """``h`` lives where the TCM unit reaches (SRAM), ``o`` where the DSP does (DRAM): two buffers."""
    doc = {
        "devices": [
            {"id": "npu", "memories": ["sram", "dram"]},
            {"id": "tcm", "memories": ["sram"]},
            {"id": "dsp", "memories": ["dram"]},
        ],
        "memories": [{"id": "sram", "capacity": 64}, {"id": "dram"}],
        "tensors": [{"id": t, "size": 16} for t in ("x", "h", "o", "y")],
        "operators": [
            {"id": "load", "inputs": ["x"], "outputs": ["h"], "device": "tcm"},
            {"id": "relu", "inputs": ["h"], "outputs": ["o"], "device": "npu", "inplace": {"o": "h"}},
            {"id": "fft", "inputs": ["o"], "outputs": ["y"], "device": "dsp"},
        ],
    }
    rows = {row["id"]: row for row in spill_greedy(load_problem(doc)).tensor_rows()}
    assert rows["h"]["memory"] == "sram" and rows["o"]["memory"] == "dram" and "shares_with" not in rows["o"]
    doc["devices"][2]["memories"] = ["sram", "dram"]  # the DSP reaches SRAM too: relu writes over h
    rows = {row["id"]: row for row in spill_greedy(load_problem(doc)).tensor_rows()}
    assert rows["o"]["shares_with"] == "h" and rows["o"]["memory"] == rows["h"]["memory"] == "sram"


def test_a_split_graph_keeps_its_devices() -> None:
    doc = parse_document(
        {
            "devices": [{"id": "npu", "alignment": 64}, {"id": "dsp", "alignment": 16}],
            "tensors": [
                {"id": "x", "shape": [1, 4, 8], "dtype": "float32"},
                {"id": "a", "shape": [1, 4, 8], "dtype": "float32"},
                {"id": "b", "shape": [1, 4, 8], "dtype": "float32"},
            ],
            "operators": [
                {"id": "conv", "inputs": ["x"], "outputs": ["a"], "device": "npu"},
                {"id": "fft", "inputs": ["a"], "outputs": ["b"], "device": "dsp"},
            ],
        }
    )
    split = split_graph(doc, 2)
    assert split.devices == doc.devices
    assert {op.id: op.device for op in split.operators or []} == {
        "x/split": None, "conv@0": "npu", "conv@1": "npu", "fft@0": "dsp", "fft@1": "dsp",
        "b/combine": None,
    }  # fmt: skip
    plan = BASELINES["greedy-size"](build_problem(split))
    assert plan.tensor_offsets()["a@1"] % 64 == 0


def test_the_independent_checks_catch_a_misaligned_tensor_the_blocks_would_allow() -> None:
    """The verifier and the model check read the device table, not the alignments derived from it."""
    problem = load_problem(shared_by_npu_and_dsp())
    plan = BASELINES["first-fit"](problem)
    offsets = plan.offsets.copy()
    a = problem.ids.index("a")
    offsets[a] = 96  # clear of everything, a multiple of 16 but not of the NPU's 64
    forgetful = replace(problem, alignments=np.ones(problem.n, np.int64))  # as if derived wrongly
    assert "on device 'npu' is at 96, not a multiple of 64" in find_violation(forgetful, offsets)
    tensors = dict(plan.tensor_offsets(), a=96)
    violation = check_tensor_plan(problem.document, Rules(), tensors)
    assert violation == "tensor 'a' at 96: device 'npu' needs a multiple of 64"


def test_the_independent_checks_catch_a_tensor_in_a_memory_a_unit_does_not_reach() -> None:
    problem = load_problem(two_memories())
    plan = spill_greedy(problem)
    memory_of = plan.memory_of.copy()
    b = problem.ids.index("b")
    memory_of[b] = 0  # SRAM: the NPU reaches it, the DSP does not
    offsets = plan.offsets.copy()
    offsets[b] = 512  # clear of h in SRAM
    violation = find_memory_violation(problem, memory_of, offsets)
    assert violation is not None and "'ifft' on device 'dsp' is in memory 'sram'" in violation
    memories = {row["id"]: row["memory"] for row in plan.tensor_rows()} | {"b": "sram"}
    tensors = {row["id"]: row["offset"] for row in plan.tensor_rows()} | {"b": 512}
    violation = check_tensor_plan(problem.document, Rules(), tensors, memories=memories)
    assert violation == "tensor 'b' is in memory 'sram', out of 'dsp''s reach"


# --- bad input: one line naming the field -----------------------------------------------------------


def _bad(change) -> dict[str, Any]:
    doc = two_memories()
    change(doc)
    return doc


BAD = {
    "unknown device": (
        lambda d: d["operators"][1].update(device="gpu"),
        "operators[1].device",
        "unknown device 'gpu'",
    ),
    "device id twice": (
        lambda d: d["devices"].append({"id": "npu"}),
        "devices[2].id",
        "duplicate device id 'npu'",
    ),
    "alignment not a power of two": (
        lambda d: d["devices"][0].update(alignment=48),
        "devices[0].alignment",
        "power of two, got 48",
    ),
    "alignment zero": (
        lambda d: d["devices"][1].update(alignment=0),
        "devices[1].alignment",
        "positive power of two",
    ),
    "no memory every user reaches": (
        lambda d: d["devices"][0].update(memories=["sram"]),
        "tensors[1]",
        "no memory is reachable by every unit using tensor 'a'",
    ),
    "unknown memory": (
        lambda d: d["devices"][1].update(memories=["l2"]),
        "devices[1].memories[0]",
        "no memory 'l2'",
    ),
    "pinned out of reach": (
        lambda d: d["tensors"][1].update(memory="sram"),
        "tensors[1].memory",
        "memory 'sram' is out of reach of a unit using tensor 'a'",
    ),
    "device without a table": (
        lambda d: d.pop("devices"),
        "operators[0].device",
        "the document lists no 'devices'",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_devices_are_one_line_naming_the_field(case: str) -> None:
    change, field, words = BAD[case]
    with pytest.raises(InputError) as caught:
        load_problem(_bad(change))
    assert caught.value.field == field and words in caught.value.reason, str(caught.value)


@pytest.mark.parametrize(
    "case", ["unknown device", "alignment not a power of two", "no memory every user reaches"]
)
def test_the_cli_exits_2_with_one_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change, field, words = BAD[case]
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(_bad(change)))
    code = main(["plan", str(path), "--algorithm", "spill-greedy"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{field}: " in err and words in err


def test_a_pool_refuses_devices_with_one_line() -> None:
    model = shared_by_npu_and_dsp()
    pool = {"models": [{"id": "m", "document": model}, {"id": "n", "document": copy.deepcopy(model)}]}
    with pytest.raises(InputError) as caught:
        load_problem(pool)
    assert caught.value.field == "models[0].document.devices"


def test_the_cli_plan_carries_devices_to_json_and_csv(tmp_path: Path, capsys) -> None:
    out = tmp_path / "plan.csv"
    assert (
        main(["plan", "example:npu_dsp", "--algorithm", "spill-greedy", "--format", "csv", "-o", str(out)])
        == 0
    )
    lines = out.read_text().splitlines()
    assert lines[0] == "id,lower,upper,size,memory,offset,shares_with,devices,alignment"
    rows = {line.split(",")[0]: line.split(",") for line in lines[1:]}
    assert rows["r1"][-2:] == ["npu dsp", "64"] and rows["r1"][4] == "dram"
    assert main(["verify", "example:npu_dsp", str(out)]) == 0
    capsys.readouterr()


# --- property: every plan keeps the device rule, written here from docs/rules.md -----------------------

ALIGNMENTS = [1, 2, 4, 16, 64]


@st.composite
def graphs_on_devices(draw: st.DrawFn):
    """Small random graphs whose operators run on random devices (or on none)."""
    doc = draw(graph_documents(max_ops=5)).model_dump(exclude_none=True)
    devices = [
        {"id": f"d{i}", "alignment": draw(st.sampled_from(ALIGNMENTS))}
        for i in range(draw(st.integers(1, 3)))
    ]
    doc["devices"] = devices
    for op in doc["operators"]:
        choice = draw(st.integers(-1, len(devices) - 1))
        if choice >= 0:
            op["device"] = devices[choice]["id"]
    return parse_document(doc)


def device_alignment(doc, tensor: str) -> int:
    """The rule: a multiple of the alignment of every device whose operators read or write the tensor."""
    table = {d.id: d.alignment for d in doc.devices or []}
    users = [op for op in doc.operators or [] if tensor in op.inputs or tensor in op.outputs]
    return int(np.lcm.reduce([doc.alignment] + [table[op.device] for op in users if op.device is not None]))


def brute_force_optimum(doc) -> int:
    """The smallest arena: first-fit over every order, each tensor at multiples of its device alignment."""
    ids = [t.id for t in doc.tensors or []]
    size = {t.id: t.nbytes for t in doc.tensors or []}
    align = {t: device_alignment(doc, t) for t in ids}
    clash = graph_conflicts(doc)
    best = None
    for order in itertools.permutations(ids):
        at: dict[str, int] = {}
        for t in order:
            offset = 0
            for start, end in sorted((at[u], at[u] + size[u]) for u in at if frozenset((t, u)) in clash):
                if start >= offset + size[t]:
                    break
                offset = max(offset, -(-end // align[t]) * align[t])
            at[t] = offset
        peak = max(at[t] + size[t] for t in ids)
        best = peak if best is None else min(best, peak)
    assert best is not None
    return best


def rule_violation(doc, offsets: dict[str, int]) -> str | None:
    size = {t.id: t.nbytes for t in doc.tensors or []}
    for t in size:
        if offsets[t] % device_alignment(doc, t):
            return f"{t} misaligned"
    for pair in graph_conflicts(doc):
        x, y = sorted(pair)
        if offsets[x] < offsets[y] + size[y] and offsets[y] < offsets[x] + size[x]:
            return f"{x} and {y} overlap"
    return None


@SETTINGS
@given(graphs_on_devices())
def test_every_plan_keeps_the_device_rule_and_no_plan_beats_brute_force(doc) -> None:
    assume(len(doc.tensors or []) <= 6)
    problem = build_problem(doc)
    optimum = brute_force_optimum(doc)
    assert problem.lower_bound <= optimum
    for name, algorithm in BASELINES.items():
        plan = algorithm(problem)
        assert rule_violation(doc, plan.tensor_offsets()) is None, name
        assert plan.peak >= optimum, name
        if plan.optimal:
            assert plan.peak == optimum, name


@st.composite
def graphs_on_devices_with_memories(draw: st.DrawFn):
    """The same, with an SRAM that holds everything and a DRAM, and devices that reach one or both."""
    doc = draw(graphs_on_devices()).model_dump(exclude_none=True)
    room = sum(t["size"] + max(ALIGNMENTS) for t in doc["tensors"])  # every tensor fits, without reuse
    doc["memories"] = [{"id": "sram", "capacity": room}, {"id": "dram"}]
    for device in doc["devices"]:
        reach = draw(st.sampled_from([None, ["sram"], ["dram"], ["sram", "dram"]]))
        if reach is not None:
            device["memories"] = reach
    return parse_document(doc)


def reach_of(doc, tensor: str) -> set[str]:
    """The rule: the memories every device reading or writing the tensor reaches."""
    reach = {m.id for m in doc.memories or []}
    table = {d.id: d for d in doc.devices or []}
    for op in doc.operators or []:
        if op.device is not None and (tensor in op.inputs or tensor in op.outputs):
            reach &= set(table[op.device].memories or reach)
    return reach


@SETTINGS
@given(graphs_on_devices_with_memories())
def test_every_plan_across_memories_keeps_each_units_reach(doc) -> None:
    ids = [t.id for t in doc.tensors or []]
    if any(not reach_of(doc, t) for t in ids):
        with pytest.raises(InputError, match="no memory is reachable by every unit"):
            build_problem(doc)
        return
    problem = build_problem(doc)
    size = {t.id: t.nbytes for t in doc.tensors or []}
    for algorithm in (spill_greedy, first_fit_memories):
        plan = algorithm(problem)
        rows = {row["id"]: row for row in plan.tensor_rows()}
        for t in ids:
            # the cheaper SRAM has room for all: a tensor goes there exactly when its users all reach it
            assert rows[t]["memory"] == ("sram" if "sram" in reach_of(doc, t) else "dram"), t
            assert rows[t]["offset"] % device_alignment(doc, t) == 0
            if rows[t]["memory"] == "sram":
                assert rows[t]["offset"] + size[t] <= doc.memories[0].capacity
        for pair in graph_conflicts(doc):
            x, y = (rows[t] for t in sorted(pair))
            same = x["memory"] == y["memory"]
            assert not (
                same and x["offset"] < y["offset"] + y["size"] and y["offset"] < x["offset"] + x["size"]
            )
