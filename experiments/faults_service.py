"""Faults under load on the REST service: what is accepted is never lost, what is served is verified.

A ``gaplanner serve`` on 127.0.0.1 gets a steady load (clients submitting
small plan jobs, short GA searches and instant baselines, and clients polling
them) while, in turn:

- **worker killed**: a worker process is killed (SIGKILL) while every worker searches;
- **server killed**: the server is killed (SIGKILL) with a submission half sent and others in
  flight, then started again on the same SQLite file and port;
- **disk full**: the small filesystem under the SQLite store (a tmpfs this module mounts, root
  only) is filled to the last byte; the server is killed and started again while it is full,
  then the disk is emptied;
- **corrupt requests**: bodies cut short by a closed connection (``Content-Length`` and chunked),
  a body that stops mid-document, garbage instead of a request line.

Then the load stops, every accepted job is waited for, and every plan served is
checked again with :func:`gaplanner.plans.verify.verify` against the document that
was submitted. Nothing leaves loopback; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.testing import (
    FINISHED,
    Server,
    buffers_document,
    check_plan,
    free_port,
    run_server,
    unreachable_bound_document,
)

#: Lines of the server log that mean a request met an unhandled error (an answer of 500).
SERVER_ERROR = re.compile(r"unhandled error|Exception in ASGI application|\" 5(?!03)\d\d ")
FAULTS = ("worker killed", "server killed", "disk full", "corrupt requests")


@dataclass
class Settings:
    """How long and how hard: the defaults run in about two minutes on 2 busy cores."""

    seconds: float = 6.0  # load before, during and after each fault
    submitters: int = 2
    pollers: int = 2
    pause: float = 0.15  # between one client's requests
    workers: int = 2  # the server's worker processes
    search_seconds: float = 0.6  # time limit of the GA jobs
    store_mib: int = 32  # the filesystem under the store
    drain_seconds: float = 180.0
    worker_kills: int = 2


@dataclass
class Tally:
    """What the clients saw, per fault (the phase a request was sent in)."""

    phase: str = "start"
    requests: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)
    answers: dict[str, Counter] = field(default_factory=dict)  # phase -> status (or "no answer")
    jobs: dict[str, tuple[str, Any]] = field(default_factory=dict)  # location -> (phase, document)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, status: int | str) -> None:
        with self.lock:
            self.requests[self.phase] += 1
            self.answers.setdefault(self.phase, Counter())[str(status)] += 1

    def accept(self, location: str, document: Any, phase: str) -> None:
        with self.lock:
            self.accepted[phase] += 1
            self.jobs[location] = (phase, document)

    def locations(self) -> list[str]:
        with self.lock:
            return list(self.jobs)


class Client:
    """One keep-alive connection to the server that reconnects after it went away."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int | str, Any, str]:
        """(status or "no answer", parsed body, Location header)."""
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
            text = response.read().decode(errors="replace")
        except (OSError, http.client.HTTPException):
            self.close()
            return "no answer", None, ""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = text
        return response.status, data, response.getheader("Location") or ""

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Load:
    """Submitting and polling clients in threads, until :meth:`stop`."""

    def __init__(self, port: int, tally: Tally, settings: Settings) -> None:
        self.port, self.tally, self.settings = port, tally, settings
        self.halt = threading.Event()
        self.threads = [
            threading.Thread(target=self._submit, args=(k,), daemon=True) for k in range(settings.submitters)
        ] + [threading.Thread(target=self._poll, args=(k,), daemon=True) for k in range(settings.pollers)]
        self.counter = iter(range(10**9))
        self.counter_lock = threading.Lock()

    def start(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.halt.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def _next(self) -> int:
        with self.counter_lock:
            return next(self.counter)

    def _job(self, k: int) -> tuple[Any, dict[str, Any]]:
        """Every third job a GA search that runs its whole time limit, the others a quick baseline."""
        if k % 3 == 0:
            options = {"time_limit": self.settings.search_seconds, "stall_generations": None, "seed": k}
            options["exact_share"] = 0  # the GA alone: it searches until its time limit
            return unreachable_bound_document(40, seed=k), options
        return buffers_document(60, seed=k), {"algorithm": "best-fit-coalescing"}

    def _submit(self, k: int) -> None:
        client = Client(self.port)
        while not self.halt.is_set():
            number = self._next()
            document, options = self._job(number)
            body = json.dumps({"graph": document, "options": options}).encode()
            phase = self.tally.phase
            status, _, location = client.request("POST", "/v1/plans", body)
            self.tally.answer(status)
            if status == 202:
                self.tally.accept(location, document, phase)
            self.halt.wait(self.settings.pause if status != "no answer" else 0.3)
        client.close()

    def _poll(self, k: int) -> None:
        client, rng = Client(self.port), random.Random(k)
        while not self.halt.is_set():
            locations = self.tally.locations()
            if locations:
                status, _, _ = client.request("GET", rng.choice(locations))
                self.tally.answer(status)
            self.halt.wait(self.settings.pause if locations else 0.2)
        client.close()


# --- the faults ------------------------------------------------------------------------------------


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def worker_pids(server: Server) -> list[int]:
    """The server's search processes (not multiprocessing's resource tracker)."""
    return [pid for pid in server.children() if "spawn_main" in _cmdline(pid)]


def wait_for(check: Callable[[], Any], seconds: float, interval: float = 0.1) -> Any:
    """``check()`` once it is truthy, or None after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    return None


def kill_workers(server: Server, settings: Settings, notes: list[str]) -> None:
    """SIGKILL one worker while every worker has a job, ``worker_kills`` times."""
    for _ in range(settings.worker_kills):

        def all_busy() -> bool:
            status, health = server.request("GET", "/v1/health")
            return status == 200 and health["running"] == health["workers"]

        if not wait_for(all_busy, 20):
            notes.append("worker killed: the workers were never all busy; killed one anyway")
        pids = worker_pids(server)
        if not pids:
            notes.append("worker killed: no worker process found")
            return
        victim = random.Random(len(notes)).choice(pids)
        os.kill(victim, signal.SIGKILL)
        time.sleep(settings.seconds / 2)


def half_sent_submission(port: int) -> socket.socket:
    """A connection with a submission's headers and half its body sent: in flight, unanswered."""
    body = json.dumps({"graph": buffers_document(60, seed=987654), "options": {}}).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = "POST /v1/plans HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    sock.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body[: len(body) // 2])
    return sock


def corrupt_requests(port: int, tally: Tally) -> Counter:
    """Requests cut short or malformed on the wire; what the server answered to each kind."""
    body = json.dumps({"graph": buffers_document(60, seed=4242), "options": {}}).encode()
    head = "POST /v1/plans HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    cases = {
        "cut short (Content-Length)": f"{head}Content-Length: {len(body)}\r\n\r\n".encode()
        + body[: len(body) // 3],
        "cut short (chunked)": f"{head}Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n".encode()
        + body[: len(body) // 2],
        "document cut mid-way": f"{head}Content-Length: {len(body) // 2}\r\n\r\n".encode()
        + body[: len(body) // 2],
        "garbage request line": bytes(random.Random(1).randrange(256) for _ in range(300)) + b"\r\n\r\n",
    }
    seen: Counter = Counter()
    for round_ in range(3):
        for name, payload in cases.items():
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(payload)
                if name.startswith("cut short"):
                    time.sleep(0.05 * round_)  # close at once, or after the server began reading
                    sock.shutdown(socket.SHUT_RDWR)
                    status = "closed by the client"
                else:
                    status = _status_line(sock)
            tally.answer(status)
            seen[f"{name}: {status}"] += 1
    return seen


def _status_line(sock: socket.socket) -> str:
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0].split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"


@contextlib.contextmanager
def small_filesystem(folder: Path, mib: int) -> Iterator[str | None]:
    """Mount a ``mib`` MiB tmpfs on ``folder``; yields None when mounted, else why not (unmounted after)."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not shutil.which("mount"):
        yield "needs root to mount a small filesystem"
        return
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0700", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        yield f"mount failed: {done.stderr.strip()}"
        return
    try:
        yield None
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def submit_once(port: int, tally: Tally) -> None:
    """One submission sent now and counted in the current phase, beside the load's own."""
    client, document = Client(port), buffers_document(30, seed=10**6)
    body = json.dumps({"graph": document, "options": {"algorithm": "first-fit"}}).encode()
    phase = tally.phase
    status, _, location = client.request("POST", "/v1/plans", body)
    client.close()
    tally.answer(status)
    if status == 202:
        tally.accept(location, document, phase)


def empty_wal(db: Path) -> None:
    """Copy SQLite's write-ahead log into the database and cut it to nothing, so that the store's next
    writes need new space: a log that has room left from earlier writes would absorb a short fault."""
    with contextlib.closing(sqlite3.connect(db, timeout=5)) as connection:
        for _ in range(50):  # busy while a reader holds an old snapshot; they are short
            if connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
                return
            time.sleep(0.1)


def fill(folder: Path) -> Path:
    """A file that takes every free byte of ``folder``'s filesystem."""
    ballast = folder / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 4096, 1):  # big blocks, then the last few bytes
            with contextlib.suppress(OSError):  # ENOSPC: full at this block size
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return ballast


# --- the run ---------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """The counts the run publishes."""

    rows: list[dict[str, Any]]
    notes: list[str]
    integrity: str
    stored_unanswered: int  # jobs in the store whose submission got no answer (the kill cut it)
    stored_unanswered_done: int  # of which finished
    events: dict[str, int]  # what the server log says it did about the faults


#: What the server logs when it meets each fault (counted in its log).
EVENTS = {
    "jobs re-queued after their worker died": "a worker died running job",
    "jobs re-queued when another worker died": "stopped when another worker died",
    "jobs re-queued at restart": "re-queued,",
    "submissions refused, disk full": "refused a job:",
    "job starts put off, disk full": "cannot start job",
    "finished jobs held until the disk had room": "cannot record the end of job",
    "restarts that took back the last run's jobs once the disk had room": "cannot take back the last run",
    "bodies cut short by the client": "closed the connection mid-body",
}


def log_events(log: Path) -> dict[str, int]:
    text = log.read_text(errors="replace")
    counts = {name: text.count(needle) for name, needle in EVENTS.items()}
    restarts = re.findall(r"unfinished jobs from the last run: (\d+) re-queued", text)
    counts["jobs re-queued at restart"] = sum(int(n) for n in restarts)
    return counts


def server_errors(log: Path, start: int) -> int:
    """Lines from byte ``start`` of the server log that show an unhandled error."""
    with log.open("rb") as f:
        f.seek(start)
        return sum(bool(SERVER_ERROR.search(line.decode(errors="replace"))) for line in f)


def run(settings: Settings, workdir: Path) -> Outcome:
    """Every fault in turn under load, then the drain and the checks."""
    notes: list[str] = []
    tally = Tally()
    port = free_port()
    store = workdir / "store"
    log = workdir / "server.log"
    env = {
        "GAPLANNER_WORKERS": str(settings.workers),
        "GAPLANNER_API_KEY": "",
        "GAPLANNER_MAX_QUEUE": "100000",
        # A job running through every fault injected here (the worker kills, the server kill, the
        # restart on a full disk) still gets a run of its own: the cap is for jobs that crash their
        # workers, which this run does not make (tests/service/test_service_api.py checks the cap).
        "GAPLANNER_MAX_ATTEMPTS": str(settings.worker_kills + 3),
    }
    phase_errors: dict[str, int] = {}
    with small_filesystem(store, settings.store_mib) as why_not:
        if why_not:
            notes.append(f"disk full: skipped ({why_not})")
        db = store / "jobs.sqlite3"
        load = None
        try:
            with contextlib.ExitStack() as servers:
                server = servers.enter_context(run_server(db, port=port, env=env, log=log))
                load = Load(port, tally, settings).start()
                time.sleep(settings.seconds)
                phase_errors["start"] = 0
                mark = log.stat().st_size

                tally.phase = "worker killed"
                kill_workers(server, settings, notes)
                time.sleep(settings.seconds)
                phase_errors[tally.phase] = server_errors(log, mark)

                tally.phase = "server killed"
                mark = log.stat().st_size
                in_flight = half_sent_submission(port)
                time.sleep(0.2)
                server.kill()
                in_flight.close()
                tally.answer("no answer")  # the half-sent submission
                time.sleep(1.0)  # clients meet a closed port meanwhile
                server = servers.enter_context(run_server(db, port=port, env=env, log=log))
                time.sleep(settings.seconds)
                phase_errors[tally.phase] = server_errors(log, mark)

                mark = log.stat().st_size
                if not why_not:
                    tally.phase = "disk full"
                    empty_wal(db)
                    ballast = fill(store)
                    submit_once(port, tally)  # whatever the load's timing: a submission meets the full disk
                    time.sleep(settings.seconds / 2)
                    server.kill()  # and started again on the full disk: it must serve, losing nothing
                    server = servers.enter_context(run_server(db, port=port, env=env, log=log))
                    submit_once(port, tally)
                    time.sleep(settings.seconds / 2)
                    ballast.unlink()
                    time.sleep(settings.seconds)
                    phase_errors[tally.phase] = server_errors(log, mark)

                tally.phase = "corrupt requests"
                mark = log.stat().st_size
                for kind, count in sorted(corrupt_requests(port, tally).items()):
                    notes.append(f"corrupt requests: {kind} x{count}")
                time.sleep(settings.seconds)
                load.stop()
                phase_errors[tally.phase] = server_errors(log, mark)

                tally.phase = "drain"
                rows = drain(server, tally, settings, phase_errors)
                listed = stored_jobs(server)
        finally:
            if load is not None:
                load.stop()
        integrity = check_integrity(db)
    answered = {location.rsplit("/", 1)[-1] for location in tally.jobs}
    unanswered = [status for job_id, status in listed.items() if job_id not in answered]
    done = sum(status == "done" for status in unanswered)
    return Outcome(rows, notes, integrity, len(unanswered), done, log_events(log))


def drain(server: Server, tally: Tally, settings: Settings, errors: dict[str, int]) -> list[dict[str, Any]]:
    """Wait for every accepted job, verify every plan served; one row of counts per fault."""
    deadline = time.monotonic() + settings.drain_seconds
    final: dict[str, dict[str, Any] | None] = {}
    pending = list(tally.jobs)
    while pending and time.monotonic() < deadline:
        still = []
        for location in pending:
            status, job = server.request("GET", location)
            if status == 404:
                final[location] = None
            elif status == 200 and job["status"] in FINISHED:
                final[location] = job
            else:
                still.append(location)
        pending = still
        if pending:
            time.sleep(0.5)
    rows = []
    for phase in ["start", *FAULTS]:
        if phase not in errors:
            continue
        mine = [loc for loc, (p, _) in tally.jobs.items() if p == phase]
        verified = invalid = lost = waiting = 0
        for location in mine:
            job = final.get(location, "waiting")
            if job == "waiting":
                waiting += 1  # still queued or running: recoverable, not lost
            elif job is None or job["status"] != "done":
                lost += 1
            else:
                try:
                    check_plan(tally.jobs[location][1], job["plan"])
                    verified += 1
                except Exception:  # a plan served that does not verify
                    invalid += 1
        answers = tally.answers.get(phase, Counter())
        rows.append(
            {
                "fault": phase,
                "requests": tally.requests[phase],
                "accepted": tally.accepted[phase],
                "refused_503": answers.get("503", 0),
                "no_answer": answers.get("no answer", 0) + answers.get("closed by the client", 0),
                "client_errors_4xx": sum(v for k, v in answers.items() if k.startswith("4")),
                "server_errors": sum(v for k, v in answers.items() if k.startswith("5") and k != "503")
                + errors[phase],
                "verified": verified,
                "waiting": waiting,
                "lost": lost,
                "invalid": invalid,
                "failures": sorted(
                    {final[loc]["error"] for loc in mine if final.get(loc) and final[loc]["status"] != "done"}
                ),
            }
        )
    return rows


def stored_jobs(server: Server) -> dict[str, str]:
    """Every plan job in the store: id -> status."""
    found: dict[str, str] = {}
    path: str | None = "/v1/plans?limit=100"
    while path:
        status, page = server.request("GET", path)
        if status != 200:
            break
        found.update((item["id"], item["status"]) for item in page["items"])
        path = page["next"]
    return found


def check_integrity(db: Path) -> str:
    """SQLite's own check of the store once the server has stopped (``ok`` when sound)."""
    with contextlib.closing(sqlite3.connect(db)) as connection:
        return ", ".join(row[0] for row in connection.execute("PRAGMA integrity_check").fetchall())


def run_in_temporary_folder(settings: Settings) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="gaplanner-faults-") as folder:
        workdir = Path(folder)
        try:
            return run(settings, workdir)
        except BaseException:
            log = workdir / "server.log"
            if log.exists():
                print(log.read_text(errors="replace")[-4000:])
            raise
