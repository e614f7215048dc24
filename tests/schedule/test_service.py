"""The service's ``schedule`` option: a searched order in the plan, bad dependencies answered 422."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("pydantic_settings")

from fastapi.testclient import TestClient

from gaplanner.documents.schema import parse_document
from service.app import create_app
from tests.schedule.test_interleave import assert_valid_interleaving, pool_data, two_chains
from tests.schedule.test_planning import check_plan
from tests.schedule.test_search import fan_out
from tests.service.test_service_api import finish, settings, submit


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = create_app(settings(Path(tmp_path_factory.mktemp("service"))))
    with TestClient(app) as test_client:
        yield test_client


@pytest.mark.slow
def test_a_plan_job_searches_the_order(client: TestClient) -> None:
    # a fresh worker may first compile the order search's kernels: minutes on a busy machine
    job = finish(client, submit(client, fan_out(4), schedule="search", algorithm="greedy-size"), 900)
    assert job["status"] == "done", job
    plan = job["plan"]
    check_plan(parse_document(fan_out(4)), plan)
    assert plan["certificate"]["given_bound"] == 41 and plan["certificate"]["chosen_bound"] == 14


def test_a_dependency_cycle_answers_422_naming_an_operator(client: TestClient) -> None:
    graph = fan_out(2)
    graph["operators"][0]["after"] = ["join"]
    response = client.post("/v1/plans", json={"graph": graph, "options": {"schedule": "search"}})
    assert response.status_code == 422
    assert "cycle through operator 'grow0'" in response.text


def test_a_buffer_list_has_no_order_to_search(client: TestClient) -> None:
    graph = {"buffers": [{"id": "a", "lower": 0, "upper": 1, "size": 4}]}
    response = client.post("/v1/plans", json={"graph": graph, "options": {"schedule": "search"}})
    assert response.status_code == 422 and "options.schedule" in response.text


@pytest.mark.slow
def test_a_plan_job_searches_a_pools_interleaving(client: TestClient) -> None:
    job = finish(
        client, submit(client, pool_data(two_chains()), schedule="search", algorithm="greedy-size"), 900
    )
    assert job["status"] == "done", job
    plan = job["plan"]
    assert_valid_interleaving(two_chains(), plan["schedule"])
    assert plan["certificate"]["given_bound"] == 112 and plan["certificate"]["chosen_bound"] == 80


@pytest.mark.parametrize(
    ("together", "field"), [("sequential", "graph.together"), ("concurrent", "graph.together")]
)
def test_a_pool_not_interleaved_has_no_interleaving_to_search(
    client: TestClient, together: str, field: str
) -> None:
    graph = {**pool_data(two_chains()), "together": together}
    response = client.post("/v1/plans", json={"graph": graph, "options": {"schedule": "search"}})
    assert response.status_code == 422 and response.json()["field"] == field
    assert "searched for models run 'interleaved'" in response.json()["detail"]
