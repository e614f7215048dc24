"""Documents with memories through the REST service: each block's memory in the plan, does-it-fit answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("pydantic_settings")

from fastapi.testclient import TestClient

from gaplanner.plans.verify import find_memory_violation
from gaplanner.problem.loading import load_problem
from service.app import create_app
from tests.service.test_service_api import finish, settings, submit

QUICK = {"generations": 20}
ROOT = Path(__file__).parents[2]


def sram_dram(sram: int, *, last: dict[str, Any] | None = None) -> dict[str, Any]:
    """Two 48-byte buffers live at once, then a 16-byte one; each written once and read once."""
    return {
        "name": "two-levels",
        "memories": [
            {"id": "sram", "capacity": sram, "read_cost": 1, "write_cost": 1},
            last or {"id": "dram", "read_cost": 10, "write_cost": 10},
        ],
        "buffers": [
            {"id": "a", "lower": 0, "upper": 2, "size": 48},
            {"id": "b", "lower": 1, "upper": 3, "size": 48},
            {"id": "c", "lower": 3, "upper": 4, "size": 16},
        ],
    }


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = create_app(settings(tmp_path_factory.mktemp("memories")))
    with TestClient(app) as test_client:
        yield test_client


def check_memory_plan(graph: Any, plan: dict[str, Any]) -> dict[str, str]:
    """The served placement, checked: the library's verifier, and each memory's capacity and peak here."""
    problem = load_problem(graph)
    names = problem.memories.ids
    rows = {b["id"]: b for b in plan["blocks"]}
    memory_of = np.array([names.index(rows[bid]["memory"]) for bid in problem.ids])
    offsets = np.array([rows[bid]["offset"] for bid in problem.ids])
    assert find_memory_violation(problem, memory_of, offsets) is None
    for m, memory in enumerate(plan["memories"]):
        ends = [
            rows[bid]["offset"] + rows[bid]["size"]
            for bid in problem.ids
            if rows[bid]["memory"] == memory["id"]
        ]
        assert memory["peak"] == max(ends, default=0) and memory["blocks"] == len(ends)
        capacity = problem.memories.capacities[m]
        assert capacity < 0 or memory["peak"] <= capacity
    return {bid: row["memory"] for bid, row in rows.items()}


@pytest.mark.parametrize("algorithm", ["ga", "spill-greedy", "first-fit"])
def test_a_two_level_plan_comes_back_with_each_blocks_memory(client: TestClient, algorithm: str) -> None:
    doc = sram_dram(64)
    job = finish(client, submit(client, doc, algorithm=algorithm, **QUICK))
    assert job["status"] == "done", job
    plan = job["plan"]
    where = check_memory_plan(doc, plan)
    # a and b cannot share the 64-byte SRAM: one goes to DRAM (20 per byte), the other two stay (2 per byte)
    assert sorted(where.values()) == ["dram", "sram", "sram"] and where["c"] == "sram"
    assert plan["cost"] == 2 * 48 + 20 * 48 + 2 * 16
    assert plan["cost_lower_bound"] == 2 * (48 + 48 + 16)
    assert plan["peak"] == sum(m["peak"] for m in plan["memories"])
    # the bound on the peak holds for the peaks summed (the bytes live at once are somewhere): a and b, 96
    assert plan["lower_bound"] == 96 and plan["ratio"] == plan["peak"] / 96
    assert plan["optimal"] is False  # about the cost, which is above its bound
    assert job["progress"]["best_peak"] == plan["peak"]


def test_a_graph_with_memories_by_name_places_every_tensor(client: TestClient) -> None:
    job = finish(client, submit(client, "example:sram_dram", **QUICK))
    assert job["status"] == "done", job
    plan = job["plan"]
    check_memory_plan("example:sram_dram", plan)
    tensors = {t["id"]: t for t in plan["tensors"]}
    assert tensors["image"]["memory"] == "dram" and tensors["logits"] == {
        "id": "logits", "memory": "dram", "offset": 0, "size": 40,
    }  # fmt: skip
    assert client.get(job["links"]["view"]).status_code == 200


def test_bounded_memories_ask_whether_it_fits(client: TestClient) -> None:
    fits = sram_dram(64, last={"id": "l2", "capacity": 48})
    job = finish(client, submit(client, fits, **QUICK))
    assert job["status"] == "done", job
    assert job["plan"]["fits"] is True
    check_memory_plan(fits, job["plan"])
    no_room = sram_dram(64, last={"id": "l2", "capacity": 32})  # a or b has nowhere to go
    job = finish(client, submit(client, no_room, **QUICK))
    assert job["status"] == "failed" and job["error"].startswith("does not fit:"), job
    proof = sram_dram(48, last={"id": "l2", "capacity": 40})  # 96 bytes live at once, 88 in all
    proof["buffers"][2]["size"] = 8
    job = finish(client, submit(client, proof, **QUICK))
    assert job["status"] == "failed" and "the lower bound is 96 bytes" in job["error"], job


def test_one_memory_with_a_capacity_is_the_one_arena_question(client: TestClient) -> None:
    doc = sram_dram(64)
    doc["memories"] = [{"id": "tcm", "capacity": 112}]
    job = finish(client, submit(client, doc, algorithm="greedy-size"))
    assert job["status"] == "done", job
    plan = job["plan"]
    assert plan["fits"] is True and plan["capacity"] == 112 and plan["peak"] == 96 == plan["lower_bound"]
    doc["memories"] = [{"id": "tcm", "capacity": 95}]
    job = finish(client, submit(client, doc, algorithm="greedy-size"))
    assert job["status"] == "failed" and "above the capacity of 95" in job["error"], job


@pytest.mark.parametrize(
    ("route", "options", "field", "words"),
    [
        ("/v1/compare", {}, "graph.memories", "a comparison plans one arena"),
        (
            "/v1/plans",
            {"algorithm": "greedy-size"},
            "options.algorithm",
            "choose from ga, first-fit, spill-greedy",
        ),
    ],
)
def test_what_cannot_plan_across_memories_answers_422(
    client: TestClient, route: str, options: dict[str, Any], field: str, words: str
) -> None:
    response = client.post(route, json={"graph": sram_dram(64), "options": options})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and words in response.json()["detail"]


def test_one_arena_plans_carry_no_memory_fields(client: TestClient, tmp_path: Path) -> None:
    doc = sram_dram(64)
    del doc["memories"]
    job = finish(client, submit(client, doc, algorithm="first-fit"))
    plan = job["plan"]
    assert {"memories", "cost", "fits", "capacity"}.isdisjoint(plan)
    assert all(set(b) == {"id", "offset", "size"} for b in plan["blocks"])


def test_a_bundled_pool_with_memories_plans_by_name(client: TestClient) -> None:
    job = finish(client, submit(client, "example:prefill_decode_pool", **QUICK))
    assert job["status"] == "done", job
    check_memory_plan("example:prefill_decode_pool", job["plan"])
    tensors = {t["id"] for t in job["plan"]["tensors"]}
    assert "kv" in tensors and {"prefill/h1", "decode/out"} <= tensors


def test_a_graph_on_several_devices_plans_with_each_tensors_units(client: TestClient) -> None:
    job = finish(client, submit(client, "example:npu_dsp", **QUICK))
    assert job["status"] == "done", job
    check_memory_plan("example:npu_dsp", job["plan"])
    tensors = {t["id"]: t for t in job["plan"]["tensors"]}
    # written by the NPU (64, SRAM or DRAM), read by the DSP (16, DRAM only): one buffer for both
    assert tensors["r1"]["devices"] == ["npu", "dsp"] and tensors["r1"]["alignment"] == 64
    assert tensors["r1"]["memory"] == "dram" and tensors["r1"]["offset"] % 64 == 0
    assert client.get(job["links"]["view"]).status_code == 200


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (
            lambda d: d["operators"][0].update(device="gpu"),
            "graph.operators[0].device",
            "unknown device 'gpu'",
        ),
        (lambda d: d["devices"].append({"id": "npu"}), "graph.devices[3].id", "duplicate device id 'npu'"),
        (lambda d: d["devices"][1].update(alignment=24), "graph.devices[1].alignment", "power of two"),
        (lambda d: d["devices"][0].update(memories=["sram"]), "graph.tensors[1]", "no memory is reachable"),
    ],
)
def test_bad_devices_answer_422_naming_the_field(client: TestClient, change, field: str, words: str) -> None:
    doc = json.loads((ROOT / "gaplanner" / "documents" / "examples" / "npu_dsp.json").read_text())
    change(doc)
    for route in ("/v1/plans", "/v1/compare"):
        response = client.post(route, json={"graph": doc, "options": {}})
        assert response.status_code == 422, response.text
        assert response.json()["field"] == field and words in response.json()["detail"]


def two_chains_pool(together: str = "sequential") -> dict[str, Any]:
    def chain(prefix: str, size: int) -> dict[str, Any]:
        return {
            "tensors": [{"id": f"{prefix}0", "size": size}, {"id": f"{prefix}1", "size": size}],
            "operators": [
                {"id": "op0", "outputs": [f"{prefix}0"]},
                {"id": "op1", "inputs": [f"{prefix}0"], "outputs": [f"{prefix}1"]},
            ],
        }

    return {"models": [{"id": "a", "document": chain("a", 16)}, {"id": "b", "document": chain("b", 32)}],
            "together": together}  # fmt: skip


@pytest.mark.parametrize(("together", "peak"), [("sequential", 64), ("concurrent", 96)])
def test_an_inline_pool_document_plans_to_its_known_arena(
    client: TestClient, together: str, peak: int
) -> None:
    job = finish(client, submit(client, two_chains_pool(together), **QUICK))
    assert job["status"] == "done", job
    assert job["plan"]["peak"] == peak == job["plan"]["lower_bound"]
    assert {t["id"] for t in job["plan"]["tensors"]} == {"a/a0", "a/a1", "b/b0", "b/b1"}


def test_a_bad_inline_pool_answers_422_naming_the_field(client: TestClient) -> None:
    pool = two_chains_pool()
    pool["models"][1]["id"] = "a"
    response = client.post("/v1/plans", json={"graph": pool})
    assert response.status_code == 422
    assert response.json()["field"] == "graph.models[1].id" and "used twice" in response.json()["detail"]
