"""Helpers shared by the benchmark scripts: finding the benchmark files, timing, tables."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

DEFAULT_BENCHMARKS = Path(__file__).resolve().parents[1] / ".." / "shared" / "benchmarks"


def benchmarks_root(path: str | None) -> Path | None:
    """The benchmark folder from an option, ``GAPLANNER_BENCHMARKS`` or ``../shared/benchmarks``."""
    root = Path(path or os.environ.get("GAPLANNER_BENCHMARKS", DEFAULT_BENCHMARKS)).resolve()
    return root if root.is_dir() else None


def benchmark_csvs(root: Path, suites: Iterable[str] = ("minimalloc", "zoo", "large")) -> list[Path]:
    return [p for suite in suites for p in sorted((root / suite).glob("*.csv"))]


def timed(fn: Callable[[], T], repeats: int = 1) -> tuple[T, float]:
    """Result of ``fn`` and the median wall time over ``repeats`` calls."""
    times: list[float] = []
    result = None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return result, statistics.median(times)  # type: ignore[return-value]


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
