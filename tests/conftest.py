"""Shared fixtures: the benchmark folder (optional) and small helpers."""

from __future__ import annotations

import os
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
