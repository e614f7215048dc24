"""Interval problems at scale: wall time, peak memory and peak / bound from 1k to 1M blocks, with anchors.

    python -m experiments.bench_scale [--sizes 1000,10000,62000,250000,1000000]
        [--benchmarks ../shared/benchmarks] [--large "pangu,iopddl S,iopddl Y,iopddl G"]
        [--search-seconds 10,60] [--search-up-to N]
        [--anchor-seconds 10] [--minimalloc PATH] [--cli-at 250000]
        [--memory-cap-gb 8] [--cell-timeout 600] [--repeats 1] [--planners ...]

Inputs: :mod:`experiments.synthetic` problems (seed 0) at each size, and the
large benchmark inputs (pangu, iopddl S, Y and G) when ``--benchmarks`` names
the folder holding ``large/`` (skipped without it; ``--large`` picks some).

Every cell (input and planner) is one fresh process (``--repeats``: the
median of that many) under a wall timeout (``--cell-timeout``) and an
address-space cap (``RLIMIT_AS``, ``--memory-cap-gb``), so that a planner that
would run for ever or exhaust the machine is recorded as "no plan in T s" or
"over N GB" and the run goes on. Its peak resident memory is the process's
own (``wait4``): the interpreter, numpy and the kernels and the input
are included. A Python cell reads or generates the input, plans a 300-block
problem first with the same planner (loading the compiled kernels and the
libraries: the runs timed are warm) and then plans it. Seconds are the
planner's alone, from the problem to a verified plan: ours verify inside the
call; the anchors' offsets are verified by gaplanner's verifier after it,
outside its time, and a plan that fails verification is reported as such.

Planners:

* ``greedy-size`` and ``first-fit``: gaplanner's baselines;
* ``ga S s``: the default search at ``time_limit=S`` for each S of
  ``--search-seconds``, up to ``--search-up-to`` blocks (default every size),
  timed as the whole ``solve`` call; and at the sizes of ``--cli-at``,
  ``gaplanner plan INPUT --time-limit S`` as a whole process timed from outside
  (interpreter start-up, reading the CSV, the search, verification, writing
  the plan: what a user waits for);
* omnimalloc 1.0 (the ``compare`` extra; left out without it): its greedy by
  size (``GreedyBySizeAllocator``, no settings), its default allocator ``omni``
  (``OmniAllocator``, a C++ greedy portfolio; its one setting,
  ``linearize_budget``, matters only for vector clocks) and its branch and bound
  (``SupermallocAllocator(timeout=A, num_threads=6)``, ``A`` =
  ``--anchor-seconds``: its timeout covers the whole call, and it tries
  threads // 3 bound targets at once, so 6 threads is its best setting on few
  cores, as in ``experiments/bench_exact.py``);
* MiniMalloc, with ``--minimalloc PATH`` (a binary built outside this
  repository): ``--minimize_capacity`` (its own bisection of the capacity,
  from 0 up to ``--capacity``, here the sum of the sizes, which always fits)
  with ``--timeout`` = ``--anchor-seconds``; its seconds are its own log's
  ("Elapsed time": the solve, not reading the CSV).

The table is printed and written to ``docs/results/scale.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments.common import benchmarks_root
from experiments.report import write_results

SIZES = (1_000, 10_000, 62_000, 250_000, 1_000_000)
LARGE = {
    "pangu": "large/somas_tensors_pangu_2.6B.csv",
    "iopddl S": "large/iopddl_S_1.csv",
    "iopddl Y": "large/iopddl_Y_1.csv",
    "iopddl G": "large/iopddl_G_1.csv",
}
#: Every kind of cell, in table order (``--planners`` picks some).
KINDS = ("greedy-size", "first-fit", "ga", "cli", "omni-greedy", "omni", "omni-bnb", "minimalloc")
OMNIMALLOC = ("omni-greedy", "omni", "omni-bnb")
BNB_THREADS = 6
#: Signs in a failed child's stderr that it ran out of (capped) memory.
OUT_OF_MEMORY = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory", "std::length_error")
WARM_UP = "300"


@dataclass(frozen=True)
class Cell:
    """One planner run on one input: ``kind`` (one of :data:`KINDS`) at ``seconds`` (its time limit)."""

    kind: str
    seconds: float = 0.0

    @property
    def label(self) -> str:
        return {
            "ga": f"ga {self.seconds:g} s",
            "cli": f"`gaplanner plan --time-limit {self.seconds:g}` (whole process)",
            "omni-greedy": "omnimalloc greedy-by-size",
            "omni": "omnimalloc omni",
            "omni-bnb": f"omnimalloc B&B, {BNB_THREADS} threads, {self.seconds:g} s",
            "minimalloc": f"MiniMalloc {self.seconds:g} s",
        }.get(self.kind, self.kind)


# --- in the child: plan one input -------------------------------------------------------------------


def _problem(source: str):
    from experiments.synthetic import synthetic_problem
    from gaplanner import load_problem

    return synthetic_problem(int(source), seed=0) if source.isdigit() else load_problem(source)


def _omnimalloc(kind: str, seconds: float):
    """The omnimalloc allocator of ``kind``, built afresh (its settings: the module docstring)."""
    from omnimalloc.allocators import GreedyBySizeAllocator, OmniAllocator, SupermallocAllocator

    if kind == "omni-greedy":
        return GreedyBySizeAllocator()
    if kind == "omni":
        return OmniAllocator()
    return SupermallocAllocator(timeout=seconds, num_threads=BNB_THREADS)


def _anchor_offsets(kind: str, problem, seconds: float) -> tuple[float, np.ndarray]:
    """omnimalloc's plan of ``problem``: the seconds of its ``allocate`` call and the offsets per block."""
    from omnimalloc import allocate

    from experiments.comparators import _allocations

    allocations = _allocations(problem)
    allocator = _omnimalloc(kind, seconds)
    started = time.perf_counter()
    placed = allocate(allocations, allocator=allocator)
    elapsed = time.perf_counter() - started
    offsets = np.empty(problem.n, np.int64)
    for allocation in placed:
        offsets[allocation.id] = allocation.offset
    return elapsed, offsets


