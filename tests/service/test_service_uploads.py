"""Files sent to ``POST /v1/inputs`` (graph JSON, MiniMalloc CSV, ONNX), the bundled-input list, and the
page at ``/``: what each answers, and one-line 4xx answers for bad files."""

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

from gaplanner.documents.zoo import zoo_names
from gaplanner.plans.verify import verify
from gaplanner.problem.loading import load_problem
from service.app import create_app
from service.config import ServiceSettings
from service.testing import FINISHED, buffers_document, wait_until

CSV = "id,lower,upper,size\na,0,2,100\nb,1,3,200\nc,2,4,100\nd,0,4,50\n"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    folder = tmp_path_factory.mktemp("uploads")
    settings = ServiceSettings(
        db=folder / "jobs.sqlite3",
        api_key=None,
        workers=1,
        max_blocks=100,
        max_body_bytes=20_000,
        default_time_limit=0.5,
        max_time_limit=10.0,
    )
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def upload(client: TestClient, filename: str, body: bytes) -> Any:
    return client.post(
        "/v1/inputs",
        params={"filename": filename},
        content=body,
        headers={"Content-Type": "application/octet-stream"},
    )


def plan_of(client: TestClient, graph: Any) -> dict[str, Any]:
    accepted = client.post("/v1/plans", json={"graph": graph, "options": {"generations": 5}})
    assert accepted.status_code == 202, accepted.text
    location = accepted.json()["links"]["self"]
    job = wait_until(lambda: (j := client.get(location).json())["status"] in FINISHED and j, 300)
    assert job["status"] == "done", job
    return job["plan"]


def check_against(problem: Any, plan: dict[str, Any]) -> None:
    offsets = {b["id"]: b["offset"] for b in plan["blocks"]}
    verify(problem, np.array([offsets[i] for i in problem.ids], np.int64), plan["peak"])
    assert plan["lower_bound"] == problem.lower_bound


