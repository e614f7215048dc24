"""The GA across memories: the GA's loop (:func:`gaplanner.search.ga.loop.evolve`) on islands that decode
orders across the memories (:mod:`gaplanner.search.memories.island`), for the least access cost, then
the smallest peaks.

It starts from the spill order and from memories filled by access saved per
byte (:func:`~gaplanner.search.memories.baselines.seed_orders`), and ends with
a local search that moves the best order's slow blocks to the front one at a
time while the cost drops.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from gaplanner import native
from gaplanner.deadline import Deadline
from gaplanner.errors import DoesNotFit
from gaplanner.plans.plan import GenerationRecord, Plan, SearchStats
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
)
from gaplanner.search.ga.loop import ProgressCallback, evolve
from gaplanner.search.ga.settings import GASettings
from gaplanner.search.ga.termination import StopCheck, Termination
from gaplanner.search.memories.baselines import plan_placement, seed_orders, spill_order
from gaplanner.search.memories.decoder import MemoryDecoder, Placements
from gaplanner.search.memories.fitness import MemoryFitness, MemoryScores
from gaplanner.search.memories.island import MemoryIsland, make_memory_islands, to_front


def memory_ga(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """Search orders decoded across memories; the best verified plan with its convergence trace.

    :class:`~gaplanner.errors.DoesNotFit` when no order placed every block
    within the memories' capacities. ``deadline``: the run's (:mod:`gaplanner.deadline`); by default
    the settings' time limit, counted from the call, as for one
    arena. The generations and the polish come out of it; the plan's verification is kept back. When
    not even the first generation fits, the spill order's plan is kept (as one arena's GA keeps a
    starting plan).
    """
    settings = settings or GASettings()
    deadline = (deadline or Deadline(settings.time_limit)).keeping(verify_seconds(problem))
    started = time.perf_counter()
    decoder = MemoryDecoder.for_problem(problem)
    decoding = time.perf_counter()
    spill = decoder.decode(spill_order(problem))
    decode_seconds = time.perf_counter() - decoding
    settings = fit_population_to_budget(problem, settings, nominal_seconds(settings, deadline))
    fitted = fit_first_generation(settings, decode_seconds, deadline.left())
    if fitted is None:
        return _spill_kept(problem, spill, settings, started)
    settings = fitted
    seeds = seed_orders(problem, deadline)
    lower_bound = problem.memories.cost_lower_bound()  # type: ignore[union-attr]
    deadline.stage("genetic search")
    termination = Termination(settings, lower_bound, should_stop, started, by_cost=True, deadline=deadline)
    building = time.perf_counter()
    islands = make_memory_islands(problem, settings, decoder, seeds)
    pacing = Pacing.for_search(settings, first_generation_seconds(settings, time.perf_counter() - building))
    trace, stop_reason = evolve(islands, settings, termination, pacing, started, on_progress, None, deadline)
    order, scores = _best(islands)
    out_of_time = _out_of_time(deadline, should_stop)
    affordable = _orders_left(deadline, decode_seconds)
    order, scores, polished = polish(MemoryFitness(decoder), order, scores, out_of_time, affordable)
    evaluations = trace[-1].evaluations + polished
    deadline.stage("verification")
    search = SearchStats(trace[-1].generation, evaluations, settings.seed, settings.population)
    return plan_placement(
        problem, scores.memory_of[0], scores.offsets[0], float(scores.costs[0]), "ga", started,
        stop_reason=stop_reason, trace=trace, search=search,
    )  # fmt: skip


def _spill_kept(problem: Problem, spill: Placements, settings: GASettings, started: float) -> Plan:
    """The spill order's plan (spill-greedy's) as the GA's, when not even its first generation fits the
    time left: its trace is that one plan, as generation 0."""
    cost, peak = float(spill.costs[0]), int(spill.peaks[0].sum())
    if not np.isfinite(cost):  # one order tried is no proof
        raise DoesNotFit(
            "the spill order places some block in no memory, and no generation fits the time limit: a "
            "longer time limit may find a placement"
        )
    elapsed = time.perf_counter() - started
    record = GenerationRecord(0, peak, float(peak), 1, elapsed, cost)
    return plan_placement(
        problem, spill.memory_of[0], spill.offsets[0], cost, "ga", started,
        stop_reason=kept_reason(NO_GENERATION_FITS, "spill-greedy"), trace=[record],
        search=SearchStats(0, 1, settings.seed, settings.population),
    )  # fmt: skip


def _best(islands: list[MemoryIsland]) -> tuple[np.ndarray, MemoryScores]:
    """The best order over all islands (least cost, then peak, then the first island) and its scores."""
    ranked = [(island.scores.costs[i], island.scores.peaks[i], k, i) for k, island in enumerate(islands)
              for i in [island.best_index]]  # fmt: skip
    _, _, k, i = min(ranked)
    best = islands[k]
    return best.population[i], best.scores.take(np.array([i]))


def polish(
    fitness: MemoryFitness,
    order: np.ndarray,
    scores: MemoryScores,
    out_of_time: Callable[[], bool],
    affordable: Callable[[], int] | None = None,
) -> tuple[np.ndarray, MemoryScores, int]:
    """Move the best order's slow blocks to the front, one at a time, while the cost drops.

    Each round tries every block left in a slower memory at the front of the
    order (the first ``affordable()`` of them: a round on thousands of blocks
    decodes thousands of orders) and keeps the best result if it beats the
    best; also the orders it decoded.
    """
    evaluations = 0
    while not out_of_time():
        slow = np.flatnonzero(scores.memory_of[0][order] > 0)
        if affordable is not None:
            slow = slow[: affordable()]
        if not len(slow):
            break
        tries, placed = fitness(to_front(order, slow))
        evaluations += len(tries)
        i = int(placed.ranking()[0])
        if (placed.costs[i], placed.peaks[i]) >= (scores.costs[0], scores.peaks[0]):
            break
        order, scores = tries[i], placed.take(np.array([i]))
    return order, scores, evaluations


def _orders_left(deadline: Deadline, decode_seconds: float) -> Callable[[], int] | None:
    """How many orders can still be decoded before ``deadline`` (None: no time limit), from the time
    one took (``decode_seconds``) and the threads a population is decoded on."""
    if deadline.limit is None:
        return None
    per_order = max(decode_seconds, 1e-9) / max(1, native.threads())
    return lambda: int(deadline.left() / per_order)


def _out_of_time(deadline: Deadline, should_stop: StopCheck | None) -> Callable[[], bool]:
    def check() -> bool:
        return deadline.passed() or (should_stop is not None and should_stop())

    return check
