"""Shared fixtures: the benchmark folder (optional) and small helpers."""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

#: Where the shared benchmarks live; tests that need them skip without them.
BENCHMARKS = Path(
    os.environ.get("GAPLANNER_BENCHMARKS", Path(__file__).parents[1] / ".." / "shared" / "benchmarks")
)


@pytest.fixture
def benchmarks() -> Path:
    if not BENCHMARKS.is_dir():
        pytest.skip(f"benchmark data not found at {BENCHMARKS} (set GAPLANNER_BENCHMARKS)")
    return BENCHMARKS


@pytest.fixture(autouse=True)
def results_elsewhere(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Benchmarks run by tests write their results files to a temporary folder, not into docs/."""
    monkeypatch.setenv("GAPLANNER_RESULTS", str(tmp_path_factory.mktemp("docs") / "results"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the test process with pytest's verdict, skipping the interpreter's teardown.

    The suite loads native libraries that were never meant to share a process
    (Ray's core worker and its threads, torch's OpenMP runtime,
    ExecuTorch's runtime). Their teardown at interpreter exit crashed
    once in CI after every test had passed, turning a passing run into a
    segmentation fault. The tests' verdict is pytest's summary, already
    printed; nothing after it is a test. Subprocess tests still see every
    crash of the commands they run.
    """
    if _EXIT_STATUS in config.stash:
        end_descendants()  # os._exit runs no clean-up: nothing this session started may outlive it
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.stash[_EXIT_STATUS])


#: Set in every process the test session starts (children inherit it), so that one whose parent died
#: and which was adopted elsewhere can still be told apart (see session_processes).
SESSION_MARK = "GAPLANNER_TEST_SESSION"
os.environ.setdefault(SESSION_MARK, f"{os.getpid()}-{uuid.uuid4().hex}")


def session_processes() -> list[Any]:
    """Live processes started by this test session, at any depth, adopted or not (needs psutil)."""
    import psutil

    mark, found = os.environ[SESSION_MARK], []
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error):
            if process.environ().get(SESSION_MARK) == mark and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def end_descendants(grace: float = 3.0) -> None:
    """Terminate this process's descendants, then kill those still alive after ``grace`` seconds."""
    try:
        import psutil
    except ImportError:
        return
    children = psutil.Process().children(recursive=True)
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=grace)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()


_EXIT_STATUS = pytest.StashKey[int]()
