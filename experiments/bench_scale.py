"""Interval problems at scale: wall time, peak memory and peak / bound from 1k to 1M blocks.

    python -m experiments.bench_scale [--sizes 1000,10000,62000,250000,1000000]
        [--benchmarks ../shared/benchmarks] [--search-up-to 62000] [--repeats 1]

Inputs: :mod:`experiments.synthetic` problems (seed 0) at each size, and the
large benchmark inputs (pangu, iopddl S, Y and G) when ``--benchmarks`` names
the folder holding ``large/`` (skipped without it). Per input and planner, one
fresh process per run (``--repeats``: the median of that many), which reads
or generates the input, plans a 300-block problem first (loading the
compiled kernels: the runs timed are warm) and then plans it; its peak resident memory is the
process's own (``wait4``), so it includes the interpreter, numpy and numba
(about 150 MB) and the input. Seconds are the planner's alone: from the
problem to a verified plan (ours verify inside the call; omnimalloc's offsets
are verified after it, outside its time).

Planners: ``greedy-size`` and ``first-fit`` (gaplanner's baselines), the
default search (``ga``) at ``--time-limit 10`` up to ``--search-up-to``
blocks, and omnimalloc's greedy by size (``GreedyBySizeAllocator``: size
descending, first-fit among the placed blocks live at the same time; its
only setting) when omnimalloc is installed. The table is printed and
written to ``docs/results/scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from experiments.common import benchmarks_root
from experiments.report import write_results

SIZES = (1_000, 10_000, 62_000, 250_000, 1_000_000)
LARGE = {
    "pangu": "large/somas_tensors_pangu_2.6B.csv",
    "iopddl S": "large/iopddl_S_1.csv",
    "iopddl Y": "large/iopddl_Y_1.csv",
    "iopddl G": "large/iopddl_G_1.csv",
}
PLANNERS = ("greedy-size", "first-fit", "ga 10 s", "omnimalloc greedy-by-size")
SEARCH_SECONDS = 10.0


def _problem(source: str):
    from experiments.synthetic import synthetic_problem
    from gaplanner import load_problem

    return synthetic_problem(int(source), seed=0) if source.isdigit() else load_problem(source)


def _omnimalloc_greedy(problem) -> tuple:
    """omnimalloc's greedy by size: its seconds and offsets (None without omnimalloc)."""
    try:
        from omnimalloc import allocate
        from omnimalloc.allocators import GreedyBySizeAllocator
    except ImportError:
        return None, None
    import numpy as np

    from experiments.comparators import _allocations

    allocations = _allocations(problem)
    started = time.perf_counter()
    placed = allocate(allocations, allocator=GreedyBySizeAllocator())
    seconds = time.perf_counter() - started
    offsets = np.empty(problem.n, np.int64)
    for allocation in placed:
        offsets[allocation.id] = allocation.offset
    return seconds, offsets


def _plan(planner: str, problem, seconds: float) -> int | None:
    """The peak of our ``planner``'s verified plan (None for omnimalloc's)."""
    from gaplanner import GASettings, solve

    if planner.startswith("omnimalloc"):
        return None
    settings = GASettings(time_limit=seconds) if planner == "ga 10 s" else None
    return solve(problem, "ga" if planner == "ga 10 s" else planner, settings).peak


def run_one(planner: str, source: str) -> dict:
    """Plan ``source`` with ``planner`` in this process: seconds, peak and bound."""
    from gaplanner.plans.verify import verify

    _plan(planner, _problem("300"), 1.0)  # loads (or compiles) the kernels: warm runs are timed
    problem = _problem(source)
    if planner == "omnimalloc greedy-by-size":
        seconds, offsets = _omnimalloc_greedy(problem)
        if offsets is None:
            return {}
        peak = int((offsets + problem.sizes).max())
        verify(problem, offsets, peak)
    else:
        started = time.perf_counter()
        peak = _plan(planner, problem, SEARCH_SECONDS)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "peak": peak, "bound": problem.lower_bound, "n": problem.n}


def measure(planner: str, source: str, repeats: int) -> dict | None:
    """Median seconds and the largest peak resident memory of ``repeats`` fresh processes."""
    runs, rss = [], []
    for _ in range(repeats):
        child = subprocess.Popen(
            [sys.executable, "-m", "experiments.bench_scale", "--one", planner, source],
            stdout=subprocess.PIPE,
            text=True,
        )
        out = child.stdout.read() if child.stdout else ""
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0 or not out.strip():
            return None
        result = json.loads(out.strip().splitlines()[-1])
        if not result:
            return None
        runs.append(result)
        rss.append(usage.ru_maxrss / 1024)  # KiB on Linux
    return {**runs[0], "seconds": statistics.median(r["seconds"] for r in runs), "rss": max(rss)}


def rows_for(label: str, source: str, planners: list[str], repeats: int) -> list[list[object]]:
    rows = []
    for planner in planners:
        result = measure(planner, source, repeats)
        if result is None:
            rows.append([label, "", planner, "failed", "", ""])
            continue
        ratio = result["peak"] / result["bound"]
        row = [
            label,
            f"{result['n']:,}",
            planner,
            f"{result['seconds']:.2f}",
            f"{result['rss']:,.0f}",
            f"{ratio:.4f}",
        ]
        print(" | ".join(str(c) for c in row), flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--benchmarks", default=None, help="folder holding large/ (skipped without it)")
    parser.add_argument("--search-up-to", type=int, default=62_000, help="largest search input")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--one", nargs=2, metavar=("PLANNER", "SOURCE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return 0
    load_before = os.getloadavg()[0]
    inputs = [(f"synthetic {int(s):,}", s, int(s)) for s in args.sizes.split(",") if s]
    root = benchmarks_root(args.benchmarks)
    if root is not None:
        inputs += [(name, str(root / path), 0) for name, path in LARGE.items() if (root / path).exists()]
    rows = []
    for label, source, n in inputs:
        planners = [p for p in PLANNERS if p != "ga 10 s" or n <= args.search_up_to]
        rows += rows_for(label, source, planners, args.repeats)
    notes = (
        f"Load average (1 min) {load_before:.1f} before the runs and {os.getloadavg()[0]:.1f} after, on a "
        "shared 2-core machine: seconds move with the load; peak / bound does not. "
        f"Median of {args.repeats} run(s) per cell. The bound is the max load (no plan is lower). "
        "Peak RSS is the whole process's: interpreter, libraries and input included. "
        "`ga 10 s` is the default search at `time_limit=10`; its seconds include starting plans and "
        "verification."
    )
    command = "python -m experiments.bench_scale " + " ".join(argv if argv is not None else sys.argv[1:])
    header = ["input", "blocks", "planner", "seconds", "peak RSS (MB)", "peak / bound"]
    write_results("scale", "Interval problems at scale", header, rows, command.strip(), notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
