"""Threads or processes for the service's searches? Measure both.

Runs ``--jobs`` GA searches at once, first in a thread pool inside this process,
then in a pool of spawned processes, each for ``--seconds``, while an asyncio
loop in the main thread (standing in for the HTTP server) wakes every
millisecond. Reports the generations all searches made per second, the cores
they kept busy (CPU seconds of the searching threads per second) and how late
the loop's wake-ups were (p50/p99): what the HTTP server would add to every
request.

    python -m experiments.service_workers --jobs 2 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from experiments.common import markdown_table
from experiments.report import write_results


def _one_kernel_thread() -> None:
    from gaplanner import native

    native.set_threads(1)


def search(seed: int, seconds: float, blocks: int) -> tuple[int, float]:
    """One GA search on a problem whose bound it cannot reach: the generations it made and the CPU
    seconds its thread used (with one kernel thread, the search runs on the calling thread). The GA
    alone (``exact_share=0``): the exact probes beside it would run on a thread of their own and
    pace its generations, which is not what this compares."""
    from gaplanner.problem.loading import problem_from_json
    from gaplanner.search.ga import GASettings
    from gaplanner.solve import solve
    from service.testing import unreachable_bound_document

    problem = problem_from_json(unreachable_bound_document(blocks, seed=seed))
    settings = GASettings(time_limit=seconds, stall_generations=None, seed=seed, exact_share=0)
    cpu = time.thread_time()
    generations = solve(problem, "ga", settings).search.generations
    return generations, time.thread_time() - cpu


async def _lateness(stop: asyncio.Event) -> list[float]:
    late = []
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.001)
        late.append(time.perf_counter() - started - 0.001)
    return late


async def _measure(executor: Executor, args: argparse.Namespace) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    # Warm every worker (compiled decoders loaded) before timing.
    await asyncio.gather(*(loop.run_in_executor(executor, search, k, 0.2, 30) for k in range(args.jobs)))
    stop = asyncio.Event()
    watcher = asyncio.create_task(_lateness(stop))
    started = time.perf_counter()
    runs = await asyncio.gather(
        *(loop.run_in_executor(executor, search, k, args.seconds, args.blocks) for k in range(args.jobs))
    )
    elapsed = time.perf_counter() - started
    stop.set()
    late = sorted(await watcher)
    return {
        "generations_per_second": round(sum(g for g, _ in runs) / elapsed, 1),
        "cores_busy": round(sum(cpu for _, cpu in runs) / elapsed, 2),
        "loop_late_p50_ms": round(1000 * late[len(late) // 2], 3),
        "loop_late_p99_ms": round(1000 * late[int(0.99 * len(late))], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="searches at once (default 2)")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each search (default 5)")
    parser.add_argument("--blocks", type=int, default=150, help="blocks of the problem (default 150)")
    args = parser.parse_args()
    _one_kernel_thread()  # one kernel thread per search in both pools: same work, fair comparison
    results = {}
    search(0, 0.2, 30)
    baseline_started = time.perf_counter()
    generations, cpu = search(0, args.seconds, args.blocks)
    elapsed = time.perf_counter() - baseline_started
    results["one search alone"] = {
        "generations_per_second": round(generations / elapsed, 1),
        "cores_busy": round(cpu / elapsed, 2),
    }
    with ThreadPoolExecutor(args.jobs) as threads:
        results["threads"] = asyncio.run(_measure(threads, args))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=context, initializer=_one_kernel_thread) as processes:
        results["processes"] = asyncio.run(_measure(processes, args))
    results["machine"] = {"cores": os.cpu_count(), "load_average": round(os.getloadavg()[0], 2)}
    print(json.dumps(results, indent=2))
    alone = results["one search alone"]
    rows = [["one search, no pool", 1, f"{alone['generations_per_second']:,}", alone["cores_busy"], ""]]
    for mode in ("threads", "processes"):
        r = results[mode]
        lateness = f"{r['loop_late_p50_ms']} / {r['loop_late_p99_ms']}"
        rows.append([mode, args.jobs, f"{r['generations_per_second']:,}", r["cores_busy"], lateness])
    print(markdown_table(HEADER, rows))
    command = f"python -m experiments.service_workers --jobs {args.jobs} --seconds {args.seconds:g}"
    command += f" --blocks {args.blocks}"
    title = "The service's searches in threads or in processes"
    write_results("service-workers", title, HEADER, rows, command, NOTES)


HEADER = [
    "pool",
    "searches",
    "generations/s, all searches",
    "cores kept busy",
    "loop wake-up lateness p50 / p99 (ms)",
]
NOTES = """\
An asyncio loop in the main thread wakes every millisecond meanwhile; its
lateness is what the HTTP server would add to every request. Cores kept busy:
CPU seconds of the searching threads per second. Each search is the GA alone
(`exact_share=0`), so generations count the same work in every row."""


if __name__ == "__main__":
    main()
