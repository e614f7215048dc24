"""Shared fixtures: the benchmark folder (optional) and small helpers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

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
    (Ray's core worker and its threads, two OpenMP runtimes: numba's and
    torch's, ExecuTorch's runtime). Their teardown at interpreter exit crashed
    once in CI after every test had passed, turning a passing run into a
    segmentation fault. The tests' verdict is pytest's summary, already
    printed; nothing after it is a test. Subprocess tests still see every
    crash of the commands they run.
    """
    if _EXIT_STATUS in config.stash:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.stash[_EXIT_STATUS])


_EXIT_STATUS = pytest.StashKey[int]()
