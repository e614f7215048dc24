"""Idempotency keys: a retried submission gets the job it made, across restarts, never a second one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("pydantic_settings")

from fastapi.testclient import TestClient

from service.app import create_app
from service.store import DuplicateKey, JobStore, NewJob
from tests.service.test_service_api import finish, settings

BODY = {"graph": "example:seed000_queue", "options": {"algorithm": "first-fit"}}


def post(client: TestClient, key: str | None, body: dict = BODY, route: str = "/v1/plans"):
    return client.post(route, json=body, headers={"Idempotency-Key": key} if key is not None else {})


def total(client: TestClient, route: str = "/v1/plans") -> int:
    return client.get(route).json()["total"]


@pytest.mark.slow
def test_a_retry_with_the_same_key_gets_the_same_job_and_survives_a_restart(tmp_path: Path) -> None:
    with TestClient(create_app(settings(tmp_path))) as client:
        first = post(client, "order-17")
        assert first.status_code == 202 and "idempotent-replayed" not in first.headers
        again = post(client, "order-17")
        assert again.status_code == 202 and again.headers["idempotent-replayed"] == "true"
        assert (
            again.json()["id"] == first.json()["id"]
            and again.headers["location"] == first.headers["location"]
        )
        assert total(client) == 1
        assert finish(client, first.headers["location"])["status"] == "done"
        other = post(client, "order-18")  # another key is another job
        assert other.json()["id"] != first.json()["id"] and total(client) == 2
        assert post(client, None).json()["id"] not in (first.json()["id"], other.json()["id"])
    with TestClient(create_app(settings(tmp_path))) as client:  # the same database, a new server
        replayed = post(client, "order-17")
        assert replayed.json()["id"] == first.json()["id"] and replayed.json()["status"] == "done"
        assert total(client) == 3


@pytest.mark.slow
def test_the_same_key_with_another_request_or_a_malformed_key_is_422(tmp_path: Path) -> None:
    with TestClient(create_app(settings(tmp_path))) as client:
        assert post(client, "k").status_code == 202
        changed = post(client, "k", {**BODY, "options": {"algorithm": "greedy-size"}})
        assert changed.status_code == 422 and changed.json()["field"] == "Idempotency-Key"
        for bad in ("", "has space", "x" * 256):
            response = post(client, bad)
            assert response.status_code == 422 and response.json()["field"] == "Idempotency-Key", bad
        assert total(client) == 1
        compare = post(client, "k", {"graph": "example:seed000_queue"}, "/v1/compare")
        assert compare.status_code == 202  # keys are per kind of job


def job(job_id: str, key: str | None) -> NewJob:
    return NewJob(job_id, "plan", {"buffers": []}, {}, "n", 1, 1, "ga", key, "digest")


def test_two_jobs_stored_with_one_key_the_second_is_refused_and_not_stored(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    store.insert(job("a", "same"))
    with pytest.raises(DuplicateKey):
        store.insert(job("b", "same"))
    store.insert(job("c", None))
    store.insert(job("d", None))  # no key: any number of jobs
    assert store.get("b") is None and store.by_key("plan", "same")["id"] == "a"
    store.close()


def test_a_store_from_before_keys_opens_and_keeps_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    store = JobStore(path)
    store.insert(job("old", None))
    store.close()
    db = sqlite3.connect(path)  # as the first schema wrote it: no key columns
    db.execute("DROP INDEX jobs_idempotency")
    db.execute("ALTER TABLE jobs DROP COLUMN idempotency_key")
    db.execute("ALTER TABLE jobs DROP COLUMN request_digest")
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    store = JobStore(path)
    assert store.get("old") is not None
    store.insert(job("new", "key"))
    assert store.by_key("plan", "key")["id"] == "new"
    store.close()
