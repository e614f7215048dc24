"""Decoder throughput: first-fit decodes per second through the population call.

    python -m experiments.bench_decoder [--benchmarks ../shared/benchmarks] [--seconds 3]

Per input, random orders and *normalized* ones (sorted by the offsets they
decode to, as the GA's individuals are), on 1 thread (per core) and on every
core. Medians of 3 timed rounds of ``--seconds`` / 3 each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numba
import numpy as np

from experiments.common import benchmarks_root, markdown_table
from gaplanner import load_problem
from gaplanner.placement import Decoder

INPUTS = ["minimalloc/K.1048576.csv", "minimalloc/J.1048576.csv", "large/somas_tensors_pangu_2.6B.csv"]


def decodes_per_second(decoder: Decoder, orders: np.ndarray, seconds: float) -> float:
    rates = []
    for _ in range(3):
        started, done = time.perf_counter(), 0
        while time.perf_counter() - started < seconds / 3:
            decoder.decode_population(orders)
            done += len(orders)
        rates.append(done / (time.perf_counter() - started))
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--benchmarks")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--inputs", nargs="+", default=INPUTS)
    args = parser.parse_args(argv)
    root = benchmarks_root(args.benchmarks)
    if root is None:
        print("benchmark data not found: pass --benchmarks or set GAPLANNER_BENCHMARKS", file=sys.stderr)
        return 0
    cores = numba.config.NUMBA_NUM_THREADS
    rows = []
    for name in args.inputs:
        problem = load_problem(root / name)
        decoder = Decoder.for_problem(problem)
        rng = np.random.default_rng(0)
        population = 64 if problem.n < 2000 else 2 * cores
        random = np.array([rng.permutation(problem.n) for _ in range(population)])
        _, offsets = decoder.decode_population(random)
        ranks = np.argsort(np.take_along_axis(offsets, random, 1), axis=1, kind="stable")
        normalized = np.take_along_axis(random, ranks, 1)
        for label, orders in (("random", random), ("normalized", normalized)):
            numba.set_num_threads(1)
            one = decodes_per_second(decoder, orders, args.seconds)
            numba.set_num_threads(cores)
            every = decodes_per_second(decoder, orders, args.seconds)
            rows.append(
                [problem.name, problem.n, label, f"{one:,.0f}", f"{every:,.0f}", f"{every / one:.2f}"]
            )
    header = ["input", "blocks", "orders", "decodes/s 1 core", f"decodes/s {cores} cores", "speed-up"]
    print(markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
