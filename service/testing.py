"""Helpers for testing and measuring the service: a real server process, inputs, plan checks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from gaplanner.plans.verify import verify
from gaplanner.problem.loading import load_problem

T = TypeVar("T")

FINISHED = ("done", "failed", "cancelled")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.05) -> T:
    """Call ``check`` until it returns something truthy; that value, or TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {timeout} s: {check}")
        time.sleep(interval)


def buffers_document(n: int = 40, seed: int = 0, *, alignment: int = 1, max_size: int = 4096) -> dict:
    """A random buffer-list document (half-open lifetimes over about ``n`` steps)."""
    rng = np.random.default_rng(seed)
    lower = rng.integers(0, n, n)
    upper = lower + rng.integers(1, max(2, n // 4), n)
    sizes = rng.integers(1, max_size, n)
    return {
        "name": f"random{n}_{seed}",
        "alignment": alignment,
        "buffers": [
            {"id": f"b{i}", "lower": int(lo), "upper": int(up), "size": int(s)}
            for i, (lo, up, s) in enumerate(zip(lower, upper, sizes, strict=True))
        ],
    }


def unreachable_bound_document(n: int = 150, seed: int = 0) -> dict:
    """Blocks smaller than the alignment: two live at once need 64 apart, but the lower bound (max load)
    counts their sizes only, so no plan reaches it and a GA with no stall limit runs until stopped."""
    return buffers_document(n, seed, alignment=64, max_size=64)


def plan_offsets(problem: Any, plan: dict[str, Any]) -> np.ndarray:
    by_id = {block["id"]: block["offset"] for block in plan["blocks"]}
    return np.array([by_id[bid] for bid in problem.ids], np.int64)


def check_plan(graph: Any, plan: dict[str, Any]) -> None:
    """Verify a served plan against its input with the library's verifier (raises PlanError)."""
    problem = load_problem(graph)
    assert [b["id"] for b in plan["blocks"]] == list(problem.ids)
    assert problem.lower_bound <= plan["lower_bound"] <= plan["peak"]  # above the problem's own: proved
    verify(problem, plan_offsets(problem, plan), plan["peak"])
    assert max(b["offset"] + b["size"] for b in plan["blocks"]) == plan["peak"]


@dataclass
class Server:
    """A ``gaplanner serve`` process on loopback."""

    process: subprocess.Popen
    url: str
    log: Path

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode()
                status = response.status
        except urllib.error.HTTPError as exc:
            text, status = exc.read().decode(), exc.code
        try:
            return status, json.loads(text)
        except json.JSONDecodeError:
            return status, text

    def children(self) -> list[int]:
        """PIDs of the server's child processes (its workers)."""
        pids = []
        for task in Path(f"/proc/{self.process.pid}/task").glob("*"):
            text = (task / "children").read_text() if (task / "children").exists() else ""
            pids += [int(p) for p in text.split()]
        return pids

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


@contextmanager
def run_server(
    db: Path,
    *,
    port: int | None = None,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    startup_timeout: float = 60.0,
) -> Iterator[Server]:
    """Start ``gaplanner serve`` on 127.0.0.1 and wait until it answers; stop it (SIGTERM) afterwards."""
    port = port or free_port()
    log = log or db.with_suffix(".log")
    environment = {**os.environ, **(env or {})}
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gaplanner.cli", "serve", "--port", str(port), "--db", str(db)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    try:

        def healthy() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                return server.request("GET", "/v1/health")[0] == 200
            except OSError:
                return False

        wait_until(healthy, startup_timeout, 0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
