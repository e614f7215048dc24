"""Faults the service must survive without losing a job: a full disk under the store, requests cut
short, a killed worker and a killed server under load (a short run of ``python -m experiments.faults``).

A full disk is simulated where it needs no root by capping the database's size
(``PRAGMA max_page_count``): SQLite answers SQLITE_FULL exactly as on a full disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("pydantic_settings")

from fastapi.testclient import TestClient

from service.app import create_app
from service.config import ServiceSettings
from service.jobs import JobManager
from service.store import JobStore, NewJob, StoreFull, json_text
from service.testing import (
    FINISHED,
    buffers_document,
    check_plan,
    unreachable_bound_document,
    wait_until,
)
from tests.conftest import session_processes

UNLIMITED = 1073741823  # SQLite's default max_page_count


pytestmark = pytest.mark.slow  # real servers, killed and restarted under load


def cap_size(store: JobStore, pages: int | None) -> None:
    """No page beyond the current ones (``pages=None``), or ``pages`` at most: the disk is full."""
    with store._lock:
        if pages is None:
            pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")


def job(number: int, blocks: int = 200) -> NewJob:
    return NewJob(f"job{number}", "plan", buffers_document(blocks, seed=number), {}, "x", blocks, 1, "ga")


def test_a_full_store_refuses_writes_cleanly_and_takes_them_again_once_it_has_room(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    store.insert(job(0))
    store.mark_running("job0")
    cap_size(store, None)
    with pytest.raises(StoreFull):
        store.insert(job(1, 2000))
    big = json_text({"blocks": [{"id": f"b{i}", "offset": i, "size": 1} for i in range(5000)]})
    with pytest.raises(StoreFull):  # a result does not
        store.finish("job0", "done", result=big, peak=1)
    assert store.get("job0")["status"] == "running"  # nothing half written
    cap_size(store, UNLIMITED)
    store.finish("job0", "done", result=big, peak=1)
    store.insert(job(1, 2000))
    assert store.counts() == {"done": 1, "queued": 1}
    store.close()


def test_a_transaction_on_a_full_store_raises_store_full(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    for k in range(3):
        store.insert(job(k, 20))
    cap_size(store, None)
    with pytest.raises(StoreFull), store._transaction() as db:  # SQLite rolls back itself on SQLITE_FULL
        db.execute("UPDATE jobs SET graph = ? WHERE id = 'job0'", ("x" * 200_000,))
    assert store.requeue("job1", count_attempt=True) == 1  # the writer still works
    store.close()


@pytest.fixture
def full_disk_app(tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    settings = ServiceSettings(
        db=tmp_path / "jobs.sqlite3", api_key=None, workers=1, max_time_limit=30.0, default_time_limit=0.5
    )
    app = create_app(settings)
    with TestClient(app) as client:
        yield client, app.state.manager


def test_a_full_disk_answers_503_and_loses_no_accepted_job(full_disk_app) -> None:
    client, manager = full_disk_app
    running_doc = unreachable_bound_document(60, seed=5)
    options = {"time_limit": 1.5, "stall_generations": None, "exact_share": 0}
    accepted = client.post("/v1/plans", json={"graph": running_doc, "options": options})
    assert accepted.status_code == 202
    location = accepted.json()["links"]["self"]
    wait_until(lambda: client.get(location).json()["status"] == "running", 60)

    cap_size(manager.store, None)  # the disk fills while it searches
    refused = client.post("/v1/plans", json={"graph": buffers_document(80, seed=1), "options": {}})
    assert refused.status_code == 503, refused.text
    assert refused.json() == {"detail": "the server's storage is full; retry later", "field": None}
    assert int(refused.headers["retry-after"]) > 0
    wait_until(lambda: manager._unsaved, 60)  # the search ended; its result waits for room
    assert client.get(location).json()["status"] == "running"

    cap_size(manager.store, UNLIMITED)  # room again
    finished = wait_until(lambda: (j := client.get(location).json())["status"] == "done" and j, 30)
    check_plan(running_doc, finished["plan"])
    again = client.post("/v1/plans", json={"graph": buffers_document(80, seed=1), "options": {}})
    assert again.status_code == 202


def test_a_late_recovery_leaves_this_servers_own_jobs_alone(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    store.insert(job(0, 20))
    store.mark_running("job0")  # the last run's
    last_runs_jobs = store.last_seq()
    store.insert(job(1, 20))
    store.mark_running("job1")  # this run's, running when the recovery comes
    recovered = store.recover(max_attempts=3, up_to_seq=last_runs_jobs)
    assert recovered.requeued == ["job0"]
    assert (store.get("job0")["status"], store.get("job1")["status"]) == ("queued", "running")
    store.close()


def test_a_restart_on_a_full_disk_serves_and_takes_back_the_last_runs_jobs_once_there_is_room(
    tmp_path: Path,
) -> None:
    path = tmp_path / "jobs.sqlite3"
    last_run = JobStore(path)
    for k in range(2):
        last_run.insert(job(k, 40))
    last_run.mark_running("job0")  # the server died while job0 ran and job1 waited
    last_run.close()

    store = JobStore(path)
    full = [True]
    recover = store.recover

    def recover_unless_full(*args: Any) -> Any:
        # Updates in place need no new page, so max_page_count cannot fill the disk for them; on a
        # real one an emptied write-ahead log can (experiments/faults_service.py restarts on one).
        if full[0]:
            raise StoreFull("database or disk is full")
        return recover(*args)

    store.recover = recover_unless_full
    settings = ServiceSettings(db=path, api_key=None, workers=1, warm_up=False, default_time_limit=0.5)
    manager = JobManager(settings, store)
    manager.start()
    try:
        assert [what for what, _ in manager._unsaved] == ["the last run's unfinished jobs"]
        assert store.get("job0")["status"] == "running" and manager.health()["queue_depth"] == 0
        manager.submit(job(2, 40))  # this server's own job runs meanwhile, and is not recovered
        wait_until(lambda: store.get("job2")["status"] == "done", 60)
        full[0] = False  # room again: the last run's two are taken back and run
        wait_until(lambda: all(store.get(f"job{k}")["status"] in FINISHED for k in range(2)), 60)
        for k in range(3):
            row = store.get(f"job{k}")
            assert row["status"] == "done", row["error"]
            check_plan(buffers_document(40, seed=k), json.loads(row["result"]))
        assert [store.get(f"job{k}")["attempts"] for k in range(3)] == [1, 0, 0]  # the interrupted run
    finally:
        manager.stop()
        store.close()


def test_a_dead_worker_counts_an_attempt_against_its_own_job_only(tmp_path: Path) -> None:
    """One dead worker stops the whole pool; the job running beside it is not to blame."""
    settings = ServiceSettings(db=tmp_path / "jobs.sqlite3", api_key=None, workers=2, max_time_limit=30.0)
    app = create_app(settings)
    docs = [unreachable_bound_document(60, seed=seed) for seed in (1, 2)]
    # Long enough for both to run at once even when one worker warms up seconds after the other.
    options = {"time_limit": 5.0, "stall_generations": None, "exact_share": 0}
    with TestClient(app) as client:
        manager = app.state.manager
        locations = [
            client.post("/v1/plans", json={"graph": doc, "options": options}).json()["links"]["self"]
            for doc in docs
        ]

        def both_searching() -> bool:
            with manager._cond:
                running = list(manager._running.values())
            return len(running) == 2 and all(r.pid and r.progress for r in running)

        wait_until(both_searching, 90)
        with manager._cond:
            victim_id, victim = next((job_id, r.pid) for job_id, r in manager._running.items())
        os.kill(victim, signal.SIGKILL)
        jobs = [
            wait_until(lambda loc=loc: (j := client.get(loc).json())["status"] in FINISHED and j, 90)
            for loc in locations
        ]
    for doc, finished in zip(docs, jobs, strict=True):
        assert finished["status"] == "done", finished
        check_plan(doc, finished["plan"])
        assert finished["attempts"] == (1 if finished["id"] == victim_id else 0), finished


def test_faults_under_load_lose_nothing() -> None:
    """The fault run, short: every accepted job ends with a verified plan, no 5xx, a sound store.

    The disk-full fault needs root (it mounts a small tmpfs); without root it is
    skipped and the other faults still run.
    """
    from experiments.faults_service import FAULTS, Settings, run_in_temporary_folder

    outcome = run_in_temporary_folder(Settings(seconds=1.5, worker_kills=1, drain_seconds=120))
    rows = {row["fault"]: row for row in outcome.rows}
    expected = set(FAULTS) if os.geteuid() == 0 else set(FAULTS) - {"disk full"}
    assert expected <= set(rows), outcome.notes
    for row in outcome.rows:
        assert row["lost"] == row["invalid"] == row["server_errors"] == row["waiting"] == 0, row
    assert sum(row["verified"] for row in outcome.rows) == sum(row["accepted"] for row in outcome.rows) > 0
    assert rows["server killed"]["no_answer"] >= 1  # the half-sent submission at least
    if "disk full" in rows:
        assert rows["disk full"]["refused_503"] >= 1
    assert outcome.integrity == "ok"
    assert outcome.events["bodies cut short by the client"] >= 1


def test_a_worker_whose_server_died_before_it_started_exits() -> None:
    """The server's pid comes from the server: a worker adopted before its start-up ran still sees that
    its server is gone (comparing with its parent at start-up, it would compare with its adopter)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    script = (
        "import time\nfrom service import worker\n"
        f"worker.initialize(None, None, 1, 0, 0.1, False, {dead.pid})\ntime.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        assert child.wait(timeout=30) == 3  # the watchdog's exit status
    finally:
        child.kill()


def test_no_process_of_the_fault_tests_outlives_them() -> None:
    """Runs after the fault tests above (pytest keeps a file's order): the servers they started, killed and
    started again, and the search workers of each, are gone. A worker whose server was killed is adopted
    elsewhere and must exit by itself: this counts every process of the test session, adopted or not."""
    psutil = pytest.importorskip("psutil")
    own = psutil.Process()

    def strays() -> list[str]:
        found = []
        for process in session_processes():
            with contextlib.suppress(psutil.Error):
                command = " ".join(process.cmdline())
                adopted = own not in process.parents()
                service = ("gaplanner" in command and " serve" in command) or "spawn_main" in command
                if adopted or service:
                    found.append(f"{process.pid}: {command[:120]}")
        return found

    with contextlib.suppress(TimeoutError):  # a killed server's workers notice within a second or so
        wait_until(lambda: not strays(), timeout=30, interval=0.5)
    assert strays() == []
