"""The compiled kernels' bridge (gaplanner.native): no JIT, clear errors, threads per Python thread."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from gaplanner import native
from gaplanner.native import _conflicts

EVERY_PATH = """
import sys
from gaplanner import load_problem, solve, GASettings, ExactSettings
from gaplanner.problem.loading import load_document
from gaplanner.schedule.choose import search_schedule
for source in ("example:seed000_queue", "zoo:resnet50@2", "example:sram_dram"):
    problem = load_problem(source)
    solve(problem, "ga", GASettings(generations=2, time_limit=5.0, seed=1))
    if problem.memories is None:
        for algorithm in ("first-fit", "best-fit-coalescing", "greedy-size"):
            solve(problem, algorithm)
        solve(problem, "exact", ExactSettings(time_limit=0.2))
search_schedule(load_document("example:seed000_queue"))
print(sorted(name for name in ("numba", "llvmlite") if name in sys.modules))
"""


@pytest.mark.slow
def test_no_plan_loads_a_just_in_time_compiler() -> None:
    """Every search, the baselines, the exact search, memories and the order search run on kernels
    compiled with the package: none of them imports a JIT (which would compile at the user's first run)."""
    result = subprocess.run([sys.executable, "-c", EVERY_PATH], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_a_kernel_names_the_argument_of_the_wrong_type() -> None:
    lower, upper = np.array([0, 1], np.int64), np.array([2, 3], np.int64)
    with pytest.raises(TypeError, match=r"interval_degrees\(\): order must be a int64 array"):
        _conflicts.interval_degrees(np.array([0, 1], np.int32), lower, upper)
    with pytest.raises(TypeError, match="upper must be a C-contiguous array"):
        _conflicts.interval_degrees(np.array([0, 1]), lower, np.arange(4)[::2])
    with pytest.raises(TypeError, match="upper is missing"):
        _conflicts.interval_degrees(np.array([0, 1]), lower)
    assert _conflicts.interval_degrees(np.array([0, 1]), lower, upper).tolist() == [1, 1]


def _threads_in_a_new_thread() -> int:
    seen: list[int] = []
    other = threading.Thread(target=lambda: seen.append(native.threads()))
    other.start()
    other.join()
    return seen[0]


def test_threads_are_set_per_python_thread_and_restored() -> None:
    before, fresh = native.threads(), _threads_in_a_new_thread()
    with native.limited_threads(1 if fresh > 1 else 2):
        assert native.threads() == (1 if fresh > 1 else 2)
        assert _threads_in_a_new_thread() == fresh
    assert native.threads() == before


def test_the_default_thread_count_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GAPLANNER_THREADS", "3")
    assert _threads_in_a_new_thread() == 3
