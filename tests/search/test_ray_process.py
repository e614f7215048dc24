"""``gaplanner plan --workers``: when Ray starts, and that nothing of it outlives the command."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from gaplanner import load_problem
from gaplanner.search.distributed import expected_search_seconds, ray_pays_off
from gaplanner.search.ga import GASettings
from gaplanner.solve import solve

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")


pytestmark = pytest.mark.slow  # every test starts Ray processes


def ray_processes(marker: str) -> list[int]:
    """Processes of a Ray started with RAY_TMPDIR=marker (their environment says so)."""
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if f"RAY_TMPDIR={marker}".encode() in Path(f"/proc/{process.pid}/environ").read_bytes():
                found.append(process.pid)
        except OSError:
            continue
    return [pid for pid in found if pid != os.getpid()]


@pytest.fixture
def ray_tmpdir():
    path = tempfile.mkdtemp(prefix="gpr", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    yield path
    for pid in ray_processes(path):  # only if a test failed: leave nothing behind
        psutil.Process(pid).kill()


def gaplanner(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gaplanner.cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=180,
    )


def test_small_inputs_and_short_searches_stay_in_process(monkeypatch) -> None:
    problem = load_problem("zoo:densenet121@2")
    short = GASettings(time_limit=10.0)
    assert expected_search_seconds(problem, short) == 10.0
    monkeypatch.delenv("GAPLANNER_RAY_MIN_SECONDS", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray_pays_off(problem, GASettings(time_limit=600.0), 2)  # a local Ray gains nothing here
    monkeypatch.setenv("GAPLANNER_RAY_MIN_SECONDS", "30")
    assert not ray_pays_off(problem, short, 2)
    assert not ray_pays_off(problem, GASettings(time_limit=600.0), 1)  # one worker: never Ray
    assert ray_pays_off(problem, GASettings(time_limit=600.0), 2)
    assert not ray_pays_off(problem, GASettings(generations=50, time_limit=None, islands=1), 2)  # a few s
    plan = solve(problem, "ga", GASettings(generations=5, time_limit=None, population=8), workers=2)
    assert plan.ray is None  # ran here, with the same two islands
    assert plan.search.generations == 5


def island_workers(pid: int) -> list[psutil.Process]:
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "ray::IslandWorker" in " ".join(child.cmdline()):
                found.append(child)
    return found


def test_the_command_survives_a_killed_worker_and_leaves_nothing_running(ray_tmpdir, tmp_path) -> None:
    rng = np.random.default_rng(1)
    lower = rng.integers(0, 100, 200)
    rows = zip(lower, lower + rng.integers(1, 40, 200), rng.integers(1, 1000, 200), strict=True)
    path = tmp_path / "blocks.csv"
    lines = [f"b{i},{start},{end},{size}\n" for i, (start, end, size) in enumerate(rows)]
    path.write_text("id,lower,upper,size\n" + "".join(lines))
    env = {**os.environ, "RAY_TMPDIR": ray_tmpdir, "GAPLANNER_RAY_MIN_SECONDS": "0"}  # Ray for any search
    command = ["plan", str(path), "--workers", "2", "--generations", "500", "--time-limit", "600", "-q"]
    command.append("--no-exact")  # the GA on Ray, not exact probes
    process = subprocess.Popen(
        [sys.executable, "-m", "gaplanner.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while not (workers := island_workers(process.pid)):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    workers[0].kill()  # SIGKILL, long before 500 generations are done
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    plan = json.loads(out)  # stdout holds the plan only, whatever Ray says about the dead worker
    assert plan["ray"] and plan["workers"] == 2 and plan["generations"] == 500 and plan["restarts"] >= 1
    assert ray_processes(ray_tmpdir) == []


def test_sigterm_during_a_search_shuts_ray_down(ray_tmpdir) -> None:
    env = {**os.environ, "RAY_TMPDIR": ray_tmpdir, "GAPLANNER_RAY_MIN_SECONDS": "0"}
    command = [sys.executable, "-m", "gaplanner.cli", "plan", "zoo:densenet121@2", "--workers", "2"]
    command.append("--no-exact")  # the GA on Ray, not exact probes
    process = subprocess.Popen(
        [*command, "--time-limit", "120", "--stall-generations", "100000"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not any(
        "ray::IslandWorker" in " ".join(p.cmdline()) for p in psutil.Process(process.pid).children(True)
    ):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.2)
    process.terminate()
    assert process.wait(timeout=60) != 0  # Ray's own SIGTERM handler (ray.init) picks the code
    assert ray_processes(ray_tmpdir) == []


def test_one_worker_never_starts_ray(ray_tmpdir) -> None:
    env = {"RAY_TMPDIR": ray_tmpdir, "GAPLANNER_RAY_MIN_SECONDS": "0"}
    done = gaplanner("plan", "zoo:mobilenetv1", "--workers", "1", "--generations", "3", "-q", env=env)
    assert done.returncode == 0, done.stderr
    assert "ray" not in json.loads(done.stdout)
    assert not Path(ray_tmpdir, "ray").exists()
