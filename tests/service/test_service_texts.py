"""Jobs travel as texts: the worker reads the request as it was stored and renders the result the
server answers with; answers are the bytes the route's model renders, for old stores too."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from service.config import ServiceSettings
from service.inputs import SHORT_DIGITS, parse_request, prepare, short_numbers
from service.job_kinds import JOB_ROUTES
from service.routes import JobHandlers
from service.store import JobStore, NewJob, json_text
from service.testing import buffers_document, check_plan
from service.worker import rendered, run_job, run_stored

MEMORIES = {
    "memories": [{"id": "sram", "capacity": 4096, "read_cost": 1, "write_cost": 1}, {"id": "dram"}],
    "buffers": [
        {"id": "a", "lower": 0, "upper": 2, "size": 1024},
        {"id": "b", "lower": 1, "upper": 3, "size": 2048},
        {"id": "c", "lower": 2, "upper": 4, "size": 4096},
    ],
}
CASES = {
    "ga plan": ("plan", buffers_document(30, seed=3), {"generations": 3, "time_limit": 5.0}),
    "baseline plan": ("plan", buffers_document(30, seed=4), {"algorithm": "greedy-size", "time_limit": 5.0}),
    "memories plan": ("plan", MEMORIES, {"generations": 2, "time_limit": 5.0}),
    "comparison": ("compare", "example:seed000_queue", {"generations": 2, "time_limit": 5.0}),
}


def test_short_numbers_sees_every_run_of_digits() -> None:
    assert short_numbers(b'{"size": %d}' % (10**SHORT_DIGITS - 1))
    assert not short_numbers(b'{"size": %d}' % 10**SHORT_DIGITS)
    assert not short_numbers(b'{"size": -%d}' % 2**63)
    assert not short_numbers(b'{"id": "b1234567890123"}')  # in a string too: the full checks then run


def test_a_submission_stores_its_request_as_sent_and_the_worker_reads_it(tmp_path: Path) -> None:
    settings = ServiceSettings(db=tmp_path / "jobs.sqlite3", warm_up=False)
    body = (
        b'{ "options": {"algorithm": "best-fit-coalescing"},\n "graph": %s }'
        % json.dumps(buffers_document(20, seed=1)).encode()
    )
    job = prepare("plan", parse_request("plan", body), settings, body)
    store = JobStore(settings.db)
    store.insert(job)
    claimed = store.mark_running(job.id)
    assert claimed is not None and claimed[1] == body  # the bytes as they came, not encoded again
    result = run_stored(job.id, None, *claimed, max_trace=100)
    check_plan(buffers_document(20, seed=1), json.loads(result["result"]))
    store.close()


def test_a_job_stored_without_its_request_is_read_from_its_graph(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    store.insert(NewJob("old", "plan", "example:seed000_queue", {}, "seed000_queue", 6, 5120, "ga"))
    claimed = store.mark_running("old")
    assert claimed is not None and json.loads(claimed[1]) == {"graph": "example:seed000_queue"}
    store.close()


def finished(
    path: Path, kind: str, graph: Any, options: dict[str, Any], result: str, rendered: bool
) -> bytes:
    """A poll's answer for a job finished with ``result``, from a store of its own (same id, times)."""
    store = JobStore(path)
    store.insert(NewJob("same", kind, graph, options, "name", 3, 7, options.get("algorithm", "ga")))
    store.finish(
        "same", "done", result=result, progress=json_text({"generation": 1}), peak=1, rendered=rendered
    )
    with sqlite3.connect(path) as db:
        db.execute("UPDATE jobs SET created = 0, started = 1, finished = 2")
    try:
        return JobHandlers(ServiceSettings(db=path), {"store": store, "manager": None}).job_json(kind, "same")
    finally:
        store.close()


@pytest.mark.parametrize("case", CASES)
def test_a_rendered_result_answers_the_same_bytes_as_one_stored_as_data(tmp_path: Path, case: str) -> None:
    kind, graph, options = CASES[case]
    defaults = JOB_ROUTES[kind].request.model_validate({"graph": graph}).options  # type: ignore[attr-defined]
    options = {**defaults.model_dump(), **options}
    result = run_job("j", None, kind, graph, options)
    data = result.get("plan") or result.get("comparison")
    old = finished(tmp_path / "old.sqlite3", kind, graph, options, json_text(data), rendered=False)
    new = finished(tmp_path / "new.sqlite3", kind, graph, options, rendered(kind, data), rendered=True)
    assert new == old
    assert json.loads(new)[JOB_ROUTES[kind].result]["name"]


def test_the_result_is_the_last_field_of_each_job_model() -> None:
    for routes in JOB_ROUTES.values():
        assert list(routes.job.model_fields)[-1] == routes.result


def test_a_store_from_before_request_texts_opens_and_runs_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite3"
    store = JobStore(path)
    store.insert(NewJob("queued", "plan", buffers_document(10), {}, "n", 10, 1, "ga"))
    store.close()
    with sqlite3.connect(path) as db:  # as schema 2 wrote it
        db.execute("ALTER TABLE jobs DROP COLUMN request")
        db.execute("ALTER TABLE jobs DROP COLUMN result_rendered")
        db.execute("PRAGMA user_version=2")
    store = JobStore(path)
    claimed = store.mark_running("queued")
    assert claimed is not None and json.loads(claimed[1])["graph"] == buffers_document(10)
    assert store.get("queued")["result_rendered"] == 0
    store.close()
