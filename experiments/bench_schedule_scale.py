"""Order search at scale: NASNet-like cell graphs of 1,000 to 65,000 operators, built here.

Each cell reads the two previous cells' outputs, runs ``branches`` chains of
separable-convolution-like operators (a wide intermediate, then the cell's
width), adds them in pairs and concatenates the sums: the irregular wiring of
NASNet, listed by depth from the input as Keras runs it. Writes
``docs/results/schedule_scale.md``: per graph, the given order's bound, the best
starting order's, the chosen order's, the order-free bound and its origin, and
the search's wall time.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

import numpy as np

from experiments.report import write_results
from gaplanner.documents.schema import Document, parse_document
from gaplanner.schedule import ScheduleSettings, search_schedule


def cell_graph(cells: int, branches: int = 5, seed: int = 0) -> Document:
    """``cells`` NASNet-like cells; the operators listed by depth from the input (Keras's order)."""
    rng = np.random.default_rng(seed)
    unit = 64 * 64 * 4
    tensors: dict[str, int] = {"input": 32 * unit}
    operators: list[dict] = []
    depth = {"input": 0}

    def op(name: str, inputs: list[str], size: int) -> str:
        tensors[name] = size
        operators.append({"id": name, "inputs": inputs, "outputs": [name]})
        depth[name] = 1 + max(depth[i] for i in inputs)
        return name

    prev, cur = "input", op("stem", ["input"], 32 * unit)
    for c in range(cells):
        width = int(rng.choice([16, 32, 48])) * unit
        ends = []
        for b in range(branches):
            source = cur if rng.random() < 0.6 else prev
            wide = op(f"c{c}_b{b}_expand", [source], 4 * width)
            ends.append(op(f"c{c}_b{b}_project", [wide], width))
        sums = [op(f"c{c}_add{i}", ends[i : i + 2], width) for i in range(0, branches - 1, 2)]
        prev, cur = cur, op(f"c{c}_concat", sums + ends[len(sums) * 2 :], width * (len(sums) + 1))
    ordered = [o for _, _, o in sorted((depth[o["id"]], k, o) for k, o in enumerate(operators))]
    return parse_document(
        {"tensors": [{"id": t, "size": s} for t, s in tensors.items()], "operators": ordered}
    )


HEADER = [
    "graph", "operators", "given bound (MB)", "best starting order", "chosen", "order-free bound",
    "chosen / order-free", "origin", "search s",
]  # fmt: skip


def measure(cells: int, time_limit: float, large_time_limit: float) -> list[object]:
    doc = cell_graph(cells)
    if len(doc.operators or []) > 10_000:
        time_limit = large_time_limit
    began = time.perf_counter()
    result = search_schedule(doc, settings=ScheduleSettings(time_limit=time_limit, evaluations=10**9))
    seconds = time.perf_counter() - began
    given = result.given_bound
    best_start = min(result.baselines.values())
    return [
        f"cells{cells}", len(doc.operators or []), f"{given / 2**20:.2f}", f"{best_start / given:.3f}",
        f"{result.chosen_bound / given:.3f}", f"{result.order_free_bound / given:.3f}",
        f"{result.chosen_bound / result.order_free_bound:.3f}", result.bound_origin.split(" (")[0],
        f"{seconds:.1f}",
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[60, 400, 5000])
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per graph to 10k operators")
    parser.add_argument("--large-time-limit", type=float, default=60.0, help="seconds per larger graph")
    args = parser.parse_args(argv)
    rows = []
    for cells in args.cells:
        rows.append(measure(cells, args.time_limit, args.large_time_limit))
        print("  ".join(str(c) for c in rows[-1]), flush=True)
    command = "python -m experiments.bench_schedule_scale " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    write_results(
        "schedule_scale",
        "Order search at scale: NASNet-like cell graphs",
        HEADER,
        rows,
        command.strip(),
        notes="Fractions are of the given order's bound (operators listed by depth, as Keras runs them). "
        "*search s*: `search_schedule`'s wall time (starting orders, bounds and the search) with "
        "`time_limit` the given seconds (the larger one beyond 10,000 operators).",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
