"""Status polls answered before FastAPI's routing (service.polls): the same answers, the same key rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from service.app import create_app
from service.config import ServiceSettings
from service.polls import poll_target, supplied_key

KEY = "poll-key"
BUFFERS = {
    "buffers": [
        {"id": "a", "lower": 0, "upper": 2, "size": 8},
        {"id": "b", "lower": 1, "upper": 3, "size": 8},
    ]
}


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/v1/plans/abc", ("plan", "abc")),
        ("/v1/compare/abc", ("compare", "abc")),
        ("/v1/plans/abc/trace", None),
        ("/v1/plans/abc/", None),
        ("/v1/plans/", None),
        ("/v1/plans", None),
        ("/v1/health", None),
    ],
)
def test_poll_target(path: str, target: tuple[str, str] | None) -> None:
    assert poll_target(path) == target


def test_supplied_key_reads_x_api_key_before_bearer() -> None:
    assert supplied_key([(b"authorization", b"Bearer tok"), (b"x-api-key", b"key")]) == "key"
    assert supplied_key([(b"authorization", b"bearer tok")]) == "tok"
    assert supplied_key([(b"authorization", b"Basic tok")]) is None
    assert supplied_key([(b"authorization", b"Bearer ")]) is None
    assert supplied_key([]) is None


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory):
    tmp: Path = tmp_path_factory.mktemp("polls")
    settings = ServiceSettings(db=tmp / "jobs.sqlite3", workers=1, warm_up=False, api_key=KEY)
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/plans", json={"graph": BUFFERS}, headers={"X-API-Key": KEY})
        assert answer.status_code == 202
        yield client, answer.json()["id"]


@pytest.mark.parametrize(
    "headers", [{"X-API-Key": KEY}, {"Authorization": f"Bearer {KEY}"}, {"authorization": f"bearer {KEY}"}]
)
def test_poll_with_the_key(keyed: tuple[TestClient, str], headers: dict[str, str]) -> None:
    client, job_id = keyed
    answer = client.get(f"/v1/plans/{job_id}", headers=headers)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["id"] == job_id and answer.json()["kind"] == "plan"


@pytest.mark.parametrize(
    "headers",
    [{}, {"X-API-Key": "wrong"}, {"X-API-Key": "wrong", "Authorization": f"Bearer {KEY}"}, {"X-API-Key": ""}],
)
def test_poll_without_the_key_is_401(keyed: tuple[TestClient, str], headers: dict[str, Any]) -> None:
    client, job_id = keyed
    answer = client.get(f"/v1/plans/{job_id}", headers=headers)
    assert answer.status_code == 401
    assert "API key" in answer.json()["detail"] and "\n" not in answer.json()["detail"]


def test_poll_of_an_unknown_or_other_kind_of_job_is_404(keyed: tuple[TestClient, str]) -> None:
    client, job_id = keyed
    for path in ("/v1/plans/nope", f"/v1/compare/{job_id}"):
        answer = client.get(path, headers={"X-API-Key": KEY})
        assert answer.status_code == 404
        assert answer.json()["field"] == "id"
