"""Time limits kept: the command line's wall time against ``--time-limit``, from 816 to a million blocks.

    python -m experiments.bench_time_limits [--benchmarks ../shared/benchmarks]
        [--sizes 62000,250000,1000000] [--limits 10,60] [--others-at 10]

Each cell runs ``gaplanner plan INPUT --time-limit S --quiet`` as a fresh
process and times it from the outside: the wall time includes the
interpreter's start-up, reading the input and writing the plan, all of which
the time limit covers. A cell keeps its limit when that time is at most
``1.1 * S + 1`` seconds; its CPU time (user and system, the child's
threads summed) is shown beside it, as on a loaded machine the wall time
also holds the time the process waited for a core. Inputs: the large benchmark inputs iopddl S, Y and
G when ``--benchmarks`` names the folder holding ``large/`` (skipped without
it) and :mod:`experiments.synthetic` problems (seed 0) written as CSV files
at each size. The default search runs at every limit; the other algorithms
that take a time limit (``exact``, ``random-search``) at ``--others-at``.
The table is printed and written to ``docs/results/time_limits.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from experiments.common import benchmarks_root
from experiments.report import write_results
from experiments.synthetic import synthetic_arrays, write_csv

LARGE = {
    "iopddl G": "large/iopddl_G_1.csv",
    "iopddl S": "large/iopddl_S_1.csv",
    "iopddl Y": "large/iopddl_Y_1.csv",
}
SIZES = (62_000, 250_000, 1_000_000)
OTHERS = ("exact", "random-search")


def run_cell(source: str, algorithm: str, limit: float, folder: Path) -> dict:
    """One fresh process planning ``source``: its wall time, exit status and the plan's peak and bound."""
    out = folder / "plan.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, "-m", "gaplanner.cli", "plan", source, "--algorithm", algorithm]
    command += ["--time-limit", f"{limit:g}", "--quiet", "-o", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    cell = {
        "wall": wall,
        "cpu": cpu,
        "status": done.returncode,
        "error": done.stderr.strip().splitlines()[-1:],
    }
    if done.returncode == 0 and out.exists():
        plan = json.loads(out.read_text())
        cell.update(peak=plan["peak"], bound=plan["lower_bound"], stop=plan.get("stop_reason", ""))
    return cell


def row(label: str, blocks: int, algorithm: str, limit: float, cell: dict) -> list[object]:
    kept = cell["wall"] <= 1.1 * limit + 1
    ratio = f"{cell['peak'] / cell['bound']:.4f}" if "peak" in cell else f"failed ({cell['status']})"
    stop = cell.get("stop", "") or " ".join(cell["error"])
    cpu = f"{cell['cpu']:.1f}" if "cpu" in cell else ""
    wall = f"{cell['wall']:.1f}"
    return [label, f"{blocks:,}", algorithm, f"{limit:g}", wall, cpu, "yes" if kept else "no", ratio, stop]


def inputs(args: argparse.Namespace, folder: Path) -> list[tuple[str, str, int]]:
    """(label, path, blocks) of every input: the benchmark's large ones, then the synthetic ones."""
    found = []
    root = benchmarks_root(args.benchmarks)
    if root is not None:
        for label, path in LARGE.items():
            if (root / path).exists():
                blocks = sum(1 for _ in (root / path).open()) - 1
                found.append((label, str(root / path), blocks))
    for size in (int(s) for s in args.sizes.split(",") if s):
        path = folder / f"synthetic_{size}.csv"
        write_csv(str(path), *synthetic_arrays(size, seed=0))
        found.append((f"synthetic {size:,}", str(path), size))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmarks", default=None, help="folder holding large/ (skipped without it)")
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--limits", default="10,60", help="time limits of the default search, seconds")
    parser.add_argument("--others-at", default="10", help="time limits of exact and random-search")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for label, source, blocks in inputs(args, folder):
            cells = [("ga", float(s)) for s in args.limits.split(",") if s]
            cells += [(a, float(s)) for s in args.others_at.split(",") if s for a in OTHERS]
            for algorithm, limit in cells:
                rows.append(row(label, blocks, algorithm, limit, run_cell(source, algorithm, limit, folder)))
                print(" | ".join(str(c) for c in rows[-1]), flush=True)
    notes = (
        f"Load average (1 min) {load_before:.1f} before the runs and {os.getloadavg()[0]:.1f} after, on a "
        "shared 2-core machine: wall times move with the load. Wall: the whole `gaplanner plan` process, "
        "timed from outside (interpreter start-up, reading the input, the search, verification, writing "
        "the plan). CPU: that process's user and system seconds, its threads summed (a wall time well "
        "above it is time spent waiting for a core). Kept: wall at most 1.1 x limit + 1 s. Peak / bound: "
        "the plan's peak over the lower "
        "bound (the max load). Stop: the plan's stop reason."
    )
    command = "python -m experiments.bench_time_limits " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    header = [
        "input",
        "blocks",
        "algorithm",
        "limit (s)",
        "wall (s)",
        "CPU (s)",
        "kept",
        "peak / bound",
        "stop",
    ]
    write_results("time_limits", "Time limits kept at scale", header, rows, command.strip(), notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
