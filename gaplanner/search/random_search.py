"""First-fit with random search: the GA's simplest rival.

Uniformly random allocation orders, drawn in batches from one seeded
``numpy`` Generator and decoded by first-fit placement in one vectorized call
per batch (:meth:`gaplanner.search.decoder.Decoder.decode_population`); the best
plan seen so far is kept. No heuristic start, no selection, no recombination:
what the GA gains over this is what its search contributes.

The result carries the same convergence trace as the GA (``plan.trace``: one
record per batch), so the two plot on the same axes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from gaplanner.deadline import Deadline
from gaplanner.errors import InputError
from gaplanner.plans.plan import GenerationRecord, Plan, SearchStats, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.decoder import Decoder
from gaplanner.search.ga.budget import kept_reason
from gaplanner.search.starting_plans import decode_estimate, first_plan

#: One random order's decode takes up to this many times :func:`decode_estimate` (a first-fit decode
#: in time order) on the large inputs under load: out of time order, it reads memory out of order.
RANDOM_ORDER_FACTOR = 2.5
#: Why random search ends before its first batch (the cheapest starting plan kept).
NO_RANDOM_ORDER_FITS = "time limit: no random order fits the budget"


@dataclass(frozen=True)
class RandomSearchSettings:
    """When random search stops: after ``evaluations`` decoded orders, ``time_limit`` seconds, or
    (unless ``stop_at_lower_bound`` is false) at a plan that meets the lower bound."""

    evaluations: int | None = 1000
    time_limit: float | None = None
    batch: int = 48
    seed: int = 0
    stop_at_lower_bound: bool = True

    def __post_init__(self) -> None:
        """Refuse settings no search can run with; the error names the field."""
        if self.evaluations is None and self.time_limit is None:
            raise InputError("give evaluations or time_limit")
        if self.evaluations is not None and self.evaluations < 1:
            raise InputError(f"must be at least 1, got {self.evaluations}", "evaluations")
        if self.time_limit is not None and not (math.isfinite(self.time_limit) and self.time_limit > 0):
            raise InputError(f"must be a positive number of seconds, got {self.time_limit}", "time_limit")
        if self.batch < 1:
            raise InputError(f"must be at least 1, got {self.batch}", "batch")
        if self.seed < 0:
            raise InputError(f"must be at least 0, got {self.seed}", "seed")


def random_orders(n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` independent uniformly random permutations of ``range(n)``, one per row."""
    return rng.permuted(np.tile(np.arange(n, dtype=np.int64), (count, 1)), axis=1)


def random_search(
    problem: Problem, settings: RandomSearchSettings | None = None, deadline: Deadline | None = None
) -> Plan:
    """The best first-fit plan over random allocation orders; a verified plan with its trace.

    The last batch is cut to fit the evaluation limit; the clock is checked
    between batches. The same seed gives the same plan and the same trace of peaks.
    ``deadline``: the run's (default: the time limit from now); a batch is cut to the orders that fit
    the time left (by an estimate, then by the last batch's pace; the plan's verification kept back),
    at least one: a batch of decodes of a million blocks takes minutes. When not even one random
    order's estimated decode fits, the plan is the cheapest starting plan's (as the GA's when no
    generation fits), stopped for the time limit.
    """
    s = settings or RandomSearchSettings()
    started = time.perf_counter()
    deadline = (deadline or Deadline(s.time_limit)).keeping(verify_seconds(problem))
    per_order = RANDOM_ORDER_FACTOR * decode_estimate(problem)
    if not deadline.fits(per_order):
        return _first_plan_kept(problem, s, started, deadline)
    deadline.stage("random search")
    rng = np.random.default_rng(s.seed)
    decoder = Decoder.for_problem(problem)
    best_peak = np.iinfo(np.int64).max
    best_offsets = np.zeros(problem.n, np.int64)
    done = 0
    trace: list[GenerationRecord] = []
    stop_reason = ""
    while not stop_reason:
        count = s.batch if s.evaluations is None else min(s.batch, s.evaluations - done)
        if deadline.limit is not None:
            count = max(1, min(count, int(deadline.left() / max(per_order, 1e-9))))
        began = time.perf_counter()
        peaks, offsets = decoder.decode_population(random_orders(problem.n, count, rng))
        per_order = (time.perf_counter() - began) / count
        done += count
        k = int(np.argmin(peaks))
        if peaks[k] < best_peak:
            best_peak, best_offsets = int(peaks[k]), offsets[k].copy()
        elapsed = time.perf_counter() - started
        trace.append(GenerationRecord(len(trace), best_peak, float(peaks.mean()), done, elapsed))
        if s.stop_at_lower_bound and best_peak <= problem.lower_bound:
            stop_reason = "lower bound reached"
        elif s.evaluations is not None and done >= s.evaluations:
            stop_reason = "evaluation limit"
        elif deadline.limit is not None and deadline.left() < per_order:
            stop_reason = "time limit"
    return make_plan(
        problem,
        best_offsets,
        "random-search",
        started,
        stop_reason=stop_reason,
        trace=trace,
        search=SearchStats(generations=len(trace), evaluations=done, seed=s.seed),
    )


def _first_plan_kept(
    problem: Problem, settings: RandomSearchSettings, started: float, deadline: Deadline
) -> Plan:
    """The cheapest starting plan as random search's, when no random order fits the time left: its
    trace is that one plan, as batch 0."""
    first = first_plan(problem, deadline)
    record = GenerationRecord(0, first.peak, float(first.peak), 1, time.perf_counter() - started)
    return make_plan(
        problem,
        first.offsets,
        "random-search",
        started,
        stop_reason=kept_reason(NO_RANDOM_ORDER_FITS, first.algorithm),
        trace=[record],
        search=SearchStats(generations=0, evaluations=1, seed=settings.seed),
        verified_by=first,
    )