def _plan(kind: str, problem, seconds: float) -> tuple[float, int]:
    """Plan ``problem`` with ``kind``: the planner's seconds and the verified plan's peak."""
    from gaplanner import GASettings, solve
    from gaplanner.plans.verify import verify

    if kind in OMNIMALLOC:
        elapsed, offsets = _anchor_offsets(kind, problem, seconds)
        peak = int((offsets + problem.sizes).max(initial=0))
        verify(problem, offsets, peak)  # outside its time: raises PlanError on an invalid plan
        return elapsed, peak
    settings = GASettings(time_limit=seconds) if kind == "ga" else None
    started = time.perf_counter()
    peak = solve(problem, kind, settings).peak  # ours verify inside the call
    return time.perf_counter() - started, peak


def run_one(kind: str, source: str, seconds: float) -> dict:
    """Plan ``source`` with ``kind`` in this process, warm: seconds, peak, bound and blocks."""
    _plan(kind, _problem(WARM_UP), min(seconds, 1.0))  # loads the kernels and libraries
    problem = _problem(source)
    elapsed, peak = _plan(kind, problem, seconds)
    return {"seconds": elapsed, "peak": peak, "bound": problem.lower_bound, "n": problem.n}


def verify_offsets(source: str, plan_csv: str) -> dict:
    """Check a plan written as MiniMalloc's CSV (an ``offset`` column) with gaplanner's verifier."""
    from gaplanner.plans.verify import verify

    problem = _problem(source)
    index = {block_id: k for k, block_id in enumerate(problem.ids)}
    offsets = np.full(problem.n, -1, np.int64)
    with open(plan_csv, newline="") as rows:
        for record in csv.DictReader(rows):
            offsets[index[record["id"].strip()]] = int(record["offset"])
    peak = int((offsets + problem.sizes).max(initial=0))
    verify(problem, offsets, peak)
    return {"peak": peak, "bound": problem.lower_bound, "n": problem.n}


# --- in the parent: run cells as capped processes ----------------------------------------------------


