"""Decoder throughput: first-fit decodes per second through the population call.

    python -m experiments.bench_decoder [--benchmarks ../shared/benchmarks] [--seconds 3]

Per input, random orders and *normalized* ones (sorted by the offsets they
decode to, as the GA's individuals are): the compiled decoder on 1 thread (per
core) and on every core, and the same decoding written in plain numpy across
the population. Medians of 5 timed rounds of ``--seconds`` / 5 each.

On one thread the rate is given twice: per wall-clock second, and per second
of the process's CPU time. The second leaves out the time the hypervisor gave
the core to other guests (20-30 % steal on the shared 2-core machine), so it is
the decoder's own rate per core; the wall-clock rate is what a user saw then.
Its best round is given as well: as with ``timeit``, the fastest round is the
one the machine's other guests disturbed least (the speed of this shared
machine moves by 30 % within an hour).

With the ``compare`` extra installed, omnimalloc's C++ first-fit placer (the
GA issue's reference, one call per order from Python) is timed too, its rounds
taking turns with ours on one thread; the ratio of the two in
the same rounds is the figure this machine's speed does not move.

The table is printed and written to ``docs/results/decoder.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from experiments.common import benchmarks_root, markdown_table
from experiments.comparators import omnimalloc_first_fit
from experiments.report import write_results
from gaplanner import Problem, load_problem, native
from gaplanner.search.decoder import Decoder

#: Timed rounds per figure: the median is reported, and for one thread per CPU second the best too.
ROUNDS = 5
INPUTS = ["minimalloc/K.1048576.csv", "minimalloc/J.1048576.csv", "large/somas_tensors_pangu_2.6B.csv"]


def random_orders(problem: Problem, seed: int = 0) -> np.ndarray:
    """Random orders to time: 64, or two per core on a large input (a decode takes a second there)."""
    rng = np.random.default_rng(seed)
    count = 64 if problem.n < 2000 else 2 * native.usable_cores()
    return np.array([rng.permutation(problem.n) for _ in range(count)])


def decode_rates(
    decoder: Decoder | None,
    orders: np.ndarray,
    seconds: float,
    decode: Callable | None = None,
    clock: Callable[[], float] = time.perf_counter,
    rounds: int = ROUNDS,
) -> list[float]:
    """Decodes per second in each of ``rounds`` rounds of ``seconds / rounds``.

    ``decode``: a population decode other than ``decoder``'s.
    """
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
    decoder. Kept here only to measure against the compiled decoder.
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


#: Columns of :func:`rate_cells`, after the input's name, size and kind of orders.
RATE_HEADER = [
    "numpy decodes/s",
    "decodes/s 1 core",
    "1 core, per CPU-second",
    "1 core, per CPU-second, best round",
    "C++ first-fit (omnimalloc), per CPU-second",
    "ours / C++, same rounds",
    f"{native.usable_cores()} cores",
    "decode time from lifetimes / from pairs, same rounds",
]


def paired_cpu_rates(
    decodes: dict[str, Callable[[np.ndarray], object]],
    orders: np.ndarray,
    seconds: float,
    rounds: int = ROUNDS,
) -> dict[str, list[float]]:
    """Decodes per CPU second of each decoder in ``rounds`` rounds, taking turns round by round.

    The ``i``-th rounds of all of them fall in the same stretch of the shared
    machine's speed, so the ratio within a round moves far less than the rates.
    """
    rates: dict[str, list[float]] = {name: [] for name in decodes}
    for _ in range(rounds):
        for name, decode in decodes.items():
            rates[name] += decode_rates(None, orders, seconds / rounds, decode, time.process_time, rounds=1)
    return rates


def rate_cells(
    decoder: Decoder,
    orders: np.ndarray,
    seconds: float,
    numpy_decode: Callable | None = None,
    reference: Callable | None = None,
    lifetimes: Callable | None = None,
) -> list[str]:
    """One row's figures (:data:`RATE_HEADER`); ``-`` where a decoder is missing.

    ``lifetimes``: the interval decoder's population decode, when ``decoder`` reads pairs.
    """

    def rate(value: float) -> str:
        return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"

    with native.limited_threads(1):
        one = decodes_per_second(decoder, orders, seconds)
        contenders = {"ours": decoder.decode_population} | ({"C++": reference} if reference else {})
        contenders |= {"lifetimes": lifetimes} if lifetimes else {}
        cpu = paired_cpu_rates(contenders, orders, seconds)
    every = decodes_per_second(decoder, orders, seconds)
    plain = rate(decodes_per_second(decoder, orders, seconds, numpy_decode)) if numpy_decode else "-"
    cpp, ratio = "-", "-"
    if reference:
        cpp = rate(statistics.median(cpu["C++"]))
        ratio = f"{statistics.median(np.divide(cpu['ours'], cpu['C++'])):.2f}x"
    cpu_median, cpu_best = rate(statistics.median(cpu["ours"])), rate(max(cpu["ours"]))
    versus = "-"
    if lifetimes:  # how many times a pair-list decode the lifetime decode takes
        versus = f"{statistics.median(np.divide(cpu['ours'], cpu['lifetimes'])):.2f}x"
    return [plain, rate(one), cpu_median, cpu_best, cpp, ratio, rate(every), versus]


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
    rows = []
    for name in args.inputs:
        problem = load_problem(root / name)
        decoder = Decoder.for_problem(problem)
        random = random_orders(problem)
        _, offsets = decoder.decode_population(random)
        ranks = np.argsort(np.take_along_axis(offsets, random, 1), axis=1, kind="stable")
        normalized = np.take_along_axis(random, ranks, 1)
        numpy_decode = numpy_first_fit(problem) if problem.n < 2000 else None
        reference = omnimalloc_first_fit(problem)
        lifetimes = None
        if problem.interval_conflicts and decoder.intervals is None:
            lifetimes = Decoder.for_problem(problem, population=False).decode_population
        if lifetimes is not None:
            assert np.array_equal(lifetimes(random[:2])[1], decoder.decode_population(random[:2])[1])
        for check in (numpy_decode, reference):
            if check is not None:
                assert np.array_equal(check(random[:2]), decoder.decode_population(random[:2])[0])
        for label, orders in (("random", random), ("normalized", normalized)):
            cells = rate_cells(decoder, orders, args.seconds, numpy_decode, reference, lifetimes)
            rows.append([problem.name, problem.n, label, *cells])
    header = ["input", "blocks", "orders", *RATE_HEADER]
    print(markdown_table(header, rows))
    inputs = " ".join(args.inputs)
    command = f"python -m experiments.bench_decoder --seconds {args.seconds:g} --inputs {inputs}"
    write_results("decoder", "Decoder throughput: first-fit decodes per second", header, rows, command, NOTES)
    return 0


NOTES = """\
Random orders and *normalized* ones (sorted by the offsets they decode to, as
the GA's individuals are). One thread: per wall-clock second, per second of
CPU time (which leaves out time the hypervisor gave the core to other guests),
and the best of the rounds. The C++ first-fit placer is omnimalloc 1.0's
(`FirstFitPlacer.peak`, one call per order), timed in rounds that take turns
with ours; the ratio of the two in the same rounds is the figure the machine's
speed moves least. The numpy column is the same decoding written with numpy
across the population. The last column compares, in the same rounds, the
decoder that finds neighbours from the lifetimes (no pair list; what interval
problems whose padded pair lists pass 2**25 entries, and every single-order
decode, use) with the pair-list decoder the row's problem gets."""


if __name__ == "__main__":
    sys.exit(main())
