"""Load on the REST service over loopback: status polls per second and submission latency.

Starts ``gaplanner serve`` on 127.0.0.1 (a fresh database in a temporary
folder), seeds it with finished jobs, then runs a bounded client for a fixed
time: ``--clients`` concurrent connections, ``--submitters`` of which submit
plan jobs back to back while the others poll job status. Every loop is bounded
by ``--seconds``; the client stops by itself and only ever talks to loopback.

    python -m experiments.service_load --clients 50 --submitters 5 --seconds 20

Prints the figures and writes them as a table to ``docs/results/service-load.md`` (``--json``
also writes the raw figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.common import markdown_table
from experiments.report import write_results
from service.testing import buffers_document, check_plan, run_server, wait_until


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


class Connection:
    """One keep-alive HTTP/1.1 connection doing the least a client can per request, so that on a
    2-core machine the figures measure the server rather than the client library."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    async def open(self) -> Connection:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict, bytes]:
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw[:-4].split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
        content = await self.reader.readexactly(int(headers[b"content-length"]))
        return int(lines[0].split()[1]), headers, content

    def close(self) -> None:
        self.writer.close()


async def run_load(url: str, args: argparse.Namespace, seeded: list[str], server_pid: int) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    deadline = time.monotonic() + args.seconds
    polls: list[float] = []
    submissions: list[float] = []
    submitted: list[tuple[str, dict[str, Any]]] = []
    errors: dict[str, int] = {}
    documents = [buffers_document(args.blocks, seed=1000 + i) for i in range(16)]
    connections = [await Connection(host, int(port)).open() for _ in range(args.clients)]

    async def poller(k: int) -> None:
        rng, connection = random.Random(k), connections[k]
        while time.monotonic() < deadline:
            started = time.perf_counter()
            status, _, _ = await connection.request("GET", rng.choice(seeded))
            if status == 200:
                polls.append(time.perf_counter() - started)
            else:
                errors[str(status)] = errors.get(str(status), 0) + 1

    async def submitter(k: int) -> None:
        rng, connection = random.Random(10_000 + k), connections[k]
        bodies = [
            (doc, json.dumps({"graph": doc, "options": {"algorithm": args.algorithm, "seed": k}}).encode())
            for doc in documents
        ]
        while time.monotonic() < deadline:
            doc, body = rng.choice(bodies)
            started = time.perf_counter()
            status, headers, _ = await connection.request("POST", "/v1/plans", body)
            if status == 202:
                submissions.append(time.perf_counter() - started)
                submitted.append((headers[b"location"].decode(), doc))
            else:
                errors[str(status)] = errors.get(str(status), 0) + 1

    started, cpu_started = time.monotonic(), cpu_seconds(server_pid)
    await asyncio.gather(
        *(submitter(k) for k in range(args.submitters)),
        *(poller(k) for k in range(args.submitters, args.clients)),
    )
    elapsed = time.monotonic() - started
    # The server's CPU in the load window alone: the drain below adds the backlog's jobs and its own polls.
    window_cpu, answered = cpu_seconds(server_pid) - cpu_started, len(polls) + len(submissions)

    # Every accepted job finishes with a verified plan (checked on a sample).
    async def finished(location: str) -> dict[str, Any]:
        for _ in range(int(args.drain_timeout / 0.2)):
            job = json.loads((await connections[0].request("GET", location))[2])
            if job["status"] in ("done", "failed", "cancelled"):
                return job
            await asyncio.sleep(0.2)
        raise TimeoutError(location)

    jobs = [await finished(location) for location, _ in submitted]
    for connection in connections:
        connection.close()
    pairs = list(zip(submitted, jobs, strict=True))
    for (_, doc), job in random.Random(0).sample(pairs, min(20, len(pairs))):
        check_plan(doc, job["plan"])
    return {
        "seconds": round(elapsed, 2),
        "clients": args.clients,
        "submitters": args.submitters,
        "polls": len(polls),
        "polls_per_second": round(len(polls) / elapsed, 1),
        "poll_p50_ms": round(1000 * percentile(polls, 50), 2),
        "poll_p99_ms": round(1000 * percentile(polls, 99), 2),
        "submissions": len(submissions),
        "submissions_per_second": round(len(submissions) / elapsed, 1),
        "submit_p50_ms": round(1000 * percentile(submissions, 50), 2),
        "submit_p99_ms": round(1000 * percentile(submissions, 99), 2),
        "submit_mean_ms": round(1000 * statistics.fmean(submissions), 2) if submissions else None,
        "errors": errors,
        "server_cpu_window_ms_per_request": round(1000 * window_cpu / max(1, answered), 3),
        "jobs_done": sum(job["status"] == "done" for job in jobs),
    }