def run_process(command: list[str], timeout: float, cap_gb: float) -> dict:
    """Run ``command`` with its address space capped at ``cap_gb``: wall, peak RSS (MB), status, output.

    ``status`` is ``"ok"``, ``"timeout"`` (killed after ``timeout`` seconds),
    ``"memory"`` (it failed with signs of running out of memory) or ``"failed"``.
    """
    cap = int(cap_gb * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True, preexec_fn=limit)
        timed_out = False
        while True:
            pid, code, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout:
                child.kill()
                _, code, usage = os.wait4(child.pid, 0)
                timed_out = True
                break
            time.sleep(0.05)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(code)  # reaped here: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if timed_out:
        status = "timeout"
    elif child.returncode == 0:
        status = "ok"
    elif any(sign in stderr for sign in OUT_OF_MEMORY):
        status = "memory"
    else:
        status = "failed"
    return {"status": status, "wall": wall, "rss": usage.ru_maxrss / 1024, "stdout": stdout, "stderr": stderr,
            "code": child.returncode}  # fmt: skip


def reason(run: dict, timeout: float, cap_gb: float) -> str:
    """Why a cell has no figures: the words that go into its note."""
    if run["status"] == "timeout":
        return f"no plan in {timeout:g} s (killed)"
    if run["status"] == "memory":
        return f"over {cap_gb:g} GB (address space cap)"
    last = [line for line in run["stderr"].strip().splitlines() if line.strip()][-1:]
    detail = last[0][-120:].replace("|", "/") if last else ""
    return f"failed (exit {run['code']}){': ' + detail if detail else ''}"


def _child(*args: str) -> list[str]:
    return [sys.executable, "-m", "experiments.bench_scale", *args]


def measure_once(cell: Cell, source: str, csv_path: str, args: argparse.Namespace, scratch: Path) -> dict:
    """One run of ``cell``: seconds, rss, peak, bound and n, or ``{"reason": ...}``."""
    timeout, cap = args.cell_timeout, args.memory_cap_gb
    if cell.kind == "cli":
        plan = scratch / "plan.json"
        plan.unlink(missing_ok=True)
        command = [sys.executable, "-m", "gaplanner.cli", "plan", csv_path, "--quiet", "-o", str(plan)]
        run = run_process([*command, "--time-limit", f"{cell.seconds:g}"], timeout, cap)
        if run["status"] != "ok":
            return {"reason": reason(run, timeout, cap)}
        result = json.loads(plan.read_text())
        return {"seconds": run["wall"], "rss": run["rss"], "peak": result["peak"],
                "bound": result["lower_bound"], "n": len(result["blocks"])}  # fmt: skip
    if cell.kind == "minimalloc":
        return _minimalloc(cell, source, csv_path, args, scratch)
    run = run_process(_child("--one", cell.kind, source, f"{cell.seconds:g}"), timeout, cap)
    if run["status"] != "ok":
        return {"reason": reason(run, timeout, cap)}
    return {**json.loads(run["stdout"].strip().splitlines()[-1]), "rss": run["rss"]}


def _minimalloc(cell: Cell, source: str, csv_path: str, args: argparse.Namespace, scratch: Path) -> dict:
    """MiniMalloc's binary on the input's CSV, then its plan checked by gaplanner's verifier."""
    timeout, cap = args.cell_timeout, args.memory_cap_gb
    plan = scratch / "minimalloc_plan.csv"
    plan.unlink(missing_ok=True)
    total = int(np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=3, dtype=np.int64, ndmin=1).sum())
    command = [args.minimalloc, f"--input={csv_path}", f"--output={plan}", f"--capacity={total}",
               "--minimize_capacity", f"--timeout={cell.seconds:g}s"]  # fmt: skip
    run = run_process(command, timeout, cap)
    if run["status"] == "failed" and "Not found any valid capacity" in run["stderr"]:
        return {"reason": f"no plan in {cell.seconds:g} s (its timeout)"}
    if run["status"] != "ok" or not plan.exists():
        return {"reason": reason(run, timeout, cap)}
    elapsed = re.search(r"Elapsed time ([0-9.]+)s", run["stderr"])
    check = run_process(_child("--verify-csv", source, str(plan)), timeout, 2 * cap)
    if check["status"] != "ok":
        return {"reason": "invalid plan: " + reason(check, timeout, 2 * cap)}
    result = json.loads(check["stdout"].strip().splitlines()[-1])
    return {**result, "seconds": float(elapsed.group(1)) if elapsed else run["wall"], "rss": run["rss"]}


