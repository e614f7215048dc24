"""First-fit with random search: the GA's simplest rival (seed 003, Figure 10b).

Uniformly random allocation orders, drawn in batches from one seeded
``numpy`` Generator and decoded by first-fit placement in one vectorized call
per batch (:meth:`gaplanner.placement.Decoder.decode_population`); the best
plan seen so far is kept. No heuristic start, no selection, no recombination:
what the GA gains over this is what its search contributes.

The result carries the same convergence trace as the GA
(``plan.details["trace"]``: one entry per batch with ``generation``,
``best_peak``, ``mean_peak`` of the batch, ``evaluations`` so far and
``elapsed`` seconds), so the two plot on the same axes.
"""

from __future__ import annotations

import math
import time

import numpy as np

from gaplanner.errors import InputError
from gaplanner.placement import Decoder
from gaplanner.plan import Plan, make_plan
from gaplanner.problem import Problem


def random_orders(n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` independent uniformly random permutations of ``range(n)``, one per row."""
    return rng.permuted(np.tile(np.arange(n, dtype=np.int64), (count, 1)), axis=1)


def random_search(
    problem: Problem,
    evaluations: int | None = 1000,
    *,
    time_limit: float | None = None,
    batch: int = 48,
    seed: int = 0,
    stop_at_lower_bound: bool = True,
) -> Plan:
    """The best first-fit plan over random allocation orders; a verified plan with its trace.

    Stops after ``evaluations`` decoded orders (the last batch is cut to fit),
    after ``time_limit`` seconds (checked between batches), or, unless
    ``stop_at_lower_bound`` is false, as soon as a plan meets the lower bound.
    The same ``seed`` gives the same plan and the same trace of peaks.
    """
    if evaluations is None and time_limit is None:
        raise InputError("give evaluations or time_limit")
    if evaluations is not None and evaluations < 1:
        raise InputError(f"must be at least 1, got {evaluations}", "evaluations")
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise InputError(f"must be a positive number of seconds, got {time_limit}", "time_limit")
    if batch < 1:
        raise InputError(f"must be at least 1, got {batch}", "batch")
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    decoder = Decoder.for_problem(problem)
    best_peak = np.iinfo(np.int64).max
    best_offsets = np.zeros(problem.n, np.int64)
    done = 0
    trace: list[dict[str, float | int]] = []
    stop_reason = ""
    while not stop_reason:
        count = batch if evaluations is None else min(batch, evaluations - done)
        peaks, offsets = decoder.decode_population(random_orders(problem.n, count, rng))
        done += count
        k = int(np.argmin(peaks))
        if peaks[k] < best_peak:
            best_peak, best_offsets = int(peaks[k]), offsets[k].copy()
        elapsed = time.perf_counter() - started
        trace.append(
            {
                "generation": len(trace),
                "best_peak": best_peak,
                "mean_peak": float(peaks.mean()),
                "evaluations": done,
                "elapsed": elapsed,
            }
        )
        if stop_at_lower_bound and best_peak <= problem.lower_bound:
            stop_reason = "lower bound reached"
        elif evaluations is not None and done >= evaluations:
            stop_reason = "evaluation limit"
        elif time_limit is not None and elapsed >= time_limit:
            stop_reason = "time limit"
    return make_plan(
        problem,
        best_offsets,
        "random-search",
        started,
        evaluations=done,
        batches=len(trace),
        stop_reason=stop_reason,
        seed=seed,
        trace=trace,
    )