LOAD_HEADER = [
    "load average before",
    "status polls/s",
    "poll p50 / p99 (ms)",
    "submissions/s",
    "submission p50 / p99 (ms)",
    "errors",
    "server CPU per request",
    "the same, load window only",
]
LOAD_NOTES = """\
Loopback, server with {workers} workers, {clients} keep-alive connections for {seconds:g} s of which
{submitters} submit {blocks}-block buffer lists (`{algorithm}`) back to back and {polling} poll job
status; every accepted job finished and a sample was verified. Server CPU per request counts the
server's CPU until every job has finished (the backlog's and the drain's polls included); in the load
window, its CPU during the {seconds:g} s alone over the requests then."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50, help="concurrent connections (default 50)")
    parser.add_argument("--submitters", type=int, default=5, help="of which submit jobs (default 5)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the load lasts (default 20)")
    parser.add_argument("--blocks", type=int, default=100, help="blocks per submitted document")
    parser.add_argument("--algorithm", default="best-fit-coalescing", help="planner of submitted jobs")
    parser.add_argument("--workers", type=int, default=2, help="the server's worker processes")
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not 0 <= args.submitters < args.clients or args.seconds > 600:
        parser.error("need 0 <= submitters < clients and at most 600 seconds")

    with tempfile.TemporaryDirectory() as folder:
        env = {
            "GAPLANNER_WORKERS": str(args.workers),
            "GAPLANNER_API_KEY": "",
            "GAPLANNER_MAX_QUEUE": "100000",
        }
        with run_server(Path(folder) / "jobs.sqlite3", env=env) as server:
            seeded = []
            for i in range(20):  # jobs to poll: finished ones and a long-running GA
                doc = buffers_document(args.blocks, seed=i)
                _, accepted = server.request(
                    "POST", "/v1/plans", {"graph": doc, "options": {"generations": 20}}
                )
                seeded.append(accepted["links"]["self"])
            for location in seeded:
                wait_until(
                    lambda location=location: server.request("GET", location)[1]["status"] == "done", 120
                )
            server_cpu, client_cpu = cpu_seconds(server.process.pid), time.process_time()
            load_before = os.getloadavg()[0]
            figures = asyncio.run(run_load(server.url, args, seeded, server.process.pid))
            figures["server_cpu_seconds"] = round(cpu_seconds(server.process.pid) - server_cpu, 2)
            figures["client_cpu_seconds"] = round(time.process_time() - client_cpu, 2)
            figures["load_average_before"] = round(load_before, 2)
            requests = figures["polls"] + figures["submissions"]
            figures["server_cpu_ms_per_request"] = round(1000 * figures["server_cpu_seconds"] / requests, 3)
    figures["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(json.dumps(figures, indent=2))
    row = [
        figures["load_average_before"],
        f"{figures['polls_per_second']:,}",
        f"{figures['poll_p50_ms']} / {figures['poll_p99_ms']}",
        figures["submissions_per_second"],
        f"{figures['submit_p50_ms']} / {figures['submit_p99_ms']}",
        sum(figures["errors"].values()),
        f"{figures['server_cpu_ms_per_request']} ms",
        f"{figures['server_cpu_window_ms_per_request']} ms",
    ]
    print(markdown_table(LOAD_HEADER, [row]))
    command = (
        f"python -m experiments.service_load --clients {args.clients} --submitters {args.submitters} "
        f"--seconds {args.seconds:g} --blocks {args.blocks} --workers {args.workers}"
    )
    notes = LOAD_NOTES.format(
        workers=args.workers, clients=args.clients, seconds=args.seconds, submitters=args.submitters,
        blocks=args.blocks, algorithm=args.algorithm, polling=args.clients - args.submitters,
    )  # fmt: skip
    write_results("service-load", "The service under load", LOAD_HEADER, [row], command, notes)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