def measure(cell: Cell, source: str, csv_path: str, args: argparse.Namespace, scratch: Path) -> dict:
    """Median seconds and the largest peak RSS of ``--repeats`` runs; the first failure's reason."""
    runs = []
    for _ in range(args.repeats):
        result = measure_once(cell, source, csv_path, args, scratch)
        if "reason" in result:
            return result
        runs.append(result)
    return {**runs[0], "seconds": statistics.median(r["seconds"] for r in runs),
            "rss": max(r["rss"] for r in runs)}  # fmt: skip


def row(label: str, blocks: int, cell: Cell, result: dict) -> list[object]:
    """A table row: figures, or "–" and the reason in the note."""
    if "reason" in result:
        return [label, f"{blocks:,}", cell.label, "–", "–", "–", result["reason"]]
    ratio = result["peak"] / result["bound"]
    note = "its own log's seconds" if cell.kind == "minimalloc" else ""
    return [label, f"{result['n']:,}", cell.label, f"{result['seconds']:.2f}", f"{result['rss']:,.0f}",
            f"{ratio:.4f}", note]  # fmt: skip


def cells_for(blocks: int, synthetic: bool, args: argparse.Namespace) -> list[Cell]:
    """The cells of one input, in table order."""
    kinds = [k for k in KINDS if k in args.planners.split(",")]
    search = [float(s) for s in args.search_seconds.split(",") if s]
    cli_at = {int(s) for s in args.cli_at.split(",") if s}
    cells = []
    for kind in kinds:
        if kind == "ga" and (args.search_up_to is None or blocks <= args.search_up_to):
            cells += [Cell("ga", s) for s in search]
        elif kind == "cli" and synthetic and blocks in cli_at:
            cells += [Cell("cli", s) for s in search]
        elif kind in ("omni-bnb", "minimalloc"):
            cells.append(Cell(kind, args.anchor_seconds))
        elif kind not in ("ga", "cli"):
            cells.append(Cell(kind))
    return cells


def inputs(args: argparse.Namespace, scratch: Path) -> list[tuple[str, str, str, int, bool]]:
    """(label, source, CSV path, blocks, synthetic?) of every input; synthetic CSVs go to ``scratch``."""
    found = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        path = scratch / f"synthetic_{size}.csv"
        if args.minimalloc or "cli" in args.planners:
            from experiments.synthetic import synthetic_arrays, write_csv

            write_csv(str(path), *synthetic_arrays(size, seed=0))
        found.append((f"synthetic {size:,}", str(size), str(path), size, True))
    root = benchmarks_root(args.benchmarks)
    if root is not None:
        for label, path in LARGE.items():
            if label in args.large.split(",") and (root / path).exists():
                blocks = sum(1 for _ in (root / path).open()) - 1
                found.append((label, str(root / path), str(root / path), blocks, False))
    return found


def omnimalloc_installed() -> bool:
    try:
        import omnimalloc  # noqa: F401
    except ImportError:
        return False
    return True


NOTES = """\
Load average (1 min) {load_before:.1f} before the runs and {load_after:.1f} after, on a shared
{cores}-core machine: seconds move with the load; peak / bound does not. Median of {repeats} run(s) per
cell, each a fresh process with a {timeout:g} s wall timeout and its address space capped at {cap:g} GB
(`RLIMIT_AS`); "–" marks a cell without a plan, with the reason. The bound is the max load (no plan is
lower). Peak RSS is the whole process's: interpreter, libraries and input included (for omnimalloc also
its Python list of allocations). Seconds are the planner's call from the problem to a verified plan after
a warm-up on a 300-block problem; the `gaplanner plan` rows are the whole command timed from outside
instead (start-up, reading the CSV, search, verification, writing the plan). Settings:
`ga S s` is the default search, `GASettings(time_limit=S)`, its seconds including starting plans and
verification. omnimalloc 1.0: greedy-by-size is `GreedyBySizeAllocator()` (no settings); omni is
`OmniAllocator()` (its default allocator, a C++ greedy portfolio; its one setting, the linearize budget,
only matters for vector clocks); B&B is `SupermallocAllocator(timeout={anchor:g}, num_threads=6)`, its
timeout covering the whole call (the partition build and first greedy pack cannot be interrupted), 6
threads its best setting on few cores (it tries threads // 3 bound targets at once). Every omnimalloc
plan is checked with gaplanner's verifier outside its time. {minimalloc}"""

