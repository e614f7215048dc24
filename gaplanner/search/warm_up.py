"""Compile every kernel once, into the package's numba cache: when the package is built, or on demand.

Numba compiles a kernel on its first call in a process unless its on-disk
cache holds it: over a minute of CPU for all of them (docs/decisions.md),
and a plan's first run of each path (the GA, the exact search, the order
search, memories) would pay for its own share. :func:`compile_kernels` runs
every path once on tiny inputs, so the cache holds every kernel a plan can
run. The package's build runs it (``setup.py``), so an installed wheel
carries its kernels; ``python -m gaplanner.search.warm_up`` does the same in
a source checkout. Numba keys its cache by the source's contents, the numba
version and the CPU: on another CPU the kernels compile once, at first use.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from numba.core import event

from gaplanner.problem.loading import load_problem
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.exact.search import ExactSettings
from gaplanner.search.exact.search import warm_up as warm_up_exact
from gaplanner.search.ga import GASettings
from gaplanner.search.random_search import RandomSearchSettings
from gaplanner.search.warm import warm_up as warm_up_search
from gaplanner.solve import ALGORITHMS, solve


def _tiny_problems() -> list:
    """Narrow and wide offsets, a multi-core graph and a problem with memories."""
    sizes, lower, upper = np.array([3, 2, 2, 1]), np.array([0, 0, 1, 2]), np.array([2, 3, 3, 4])
    narrow = problem_from_arrays(sizes, lower, upper)
    wide = problem_from_arrays(sizes << 40, lower, upper)
    return [narrow, wide, load_problem("example:multicore_fig1b"), load_problem("example:sram_dram")]


def compile_kernels() -> None:
    """Run every algorithm (and the searches' warm-ups) once on tiny inputs: each kernel compiles or loads."""
    warm_up_search()
    warm_up_exact()
    settings = {
        "ga": GASettings(generations=2, time_limit=5.0, population=4, elite=1, islands=2, seed=1),
        "exact": ExactSettings(time_limit=0.5, threads=1),
        "random-search": RandomSearchSettings(),
    }
    for problem in _tiny_problems():
        for algorithm in ALGORITHMS:
            if problem.memories is not None and algorithm not in ("ga", "spill-greedy"):
                continue
            solve(problem, algorithm, settings.get(algorithm))


class _CompileCounter(event.Listener):
    """Counts numba's compile events: each one is a kernel the cache did not hold."""

    def __init__(self) -> None:
        self.count = 0

    def on_start(self, ev: event.Event) -> None:
        self.count += 1

    def on_end(self, ev: event.Event) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    """Compile (or load) every kernel; with ``--check``, exit 1 if any had to be compiled.

    ``--check`` right after an install says whether the build filled the package's cache
    (CI runs it), so that a user's first plan loads every kernel instead of compiling it.
    """
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    started, compiles = time.perf_counter(), _CompileCounter()
    with event.install_listener("numba:compile", compiles):
        compile_kernels()
    seconds = time.perf_counter() - started
    print(f"gaplanner: kernels compiled or loaded in {seconds:.1f} s", file=sys.stderr)
    if check and compiles.count:
        print(f"gaplanner: {compiles.count} kernels were not in the package's cache", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
