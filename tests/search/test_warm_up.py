"""The package's build compiles every kernel a plan runs: after it, planning other inputs compiles nothing."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core import event

from gaplanner.problem.loading import load_problem
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.exact.search import ExactSettings
from gaplanner.search.ga import GASettings
from gaplanner.search.warm_up import compile_kernels
from gaplanner.solve import ALGORITHMS, solve


class _Compiles(event.Listener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_start(self, ev: event.Event) -> None:
        self.names.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev: event.Event) -> None:
        pass


@pytest.mark.slow
def test_after_the_build_s_warm_up_no_plan_compiles() -> None:
    """Other inputs than the warm-up's own (a zoo split, devices and memories, a wide buffer list with an
    alignment) with every algorithm: each kernel was compiled for the types they pass."""
    compile_kernels()
    rng = np.random.default_rng(3)
    lower = rng.integers(0, 50, 60)
    wide = problem_from_arrays(rng.integers(1, 1 << 20, 60) << 20, lower, lower + 5, alignment=64)
    problems = [wide, load_problem("zoo:googlenet@2"), load_problem("example:npu_dsp")]
    settings = {
        "ga": GASettings(generations=3, time_limit=5.0, seed=2),
        "exact": ExactSettings(time_limit=0.3, threads=2),
    }
    compiles = _Compiles()
    with event.install_listener("numba:compile", compiles):
        for problem in problems:
            for algorithm in ALGORITHMS:
                if problem.memories is None or algorithm in ("ga", "spill-greedy"):
                    solve(problem, algorithm, settings.get(algorithm))
    assert compiles.names == []
