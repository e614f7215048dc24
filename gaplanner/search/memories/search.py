"""Searches across memories: the spill baseline, orders decoded across memories, and a GA over them.

Every search here decodes allocation orders with
:class:`gaplanner.search.memories.decoder.MemoryDecoder` (fastest memory with room,
first-fit there) and keeps the order with the least access cost, then the
smallest peaks.

* ``spill-greedy``: blocks by size, largest first, each into the fastest
  memory with room (ExecuTorch's banked greedy).
* ``first-fit``: the execution order, decoded across memories.
* ``ga``: a permutation GA of its own (this module, not :mod:`gaplanner.search.ga`,
  whose fitness is one arena's peak): seeded with the orders above and with
  blocks by access bytes per byte of memory-time, it evolves orders by a
  prefix crossover, swaps, and *promotions* (a block a parent left in a slow
  memory moved ahead in the order, so that it may take a faster one); then a
  local search promotes the slow blocks of the best order one at a time while
  the cost drops.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gaplanner.errors import GaplannerError
from gaplanner.plans.memory_plan import MemoryPlan, make_memory_plan
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.problem.memories import single_memory
from gaplanner.problem.problem import Problem
from gaplanner.search.ga import GASettings, StopCheck
from gaplanner.search.memories.decoder import MemoryDecoder, Placements


class DoesNotFit(GaplannerError):
    """No placement found keeps every block within its memory's capacity."""


def spill_order(problem: Problem) -> np.ndarray:
    """Largest block first, ties by earlier start (ExecuTorch's greedy by size)."""
    return np.lexsort((np.arange(problem.n), problem.lower, -problem.sizes))


def density_order(problem: Problem) -> np.ndarray:
    """Blocks by access cost saved per byte of memory-time, highest first (a knapsack's greedy)."""
    assert problem.memories is not None
    accessed = problem.memories.write_bytes + problem.memories.read_bytes
    area = problem.sizes.astype(np.float64) * np.maximum(problem.upper - problem.lower, 1)
    return np.lexsort((np.arange(problem.n), -problem.sizes, -accessed / area))


def profile_order(problem: Problem, priority: np.ndarray) -> np.ndarray:
    """Fill the memories fastest first by ``priority`` (highest first), ignoring fragmentation.

    A block joins a memory when the bytes live there at every moment of its
    lifetime stay within the capacity (a knapsack per moment); the order is
    the fastest memory's blocks, largest first (first-fit packs them best), then
    the next memory's, and so on, then what no bounded memory took.
    """
    system = problem.memories
    assert system is not None
    times, lower = np.unique(problem.lower, return_inverse=True)
    upper = np.searchsorted(times, problem.upper, side="left")
    left = np.flatnonzero(system.pinned_memory < 0)
    left = left[np.argsort(-priority[left], kind="stable")]
    parts = []
    for m, capacity in enumerate(system.capacities):
        if capacity < 0:
            break
        load = np.zeros(len(times), np.int64)
        taken = np.zeros(len(left), bool)
        for k, b in enumerate(left):
            if not system.allowed[b, m]:  # its devices do not reach this memory
                continue
            window = load[lower[b] : max(upper[b], lower[b] + 1)]
            if window.max() + problem.sizes[b] <= capacity:
                window += problem.sizes[b]
                taken[k] = True
        chosen = left[taken]
        parts.append(chosen[np.argsort(-problem.sizes[chosen], kind="stable")])
        left = left[~taken]
    pinned = np.flatnonzero(system.pinned_memory >= 0)
    return np.concatenate([pinned, *parts, left]).astype(np.int64)


def seed_orders(problem: Problem) -> list[np.ndarray]:
    """The orders a search starts from: the spill order, and memories filled by saving per byte."""
    system = problem.memories
    assert system is not None
    table = system.cost_table()
    saving = table[:, -1] - table.min(axis=1)
    sizes = problem.sizes.astype(np.float64)
    duration = np.maximum(problem.upper - problem.lower, 1).astype(np.float64)
    by_reads = np.lexsort((-problem.sizes, -(system.read_bytes / sizes)))
    return [
        spill_order(problem),
        profile_order(problem, saving / (sizes * duration)),
        profile_order(problem, saving / sizes / np.sqrt(duration)),
        profile_order(problem, saving / sizes),
        density_order(problem),
        problem.start_order(),
        by_reads,
    ]


