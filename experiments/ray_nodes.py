"""Islands on one Ray node or on two: evaluations per second, and where the batch runner's cells ran.

    python -m experiments.ray_nodes [--seconds 40] [--blocks 150,600] [--cells 8] [--cell-seconds 4]

A real two-node Ray cluster on this machine (:func:`experiments.faults_ray.two_hosts`:
two network namespaces joined by a veth pair), each node given one CPU
(``ray start --num-cpus 1``) and its processes held to a core of their own
(``taskset``), so each node is a one-core machine:

1. **one node**: the head alone; ``gaplanner plan --ray-address ... --workers 1`` (one worker does not
   pay for Ray, so the search runs in the ``gaplanner`` process itself, on the head's core);
2. **two nodes**: the second node joined; ``--workers 2``; the same problem, seed and seconds;
3. **two separate searches**: ``--workers 1`` twice at once, one on each node's core, sharing
   nothing: the most the two cores give together, which islands on two nodes can at best match.

The ``gaplanner`` process of the first two runs is on the head's core.

The runs are the island GA alone (``--no-exact``) on problems of ``--blocks``
blocks whose bound it cannot reach, for ``--seconds``: at 150 blocks a unit (an
island's ten generations between migrations) takes about as long as a few of
Ray's round trips, so the driver's work per unit shows; at 600 a unit is about
ten times longer. Evaluations per second are the
search's own, from its trace: from the first record after the workers are up to
the last, so Ray's start-up is left out. Then the batch runner
(``python -m experiments.run``) plans ``--cells`` GA cells of ``--cell-seconds``
(the same problem, a seed each, so each cell runs its whole budget) on the two
nodes; each row names the node that ran it, and the seconds each node spent on
cells show how evenly they were spread.

Root only (``ip netns``); on a machine of 2 cores the figure means something
only when nothing else runs. The table goes to ``docs/results/ray-nodes.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from experiments.faults_ray import (
    HEAD_IP,
    PORT,
    Hosts,
    RaySettings,
    join_node,
    runner_rows,
    start_head,
    two_hosts,
    why_not,
)
from experiments.report import write_results
from service.testing import check_plan, unreachable_bound_document

CELLS_CONFIG = """\
inputs = ["{source}"]
seeds = {seeds}
time_budgets = [{budget}]

[[algorithms]]
name = "ga"
stall_generations = 1000000
"""


def _plan_argv(source: Path, output: Path, core: int, seconds: float, *options: str) -> list[str]:
    return [
        "taskset", "-c", str(core), sys.executable, "-m", "gaplanner.cli", "plan", str(source), *options,
        "--time-limit", str(seconds), "--stall-generations", "1000000", "--seed", "1", "--no-exact",
        "--quiet", "-o", str(output),
    ]  # fmt: skip


def _input(hosts: Hosts, blocks: int) -> tuple[dict, Path]:
    document = unreachable_bound_document(blocks, seed=3)
    source = hosts.workdir / f"input{blocks}.json"
    source.write_text(json.dumps(document))
    return document, source


def _rate(document: dict, output: Path) -> dict[str, Any]:
    """A plan's evaluations per second from its trace, after its first record (the workers up)."""
    plan = json.loads(output.read_text())
    check_plan(document, plan)  # raises if the plan does not verify
    if len(plan["trace"]) < 3:
        raise RuntimeError(f"{output.name}: too few generations to measure ({plan['stop_reason']})")
    first, last = plan["trace"][1], plan["trace"][-1]
    span = last["elapsed"] - first["elapsed"]
    return {
        "evaluations_per_second": (last["evaluations"] - first["evaluations"]) / span,
        "span_seconds": span,
        "startup_seconds": first["elapsed"],
        "peak": plan["peak"],
    }


def search_rate(hosts: Hosts, workers: int, seconds: float, blocks: int) -> dict[str, Any]:
    """``gaplanner plan`` on the cluster with ``workers`` island workers: its evaluations per second."""
    document, source = _input(hosts, blocks)
    output = hosts.workdir / f"plan{blocks}-{workers}.json"
    ray = ("--workers", str(workers), "--ray-address", f"{HEAD_IP}:{PORT}")
    hosts.run(hosts.head, *_plan_argv(source, output, 0, seconds, *ray), timeout=seconds + 300)
    return _rate(document, output)


def separate_rate(hosts: Hosts, seconds: float, blocks: int) -> dict[str, Any]:
    """Two searches at once, no Ray, one on each node's core: what the two cores give work that
    never talks (the ceiling for the islands on two nodes), evaluations per second summed."""
    document, source = _input(hosts, blocks)
    outputs = [hosts.workdir / f"separate{blocks}-{core}.json" for core in (0, 1)]
    runs = [
        hosts.start(
            namespace,
            *_plan_argv(source, output, core, seconds, "--workers", "1"),
            log=output.with_suffix(".log"),
        )
        for namespace, output, core in ((hosts.head, outputs[0], 0), (hosts.node, outputs[1], 1))
    ]
    for run in runs:
        if run.wait(timeout=seconds + 300) != 0:
            raise RuntimeError(f"a separate search failed: see {hosts.workdir}")
    rates = [_rate(document, output) for output in outputs]
    return {
        "evaluations_per_second": sum(r["evaluations_per_second"] for r in rates),
        "span_seconds": min(r["span_seconds"] for r in rates),
        "startup_seconds": max(r["startup_seconds"] for r in rates),
        "peak": min(r["peak"] for r in rates),
    }


