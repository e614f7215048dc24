"""Multi-core problems at scale, with and without their conflict pairs: seconds, peak memory, peak / bound.

    python -m experiments.bench_pair_free [--sizes 10000,62000,250000] [--streams 2,4]
        [--timeout 300] [--pairs-up-to 250000]

Inputs: :mod:`experiments.synthetic_streams` problems (vector clocks, seed 0)
of 2 and 4 streams. Each is planned by first-fit and by the default search
(``ga``) at ``time_limit=10``, two ways: **pairs**, where the conflicting
pairs are built (as every multi-core problem was before the decoder without
pairs: for the clique bound and the pair-list decoder), and **pair-free**,
where they never are (the decoder, the starting plans, the GA's scores and
the verifier work from the happens-before vectors; the bound is the load over
the summed time axis). The switch between them is
``gaplanner.problem.order.PAIR_ENTRIES_LIMIT``: forced to its extremes here,
left alone a problem is planned pair-free exactly when its padded pair list
would pass it. One fresh process per run, which plans a 300-block problem
first (loading the kernels: the runs timed are warm), then generates the
input and plans it; its peak resident memory (``wait4``) is the whole
process's. Seconds run from the buffers to a verified plan: building the
problem (conflicts, bound) and planning it. A run past ``--timeout`` is
stopped and shown as such.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

from experiments.report import write_results

SIZES = (10_000, 62_000, 250_000)
STREAMS = (2, 4)
PLANNERS = ("first-fit", "ga 10 s")
MODES = ("pairs", "pair-free")
SEARCH_SECONDS = 10.0


def _limit(mode: str) -> int:
    return 1 << 62 if mode == "pairs" else -1


def run_one(planner: str, mode: str, n: int, streams: int) -> dict:
    """Build and plan one problem in this process: seconds, peak, bound, pairs."""
    from experiments.synthetic_streams import stream_arrays
    from gaplanner import GASettings, solve
    from gaplanner.problem import problem as problem_module

    problem_module.PAIR_ENTRIES_LIMIT = _limit(mode)
    settings = GASettings(time_limit=SEARCH_SECONDS) if planner == "ga 10 s" else None
    algorithm = "ga" if planner == "ga 10 s" else planner
    warm = problem_module.problem_from_clocks(*stream_arrays(300, streams, seed=1))
    solve(warm, algorithm, GASettings(time_limit=1.0) if settings else None)
    arrays = stream_arrays(n, streams, seed=0)
    started = time.perf_counter()
    problem = problem_module.problem_from_clocks(*arrays, name=f"streams-{streams}x{n}")
    peak = solve(problem, algorithm, settings).peak
    seconds = time.perf_counter() - started
    built = bool(getattr(problem.conflicts, "built", True))
    return {"seconds": seconds, "peak": peak, "bound": problem.lower_bound, "n": problem.n,
            "pairs": problem.conflicts.edge_count, "built": built}  # fmt: skip


def measure(planner: str, mode: str, n: int, streams: int, timeout: float) -> dict:
    """One fresh process: its result and peak resident memory (``wait4``), or why it has none."""
    command = [
        sys.executable,
        "-m",
        "experiments.bench_pair_free",
        "--one",
        planner,
        mode,
        str(n),
        str(streams),
    ]
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    timer = threading.Timer(timeout, child.kill)
    timer.start()
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    timer.cancel()
    if status != 0 or not out.strip():
        over = time.perf_counter() - started >= timeout
        return {"failed": f"over {timeout:.0f} s" if over else f"failed ({status})"}
    return {**json.loads(out.strip().splitlines()[-1]), "rss": usage.ru_maxrss / 1024}  # KiB on Linux


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--streams", default=",".join(str(s) for s in STREAMS))
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--pairs-up-to", type=int, default=250_000, help="largest input run with pairs")
    parser.add_argument("--one", nargs=4, metavar=("PLANNER", "MODE", "N", "STREAMS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        planner, mode, n, streams = args.one
        print(json.dumps(run_one(planner, mode, int(n), int(streams))))
        return 0
    load_before = os.getloadavg()[0]
    rows = []
    for streams in (int(s) for s in args.streams.split(",")):
        for n in (int(s) for s in args.sizes.split(",")):
            for planner in PLANNERS:
                for mode in MODES:
                    if mode == "pairs" and n > args.pairs_up_to:
                        continue
                    rows.append(_row(planner, mode, n, streams, args.timeout))
    notes = (
        f"Load average (1 min) {load_before:.1f} before the runs and {os.getloadavg()[0]:.1f} after, on a "
        "shared 2-core machine: seconds move with the load; peaks do not. One run per cell. "
        "`pairs`: the conflicting pairs built (the bound is the heaviest clique found over them); "
        "`pair-free`: never built (the bound is the max load over the summed time axis, lower: "
        "peak / bound of the two modes compare the same peak against different bounds, so compare peaks). "
        "`pairs built`: whether anything built them by the end (pair-free, only the exact search, which "
        "takes multi-core problems only when small). Pairs are not tried past `--pairs-up-to`. "
        "`ga 10 s` is the default search at `time_limit=10`; seconds include building the problem, the "
        "starting plans and verification. Peak RSS is the whole process's (interpreter, numpy, input)."
    )
    command = "python -m experiments.bench_pair_free " + " ".join(argv if argv is not None else sys.argv[1:])
    header = ["streams", "blocks", "conflicting pairs", "planner", "conflicts", "pairs built", "seconds",
              "peak RSS (MB)", "peak", "bound", "peak / bound"]  # fmt: skip
    write_results("pair-free", "Multi-core problems with and without their pairs", header, rows,
                  command.strip(), notes)  # fmt: skip
    return 0


def _row(planner: str, mode: str, n: int, streams: int, timeout: float) -> list[object]:
    result = measure(planner, mode, n, streams, timeout)
    if "failed" in result:
        row = [streams, f"{n:,}", "", planner, mode, "", result["failed"], "", "", "", ""]
    else:
        row = [
            streams, f"{result['n']:,}", f"{result['pairs']:,}", planner, mode,
            "yes" if result["built"] else "no", f"{result['seconds']:.1f}",
            f"{result['rss']:,.0f}", f"{result['peak']:,}", f"{result['bound']:,}",
            f"{result['peak'] / result['bound']:.4f}",
        ]  # fmt: skip
    print(" | ".join(str(c) for c in row), flush=True)
    return row


if __name__ == "__main__":
    sys.exit(main())