@dataclass
class Best:
    """The best decoded order so far."""

    order: np.ndarray
    placement: Placements  # one row

    @property
    def cost(self) -> float:
        return float(self.placement.costs[0])

    def key(self) -> tuple[float, int]:
        return (self.cost, int(self.placement.peaks[0].sum()))


def _row(placements: Placements, i: int) -> Placements:
    p = placements
    return Placements(p.memory_of[i : i + 1], p.offsets[i : i + 1], p.peaks[i : i + 1], p.costs[i : i + 1])


def _finish(problem: Problem, best: Best, algorithm: str, started: float, **search: int) -> MemoryPlan:
    if not np.isfinite(best.cost):
        capacities = ", ".join(f"{m.id} {m.capacity}" for m in problem.memories.memories)  # type: ignore[union-attr]
        raise DoesNotFit(f"{algorithm} found no placement within the memories' capacities ({capacities})")
    p = best.placement
    return make_memory_plan(problem, p.memory_of[0], p.offsets[0], algorithm, started, **search)


def plan_order(problem: Problem, order: np.ndarray, algorithm: str) -> MemoryPlan:
    """The plan of one order decoded across the memories."""
    started = time.perf_counter()
    placement = MemoryDecoder.for_problem(problem).decode(order)
    return _finish(problem, Best(order, placement), algorithm, started)


def spill_greedy(problem: Problem) -> MemoryPlan:
    """Largest block first, each into the fastest memory with room."""
    return plan_order(problem, spill_order(problem), "spill-greedy")


def spill_greedy_arena(problem: Problem) -> Plan:
    """``spill-greedy`` on one unbounded arena: largest block first, each at its lowest free offset."""
    started = time.perf_counter()
    one = replace(problem, memories=single_memory(problem, None))
    placement = MemoryDecoder.for_problem(one).decode(spill_order(problem))
    return make_plan(problem, placement.offsets[0], "spill-greedy", started)