def cells_per_node(hosts: Hosts, cells: int, cell_seconds: float) -> dict[str, list[float]]:
    """The batch runner's ``cells`` GA cells on the cluster: per node, how many it ran and their seconds."""
    config, source = hosts.workdir / "cells.toml", hosts.workdir / "input.json"
    source.write_text(json.dumps(unreachable_bound_document(150, seed=3)))
    config.write_text(CELLS_CONFIG.format(source=source, seeds=list(range(cells)), budget=cell_seconds))
    results = hosts.workdir / "cells.csv"
    argv = [sys.executable, "-m", "experiments.run", str(config), "--results", str(results)]
    hosts.run(hosts.head, *argv, "--ray-address", f"{HEAD_IP}:{PORT}", timeout=cells * cell_seconds + 300)
    spread: dict[str, list[float]] = {}
    for row in runner_rows(results):
        node = spread.setdefault(row["host"].rpartition("/")[2] or "?", [0, 0.0])
        node[0] += 1
        node[1] += float(row["load_seconds"]) + float(row["seconds"])
    return spread


def measure(seconds: float, sizes: list[int], cells: int, cell_seconds: float) -> dict[str, Any]:
    """Both rates and the cells' spread on a fresh cluster; {"skipped": reason} where it cannot run."""
    reason = why_not()
    if reason:
        return {"skipped": reason}
    settings = RaySettings(startup_seconds=240.0)
    workdir = Path(tempfile.mkdtemp(prefix="grn", dir="/tmp"))  # Ray's socket paths must stay short
    try:
        with two_hosts(workdir) as hosts:
            start_head(hosts, settings, core=0)
            one = {blocks: search_rate(hosts, 1, seconds, blocks) for blocks in sizes}
            join_node(hosts, settings, core=1)
            two = {blocks: search_rate(hosts, 2, seconds, blocks) for blocks in sizes}
            separate = {blocks: separate_rate(hosts, seconds, blocks) for blocks in sizes}
            spread = cells_per_node(hosts, cells, cell_seconds)
            return {
                "one node": one, "two nodes": two, "two separate searches": separate, "cells": spread,
                "load": os.getloadavg()[0],
            }  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


HEADER = [
    "blocks", "run", "evaluations/s", "vs one node", "vs two separate searches", "seconds measured",
    "start-up s",
]  # fmt: skip
RUNS = {
    "one node": "one node, the search in-process",
    "two nodes": "two nodes, 2 island workers on Ray",
    "two separate searches": "two separate searches at once, one per core, no Ray",
}


def table_rows(result: dict[str, Any], sizes: list[int]) -> list[list[Any]]:
    rows = []
    for blocks in sizes:
        one, ceiling = (
            result[run][blocks]["evaluations_per_second"] for run in ("one node", "two separate searches")
        )
        for run, label in RUNS.items():
            r = result[run][blocks]
            rate = r["evaluations_per_second"]
            rows.append([
                blocks, label, f"{rate:,.0f}", f"{rate / one:.2f}", f"{rate / ceiling:.2f}",
                f"{r['span_seconds']:.1f}", f"{r['startup_seconds']:.1f}",
            ])  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=40.0, help="each search's time limit")
    parser.add_argument("--blocks", default="150,600", help="the problems' sizes, comma-separated")
    parser.add_argument("--cells", type=int, default=8, help="batch runner cells")
    parser.add_argument("--cell-seconds", type=float, default=4.0)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    sizes = [int(blocks) for blocks in args.blocks.split(",")]
    result = measure(args.seconds, sizes, args.cells, args.cell_seconds)
    print(json.dumps(result, indent=2))
    if "skipped" in result:
        print(f"skipped: {result['skipped']}", file=sys.stderr)
        return 0
    rows = table_rows(result, sizes)
    cells = sorted(result["cells"].items())
    spread = ", ".join(f"{node}: {n} ({seconds:.0f} s)" for node, (n, seconds) in cells)
    notes = (
        "Two network namespaces on one 2-core machine, each node `--num-cpus 1` and pinned to its own core,"
        " the `gaplanner plan` process on the head's core (with one worker it searches in-process);"
        f" the island GA alone on problems of {args.blocks} blocks (unreachable bounds), seed 1,"
        f" `--time-limit {args.seconds:g}`."
        " Evaluations per second from the search's trace after the workers were up (the separate"
        " searches' summed). The separate searches share nothing, so they show what the two cores"
        " give at once: on a machine whose cores slow each other down that is less than twice one,"
        " and islands spread over the two nodes can at best match it."
        f" Batch runner: {args.cells} cells of {args.cell_seconds:g} s ran {spread}"
        f" (cells per node address, and the seconds they took)."
        f" Load average (1 min) {load_before:.1f} before, {result['load']:.1f} after."
    )
    command = f"python -m experiments.ray_nodes --seconds {args.seconds:g} --blocks {args.blocks}"
    command += f" --cells {args.cells}"
    command += f" --cell-seconds {args.cell_seconds:g}"
    write_results("ray-nodes", "Islands on one Ray node or two", HEADER, rows, command, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
