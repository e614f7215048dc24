"""Decoder throughput: first-fit decodes per second through the population call.

    python -m experiments.bench_decoder [--benchmarks ../shared/benchmarks] [--seconds 3]

Per input, random orders and *normalized* ones (sorted by the offsets they
decode to, as the GA's individuals are): the numba decoder on 1 thread (per
core) and on every core, and the same decoding written in plain numpy across
the population. Medians of 5 timed rounds of ``--seconds`` / 5 each.

On one thread the rate is given twice: per wall-clock second, and per second
of the process's CPU time. The second leaves out the time the hypervisor gave
the core to other guests (20-30 % steal on the shared 2-core machine), so it is
the decoder's own rate per core; the wall-clock rate is what a user saw then.
Its best round is given as well: as with ``timeit``, the fastest round is the
one the machine's other guests disturbed least (the speed of this shared
machine moves by 30 % within an hour).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numba
import numpy as np

from experiments.common import benchmarks_root, markdown_table
from gaplanner import Problem, load_problem
from gaplanner.placement import Decoder

#: Timed rounds per figure: the median is reported, and for one thread per CPU second the best too.
ROUNDS = 5
INPUTS = ["minimalloc/K.1048576.csv", "minimalloc/J.1048576.csv", "large/somas_tensors_pangu_2.6B.csv"]


def decode_rates(
    decoder: Decoder,
    orders: np.ndarray,
    seconds: float,
    decode: Callable | None = None,
    clock: Callable[[], float] = time.perf_counter,
    rounds: int = ROUNDS,
) -> list[float]:
    """Decodes per second in each of ``rounds`` rounds of ``seconds / rounds``."""
    decode = decode or decoder.decode_population
    rates = []
    for _ in range(rounds):
        started, done = clock(), 0
        while clock() - started < seconds / rounds:
            decode(orders)
            done += len(orders)
        rates.append(done / (clock() - started))
    return rates


def decodes_per_second(
    decoder: Decoder,
    orders: np.ndarray,
    seconds: float,
    decode: Callable | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """The median round's rate (see :func:`decode_rates`)."""
    return statistics.median(decode_rates(decoder, orders, seconds, decode, clock))


def numpy_first_fit(problem: Problem) -> Callable[[np.ndarray], np.ndarray]:
    """The same first-fit decoding written with numpy across the population (no JIT).

    Position by position, every individual places its block at once: neighbour
    lists padded to the maximum degree, the same max-jump rule as the compiled
    decoder. Kept here only to measure against the numba decoder.
    """
    degrees = problem.conflicts.degrees()
    width = max(1, int(degrees.max(initial=0)))
    neighbours = np.full((problem.n, width), problem.n, np.int64)  # n: a never-placed sentinel
    for b in range(problem.n):
        neighbours[b, : degrees[b]] = problem.conflicts.neighbors(b)

    def decode(orders: np.ndarray) -> np.ndarray:
        population = len(orders)
        starts = np.full((population, problem.n + 1), -1, np.int64)
        ends = np.full((population, problem.n + 1), -1, np.int64)
        rows = np.arange(population)[:, None]
        for k in range(problem.n):
            blocks = orders[:, k]
            size = problem.sizes[blocks][:, None]
            s, e = starts[rows, neighbours[blocks]], ends[rows, neighbours[blocks]]
            candidate = np.zeros((population, 1), np.int64)
            while True:
                hit = (s >= 0) & (s < candidate + size) & (e > candidate)
                top = np.maximum(candidate, np.where(hit, e, 0).max(axis=1, keepdims=True))
                if np.array_equal(top, candidate):
                    break
                candidate = top
            starts[rows[:, 0], blocks] = candidate[:, 0]
            ends[rows[:, 0], blocks] = candidate[:, 0] + size[:, 0]
        return ends[:, :-1].max(axis=1)

    return decode


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
        numpy_decode = numpy_first_fit(problem) if problem.n < 2000 else None
        if numpy_decode is not None:
            assert np.array_equal(numpy_decode(random[:2]), decoder.decode_population(random[:2])[0])
        for label, orders in (("random", random), ("normalized", normalized)):
            numba.set_num_threads(1)
            one = decodes_per_second(decoder, orders, args.seconds)
            cpu_rates = decode_rates(decoder, orders, args.seconds, clock=time.process_time)
            numba.set_num_threads(cores)
            every = decodes_per_second(decoder, orders, args.seconds)
            plain = "-"
            if numpy_decode is not None:
                plain = f"{decodes_per_second(decoder, orders, args.seconds, numpy_decode):,.0f}"
            cpu = f"{statistics.median(cpu_rates):,.0f}", f"{max(cpu_rates):,.0f}"
            rows.append([problem.name, problem.n, label, plain, f"{one:,.0f}", *cpu, f"{every:,.0f}"])
    header = [
        "input",
        "blocks",
        "orders",
        "numpy decodes/s",
        "numba decodes/s 1 core",
        "1 core, per CPU-second",
        "1 core, per CPU-second, best round",
        f"numba {cores} cores",
    ]
    print(markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