def _prefix_crossover(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A prefix of ``a``, then the other blocks in ``b``'s order."""
    cut = int(rng.integers(1, len(a))) if len(a) > 1 else 1
    taken = np.zeros(len(a), bool)
    taken[a[:cut]] = True
    return np.concatenate([a[:cut], b[~taken[b]]])


def _promote(order: np.ndarray, memory_of: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move a block the order left in a slower memory ahead, to a random earlier place."""
    slow = np.flatnonzero(memory_of[order] > 0)
    if not len(slow):
        return _swap(order, rng)
    position = int(rng.choice(slow))
    return _move(order, position, int(rng.integers(0, position + 1)))


def _demote(order: np.ndarray, memory_of: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move a block the order put in the fastest memory back, to a random later place."""
    fast = np.flatnonzero(memory_of[order] == 0)
    if not len(fast):
        return _swap(order, rng)
    position = int(rng.choice(fast))
    return _move(order, position, int(rng.integers(position, len(order))))


def _move(order: np.ndarray, position: int, target: int) -> np.ndarray:
    """``order`` with the block at ``position`` moved to ``target``."""
    rest = np.delete(order, position)
    return np.concatenate([rest[:target], order[position : position + 1], rest[target:]])


MUTATIONS = (_promote, _promote, _demote)


def _swap(order: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    child = order.copy()
    i, j = rng.integers(0, len(order), 2)
    child[i], child[j] = child[j], child[i]
    return child


class Population:
    """Orders, their placements and the best so far."""

    def __init__(self, decoder: MemoryDecoder, orders: np.ndarray) -> None:
        self.decoder = decoder
        self.orders = orders
        self.placements = decoder.decode(orders)
        self.evaluations = len(orders)

    def ranked(self) -> np.ndarray:
        return self.placements.keys()

    def best(self) -> Best:
        i = int(self.ranked()[0])
        return Best(self.orders[i], _row(self.placements, i))

    def _tournament(self, rng: np.random.Generator, rank: np.ndarray, size: int = 3) -> int:
        return int(rank[rng.integers(0, len(rank), size)].min())

    def children(self, count: int, rng: np.random.Generator, crossover_rate: float) -> np.ndarray:
        by_rank = self.ranked()
        rank = np.empty(len(by_rank), np.int64)
        rank[by_rank] = np.arange(len(by_rank))
        position = np.argsort(rank)  # rank -> row
        rows = []
        for _ in range(count):
            a = int(position[self._tournament(rng, rank)])
            child = self.orders[a]
            if rng.random() < crossover_rate:
                b = int(position[self._tournament(rng, rank)])
                child = _prefix_crossover(child, self.orders[b], rng)
            for _ in range(1 + int(rng.geometric(0.5))):
                child = MUTATIONS[int(rng.integers(0, len(MUTATIONS)))](
                    child, self.placements.memory_of[a], rng
                )
            rows.append(child)
        return np.array(rows, np.int64)

    def advance(self, children: np.ndarray) -> None:
        """Keep the best of the current orders and ``children`` (as many as there are now)."""
        placed = self.decoder.decode(children)
        self.evaluations += len(children)
        orders = np.concatenate([self.orders, children])
        merged = Placements(
            *(
                np.concatenate([getattr(self.placements, f), getattr(placed, f)])
                for f in ("memory_of", "offsets", "peaks", "costs")
            )
        )
        ranked = merged.keys()
        # One row per distinct (cost, peaks): copies of the best would crowd out the rest.
        costs, peaks = merged.costs[ranked], merged.peaks[ranked].sum(axis=1)
        distinct = np.ones(len(ranked), bool)
        distinct[1:] = (costs[1:] != costs[:-1]) | (peaks[1:] != peaks[:-1])
        keep = np.concatenate([ranked[distinct], ranked[~distinct]])[: len(self.orders)]
        self.orders = orders[keep]
        self.placements = Placements(
            merged.memory_of[keep], merged.offsets[keep], merged.peaks[keep], merged.costs[keep]
        )


def local_search(decoder: MemoryDecoder, best: Best, out_of_time: Callable[[], bool]) -> tuple[Best, int]:
    """Promote the best order's slow blocks one at a time (to the front) while the cost drops.

    Each round tries every block left in a slower memory at the front of the
    order and keeps the cheapest result if it beats the best.
    """
    evaluations = 0
    while not out_of_time():
        order, memory_of = best.order, best.placement.memory_of[0]
        slow = np.flatnonzero(memory_of[order] > 0)
        if not len(slow):
            break
        tries = np.array([np.concatenate([[order[p]], np.delete(order, p)]) for p in slow], np.int64)
        placed = decoder.decode(tries)
        evaluations += len(tries)
        i = int(placed.keys()[0])
        candidate = Best(tries[i], _row(placed, i))
        if candidate.key() >= best.key():
            break
        best = candidate
    return best, evaluations


def _out_of_time(settings: GASettings, started: float, should_stop: StopCheck | None) -> Callable[[], bool]:
    def check() -> bool:
        late = settings.time_limit is not None and time.perf_counter() - started >= settings.time_limit
        return late or (should_stop is not None and should_stop())

    return check


def memory_ga(
    problem: Problem, settings: GASettings | None = None, *, should_stop: StopCheck | None = None
) -> MemoryPlan:
    """Search orders decoded across memories for the least access cost, then the smallest peaks."""
    settings = settings or GASettings()
    started = time.perf_counter()
    decoder = MemoryDecoder.for_problem(problem)
    rng = np.random.default_rng(settings.seed)
    seeds = seed_orders(problem)
    randoms = [rng.permutation(problem.n) for _ in range(max(0, settings.population - len(seeds)))]
    population = Population(decoder, np.array([*seeds, *randoms], np.int64))
    out_of_time = _out_of_time(settings, started, should_stop)
    lower_bound = problem.memories.cost_lower_bound()  # type: ignore[union-attr]
    generation, last_better, best = 0, 0, population.best()
    while not out_of_time() and best.cost > lower_bound:
        if settings.generations is not None and generation >= settings.generations:
            break
        if settings.stall_generations is not None and generation - last_better >= settings.stall_generations:
            break
        population.advance(
            population.children(settings.population - settings.elite, rng, settings.crossover_rate)
        )
        generation += 1
        if population.best().key() < best.key():
            best, last_better = population.best(), generation
    best, polished = local_search(decoder, best, out_of_time)
    return _finish(
        problem, best, "ga", started, generations=generation, evaluations=population.evaluations + polished
    )
