"""The GA's main loop, in the shape of DEAP's ``algorithms.eaSimple``: step, record, stop or go on."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from gaplanner.deadline import Deadline
from gaplanner.plans.plan import GenerationRecord, Plan, SearchStats, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.ga.budget import (
    NO_GENERATION_FITS,
    Pacing,
    first_generation_seconds,
    fit_first_generation,
    fit_population_to_budget,
    kept_reason,
    nominal_seconds,
    seconds_left,
)
from gaplanner.search.ga.island import Island, address_order, heuristic_orders, make_islands, migrate
from gaplanner.search.ga.settings import GASettings
from gaplanner.search.ga.termination import StopCheck, Termination
from gaplanner.search.starting_plans import HEAVIEST_INSTANT_FIRST, OUT_OF_ORDER_FACTOR, starting_plans

#: Called with every generation's record as the search goes.
ProgressCallback = Callable[[GenerationRecord], None]


class Exchange(Protocol):
    """Another search running beside the GA, trading best plans with it once a generation."""

    def trade(self, offsets: np.ndarray, evaluations: int) -> Sequence[np.ndarray]:
        """Take the GA's best plan (offsets per block) and its evaluations so far (the work it has done);
        give back plans found since the last trade."""
        ...


def run_ga(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    seed_offsets: Sequence[np.ndarray] = (),
    exchange: Exchange | None = None,
    deadline: Deadline | None = None,
    plans: dict[str, Plan] | None = None,
) -> Plan:
    """Search allocation orders; return the best verified plan with its convergence trace.

    ``deadline``: the run's (:mod:`gaplanner.deadline`); by default the settings' time limit, counted
    from the call. Everything the search does comes out of it: the
    starting plans, the generations, and the final plan's verification, whose estimated time is kept
    back. ``plans``: the starting plans (:mod:`gaplanner.search.starting_plans`), if made already.
    ``seed_offsets``: plans (offsets per block) the population starts from, beside the starting plans.
    ``exchange``: a search beside this one; each plan it gives back replaces an island's worst.
    """
    settings = settings or GASettings()
    deadline = (deadline or Deadline(settings.time_limit)).keeping(verify_seconds(problem))
    started = time.perf_counter()
    plans = plans if plans is not None else starting_plans(problem, deadline)
    at_bound = plan_at_bound(problem, plans, settings, started)
    if at_bound is not None:
        return at_bound
    decode_seconds = plans["first-fit"].decode_seconds if "first-fit" in plans else None
    if decode_seconds is None:  # not even one decode fitted the time limit
        return _kept(problem, plans, settings, started, NO_GENERATION_FITS)
    settings = fit_population_to_budget(problem, settings, nominal_seconds(settings, deadline))
    fitted = fit_first_generation(settings, _ga_decode_seconds(plans), deadline.left())
    if fitted is None:
        return _kept(problem, plans, settings, started, NO_GENERATION_FITS)
    settings = fitted
    deadline.stage("genetic search")
    termination = Termination(settings, problem.lower_bound, should_stop, started, deadline=deadline)
    building = time.perf_counter()
    seeds = [address_order(problem, offsets) for offsets in seed_offsets]
    islands = make_islands(problem, settings, [*seeds, *heuristic_orders(problem, list(plans.values()))])
    pacing = Pacing.for_search(settings, first_generation_seconds(settings, time.perf_counter() - building))
    trade = None if exchange is None else lambda: _trade(problem, islands, exchange)
    trace, stop_reason = evolve(islands, settings, termination, pacing, started, on_progress, trade, deadline)
    deadline.stage("verification")
    return make_plan(
        problem,
        _best_offsets(islands),
        "ga",
        started,
        stop_reason=stop_reason,
        trace=trace,
        search=SearchStats(trace[-1].generation, trace[-1].evaluations, settings.seed, settings.population),
    )


def evolve(
    islands: Sequence[Island],
    settings: GASettings,
    termination: Termination,
    pacing: Pacing,
    started: float,
    on_progress: ProgressCallback | None = None,
    trade: Callable[[], None] | None = None,
    deadline: Deadline | None = None,
) -> tuple[list[GenerationRecord], str]:
    """Record, stop or step the islands, migrate; again, until a stop reason: the trace and that reason.

    The loop of every GA here, one arena's and the memories' (their islands
    differ in decoding and operators, not in the loop). ``trade``: run before
    each generation (the exchange with a search beside this one). ``deadline``: the run's, in place
    of the settings' time limit from ``started``.
    """
    trace: list[GenerationRecord] = []
    while True:
        record = generation_record(islands, len(trace), started)
        trace.append(record)
        if on_progress is not None:
            on_progress(record)
        stop_reason = termination.reason(
            record.generation, record.best_peak, record.evaluations, record.best_cost
        )
        left = seconds_left(settings, started) if deadline is None else deadline.left()
        step = pacing.next_step(None if left == math.inf else left)
        if stop_reason is None and step is None:
            stop_reason = "time limit"
        if stop_reason is not None:
            return trace, stop_reason
        if trade is not None:
            trade()
        pacing.run(step, islands)
        if len(trace) % settings.migration_interval == 0:
            migrate(list(islands), settings.migrants)


def _ga_decode_seconds(plans: dict[str, Plan]) -> float:
    """About what one of the GA's decodes costs: its orders are not in time order, so about what the
    heaviest instant's decode took where it was made, else a multiple of first-fit's decode (see
    :data:`OUT_OF_ORDER_FACTOR`)."""
    heaviest = plans.get(HEAVIEST_INSTANT_FIRST)
    if heaviest is not None and heaviest.decode_seconds is not None:
        return heaviest.decode_seconds
    return OUT_OF_ORDER_FACTOR * (plans["first-fit"].decode_seconds or 0.0)


def _best_offsets(islands: list[Island]) -> np.ndarray:
    best = min(islands, key=lambda island: island.best_peak)
    return best.scores.offsets[int(np.argmin(best.scores.peaks))]


def _trade(problem: Problem, islands: list[Island], exchange: Exchange) -> None:
    """Give ``exchange`` the best plan; its plans in return join the islands in turn, as orders by address."""
    evaluations = sum(island.fitness.evaluations for island in islands)
    for k, offsets in enumerate(exchange.trade(_best_offsets(islands), evaluations)):
        islands[k % len(islands)].immigrate(address_order(problem, offsets)[None])


def generation_record(islands: Sequence[Island], generation: int, started: float) -> GenerationRecord:
    """The trace's record of ``generation``: best and mean peak over all islands, evaluations so far.

    Islands that score an access cost (across memories) rank by it first: the
    record has the least cost found and, of the plans at that cost, the least peak.
    """
    peaks = np.concatenate([island.scores.peaks for island in islands])
    best_peak, best_cost = int(peaks.min()), None
    if islands[0].costs is not None:
        costs = np.concatenate([island.costs for island in islands])
        least = costs.min()
        best_peak = int(peaks[costs == least].min())
        best_cost = float(least) if np.isfinite(least) else None
    return GenerationRecord(
        generation=generation,
        best_peak=best_peak,
        mean_peak=float(peaks.mean()),
        evaluations=sum(island.fitness.evaluations for island in islands),
        elapsed=time.perf_counter() - started,
        best_cost=best_cost,
    )


def plan_at_bound(
    problem: Problem, plans: dict[str, Plan], settings: GASettings, started: float
) -> Plan | None:
    """The best starting plan as the GA's when it meets the lower bound already (nothing is left to
    search for), else None."""
    if min(plan.peak for plan in plans.values()) > problem.lower_bound:
        return None
    return _kept(problem, plans, settings, started, "lower bound reached")


def _kept(
    problem: Problem, plans: dict[str, Plan], settings: GASettings, started: float, reason: str
) -> Plan:
    """A starting plan as the GA's, when the GA has nothing to add: it is at the lower bound, or not
    even the first generation fits the time limit. Its trace is that one plan, as generation 0, after
    the starting plans' decodes."""
    best, decodes = min(plans.values(), key=lambda plan: plan.peak), len(plans)
    start = GenerationRecord(0, best.peak, float(best.peak), decodes, time.perf_counter() - started)
    return make_plan(
        problem,
        best.offsets,
        "ga",
        started,
        stop_reason=kept_reason(reason, best.algorithm),
        trace=[start],
        search=SearchStats(0, decodes, settings.seed, settings.population),
        verified_by=best,
    )