def one_line_error(response: Any, status: int, field: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["field"] == field
    assert "\n" not in body["detail"] and "Traceback" not in body["detail"]
    return body["detail"]


def test_a_minimalloc_csv_becomes_buffers_that_plan(client: TestClient) -> None:
    response = upload(client, "four.csv", CSV.encode())
    assert response.status_code == 200, response.text
    read = response.json()
    original = load_problem(("four.csv", CSV))
    assert (read["name"], read["blocks"], read["lower_bound"]) == ("four", 4, original.lower_bound)
    assert [b["id"] for b in read["graph"]["buffers"]] == ["a", "b", "c", "d"]
    check_against(original, plan_of(client, read["graph"]))


def test_a_graph_json_comes_back_as_sent(client: TestClient) -> None:
    doc = buffers_document(30, seed=2)
    read = upload(client, "random.json", json.dumps(doc).encode()).json()
    assert read["graph"] == doc
    assert read["blocks"] == 30
    assert read["lower_bound"] == load_problem(doc).lower_bound


def test_an_onnx_model_becomes_its_graph(client: TestClient, tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    def value(name: str) -> Any:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 64])

    nodes = [
        helper.make_node("Relu", ["x"], ["h1"], name="relu1"),
        helper.make_node("Sigmoid", ["h1"], ["h2"], name="sig"),
        helper.make_node("Add", ["h1", "h2"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "tiny", [value("x")], [value("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "tiny.onnx"
    onnx.save(model, path)

    response = upload(client, "tiny.onnx", path.read_bytes())
    assert response.status_code == 200, response.text
    read = response.json()
    original = load_problem(path)
    assert read["name"] == "tiny"
    assert read["lower_bound"] == original.lower_bound
    assert {t["id"] for t in read["graph"]["tensors"]} == {"x", "h1", "h2", "y"}
    plan = plan_of(client, read["graph"])
    assert {t["id"] for t in plan["tensors"]} == {"x", "h1", "h2", "y"}
    check_against(original, plan)


def test_a_file_that_is_not_onnx(client: TestClient) -> None:
    pytest.importorskip("onnx")
    detail = one_line_error(upload(client, "model.onnx", b"\x00\x01 certainly not protobuf"), 422, "file")
    assert "not an ONNX model" in detail


def test_a_csv_with_a_bad_size(client: TestClient) -> None:
    detail = one_line_error(
        upload(client, "bad.csv", b"id,lower,upper,size\na,0,2,big\n"), 422, "file.line 2, column size"
    )
    assert "'big'" in detail


def test_a_csv_without_the_columns(client: TestClient) -> None:
    one_line_error(upload(client, "bad.csv", b"name,from,to\na,0,2\n"), 422, "file.header")


def test_vector_clock_csvs_are_refused_with_the_reason(client: TestClient) -> None:
    body = b"id,lower,upper,size\na,0:0,1:0,8\nb,0:1,0:2,8\n"
    assert "vector-clock" in one_line_error(upload(client, "clocks.csv", body), 422, "file")


def test_an_empty_or_binary_file(client: TestClient) -> None:
    assert "empty" in one_line_error(upload(client, "empty.csv", b""), 422, "file")
    assert "UTF-8" in one_line_error(upload(client, "bin.csv", b"\xff\xfe\x00"), 422, "file")


def test_a_file_over_the_size_limit(client: TestClient) -> None:
    body = b"id,lower,upper,size\n" + b"".join(b"b%d,0,1,1\n" % i for i in range(3000))
    assert len(body) > 20_000
    one_line_error(upload(client, "big.csv", body), 413, "body")


def test_a_file_over_the_block_limit(client: TestClient) -> None:
    body = b"id,lower,upper,size\n" + b"".join(b"b%d,0,1,1\n" % i for i in range(101))
    assert "at most 100" in one_line_error(upload(client, "many.csv", body), 413, "file")


def test_an_unknown_suffix(client: TestClient) -> None:
    one_line_error(upload(client, "model.pt", b"whatever"), 415, "filename")


def test_the_bundled_inputs_are_listed(client: TestClient) -> None:
    listed = client.get("/v1/inputs").json()
    assert listed["zoo"] == [f"zoo:{name}" for name in zoo_names()]
    assert "example:seed000_queue" in listed["examples"]


def test_the_page_is_served_at_the_root(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    assert 'id="drop"' in page and "/v1/inputs" in page and "/v1/plans" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing from outside
    assert "https://" not in page


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbfid,lower,upper,size\na,0,2,100\nb,1,3,200\n",
        b"id,lower,upper,size\r\na,0,2,100\r\nb,1,3,200\r\n",
        b"\xef\xbb\xbfid,lower,upper,size\r\na,0,2,100\r\nb,1,3,200\r\n",
    ],
    ids=["bom", "crlf", "bom_crlf"],
)
def test_a_csv_keeps_its_ids_with_a_bom_or_crlf(client: TestClient, body: bytes) -> None:
    response = upload(client, "two.csv", body)
    assert response.status_code == 200, response.text
    buffers = response.json()["graph"]["buffers"]
    assert [(b["id"], b["size"]) for b in buffers] == [("a", 100), ("b", 200)]


def test_a_json_upload_with_a_bom(client: TestClient) -> None:
    doc = buffers_document(5, seed=3)
    response = upload(client, "bom.json", b"\xef\xbb\xbf" + json.dumps(doc).encode())
    assert response.status_code == 200, response.text
    assert response.json()["graph"] == doc


def symbolic_model_bytes() -> bytes:
    """x[N, 3, seq] -> relu -> sigmoid -> add: float32, so a plan's bound is 2 tensors of N*3*seq*4."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "seq"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["r"], ["s"], name="sig"),
        helper.make_node("Add", ["s", "r"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "sym", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def upload_with(client: TestClient, filename: str, body: bytes, **params: Any) -> Any:
    return client.post(
        "/v1/inputs",
        params={"filename": filename, **params},
        content=body,
        headers={"Content-Type": "application/octet-stream"},
    )


def test_a_symbolic_batch_is_fixed_by_the_upload_options(client: TestClient) -> None:
    body = symbolic_model_bytes()
    refused = one_line_error(upload(client, "sym.onnx", body), 422, "file.graph.input[0]")
    assert "batch=N" in refused and "dim=seq=N" in refused and "--batch" not in refused
    read = upload_with(client, "sym.onnx", body, batch=2, dim="seq=5")
    assert read.status_code == 200, read.text
    shapes = {t["id"]: t["shape"] for t in read.json()["graph"]["tensors"]}
    assert shapes["x"] == [2, 3, 5]
    assert read.json()["lower_bound"] == 2 * 2 * 3 * 5 * 4  # r and s at the add, which writes y over s
    by_name = upload_with(client, "sym.onnx", body, dim=["N=4", "seq=1"]).json()
    assert {t["id"]: t["shape"] for t in by_name["graph"]["tensors"]}["x"] == [4, 3, 1]
    one_line_error(upload_with(client, "sym.onnx", body, dim="seq"), 422, "dim")
    assert "no symbolic dimension 'zz'" in one_line_error(
        upload_with(client, "sym.onnx", body, dim="zz=3"), 422, "dim"
    )
    assert "ONNX models only" in one_line_error(
        upload_with(client, "a.csv", CSV.encode(), batch=2), 422, "batch"
    )
    one_line_error(upload_with(client, "sym.onnx", body, batch=0), 422, "batch")