MINIMALLOC_NOTE = (
    "MiniMalloc (binary `{path}`, built outside this repository): `--minimize_capacity --timeout={anchor:g}s "
    "--capacity=<sum of the sizes>` (its own bisection of the capacity, from 0 up to a capacity that always "
    "fits; a probe that times out counts as infeasible, so it returns the best plan found by then); its "
    "seconds are its own log's elapsed time (the solve, without reading the CSV), its RSS the binary's, and "
    "its plan is checked with gaplanner's verifier."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--benchmarks", default=None, help="folder holding large/ (skipped without it)")
    parser.add_argument("--large", default=",".join(LARGE), help="large inputs to run ('' for none)")
    parser.add_argument("--search-seconds", default="10,60", help="time limits of the default search")
    parser.add_argument("--search-up-to", type=int, default=None, help="largest search input (default all)")
    parser.add_argument("--anchor-seconds", type=float, default=10.0, help="B&B and MiniMalloc time limit")
    parser.add_argument("--minimalloc", default=None, help="a MiniMalloc binary (column left out without)")
    parser.add_argument("--cli-at", default="250000", help="sizes with `gaplanner plan` process rows")
    parser.add_argument("--memory-cap-gb", type=float, default=8.0, help="address-space cap per cell")
    parser.add_argument("--cell-timeout", type=float, default=600.0, help="wall seconds per cell")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--planners", default=",".join(KINDS), help="cells to run, of " + ",".join(KINDS))
    parser.add_argument("--one", nargs=3, metavar=("KIND", "SOURCE", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument("--verify-csv", nargs=2, metavar=("SOURCE", "PLAN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], args.one[1], float(args.one[2]))))
        return 0
    if args.verify_csv:
        print(json.dumps(verify_offsets(*args.verify_csv)))
        return 0
    skipped = []
    if not omnimalloc_installed():
        args.planners = ",".join(k for k in args.planners.split(",") if k not in OMNIMALLOC)
        skipped.append("omnimalloc is not installed: its rows are left out.")
    if not args.minimalloc:
        args.planners = ",".join(k for k in args.planners.split(",") if k != "minimalloc")
        skipped.append("No MiniMalloc binary given (`--minimalloc PATH`): its rows are left out.")
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        for label, source, csv_path, blocks, synthetic in inputs(args, scratch):
            for cell in cells_for(blocks, synthetic, args):
                rows.append(row(label, blocks, cell, measure(cell, source, csv_path, args, scratch)))
                print(" | ".join(str(c) for c in rows[-1]), flush=True)
    notes = NOTES.format(
        load_before=load_before,
        load_after=os.getloadavg()[0],
        cores=os.cpu_count(),
        repeats=args.repeats,
        timeout=args.cell_timeout,
        cap=args.memory_cap_gb,
        anchor=args.anchor_seconds,
        minimalloc=MINIMALLOC_NOTE.format(path=args.minimalloc, anchor=args.anchor_seconds)
        if args.minimalloc
        else "",
    )
    notes = notes.replace("\n", " ") + (" " + " ".join(skipped) if skipped else "")
    command = "python -m experiments.bench_scale " + shlex.join(argv if argv is not None else sys.argv[1:])
    header = ["input", "blocks", "planner", "seconds", "peak RSS (MB)", "peak / bound", "note"]
    write_results("scale", "Interval problems at scale", header, rows, command.strip(), notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
