"""Load on the REST service over loopback: status polls per second and submission latency.

Starts ``gaplanner serve`` on 127.0.0.1 (a fresh database in a temporary
folder), seeds it with finished jobs, then runs a bounded client for a fixed
time: ``--clients`` concurrent connections, ``--submitters`` of which submit
plan jobs back to back while the others poll job status. Every loop is bounded
by ``--seconds``; the client stops by itself and only ever talks to loopback.

    python -m experiments.service_load --clients 50 --submitters 5 --seconds 20

Prints one markdown table row (and ``--json`` writes the raw figures).
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

import httpx

from service.testing import buffers_document, check_plan, run_server, wait_until


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


async def run_load(url: str, args: argparse.Namespace, seeded: list[str]) -> dict[str, Any]:
    deadline = time.monotonic() + args.seconds
    polls: list[float] = []
    submissions: list[float] = []
    submitted: list[tuple[str, dict[str, Any]]] = []
    errors: dict[str, int] = {}
    documents = [buffers_document(args.blocks, seed=1000 + i) for i in range(16)]
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30.0) as client:

        async def poller(k: int) -> None:
            rng = random.Random(k)
            while time.monotonic() < deadline:
                started = time.perf_counter()
                response = await client.get(rng.choice(seeded))
                if response.status_code == 200:
                    polls.append(time.perf_counter() - started)
                else:
                    errors[str(response.status_code)] = errors.get(str(response.status_code), 0) + 1

        async def submitter(k: int) -> None:
            rng = random.Random(10_000 + k)
            while time.monotonic() < deadline:
                doc = rng.choice(documents)
                body = {"graph": doc, "options": {"algorithm": args.algorithm, "seed": k}}
                started = time.perf_counter()
                response = await client.post("/v1/plans", json=body)
                if response.status_code == 202:
                    submissions.append(time.perf_counter() - started)
                    submitted.append((response.headers["location"], doc))
                else:
                    errors[str(response.status_code)] = errors.get(str(response.status_code), 0) + 1

        started = time.monotonic()
        await asyncio.gather(
            *(submitter(k) for k in range(args.submitters)),
            *(poller(k) for k in range(args.clients - args.submitters)),
        )
        elapsed = time.monotonic() - started

        # Every accepted job finishes with a verified plan (checked on a sample).
        async def finished(location: str) -> dict[str, Any]:
            for _ in range(int(args.drain_timeout / 0.2)):
                job = (await client.get(location)).json()
                if job["status"] in ("done", "failed", "cancelled"):
                    return job
                await asyncio.sleep(0.2)
            raise TimeoutError(location)

        jobs = [await finished(location) for location, _ in submitted]
        for (_, doc), job in random.Random(0).sample(
            list(zip(submitted, jobs, strict=True)), min(20, len(jobs))
        ):
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
        "jobs_done": sum(job["status"] == "done" for job in jobs),
    }


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
            figures = asyncio.run(run_load(server.url, args, seeded))
    figures["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(json.dumps(figures, indent=2))
    print(
        f"| {figures['clients']} ({figures['submitters']} submitting) | {figures['seconds']} | "
        f"{figures['polls_per_second']:,} | {figures['poll_p50_ms']} / {figures['poll_p99_ms']} | "
        f"{figures['submissions_per_second']} | {figures['submit_p50_ms']} / {figures['submit_p99_ms']} | "
        f"{sum(figures['errors'].values())} |"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
