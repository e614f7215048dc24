"""The GA's island across memories: one arena's :class:`~gaplanner.search.ga.island.Island` with the
memories' decoder as its fitness and operators that move blocks between memories.

Selection, crossover, repeats mutated again, migration and the loop are the
GA's own; what differs is what an order means, and who survives: the best of
parents and children together, one per (cost, peak) first, as the cost
landscape is flat where many orders place the same blocks in the fast memory. An order is decoded
across the memories (:mod:`gaplanner.search.memories.fitness`: fastest memory
with room, first-fit there), and it is not re-sorted by address (addresses in
different memories do not compare). Its mutations are *promotions* (a block
its parent left in a slower memory moved ahead in the order, so that it may
take a faster one), *demotions* (a block in the fastest memory moved back)
and swaps; its local search promotes slow blocks of the best order to the front.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gaplanner.problem.problem import Problem
from gaplanner.search.ga.island import Island, initial_population
from gaplanner.search.ga.settings import GASettings
from gaplanner.search.memories.decoder import MemoryDecoder
from gaplanner.search.memories.fitness import MemoryFitness, MemoryScores

Mutation = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]


def swap(order: np.ndarray, memory_of: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two random blocks trade places."""
    child = order.copy()
    i, j = rng.integers(0, len(order), 2)
    child[i], child[j] = child[j], child[i]
    return child


def promote(order: np.ndarray, memory_of: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move a block the order left in a slower memory ahead, to a random earlier place."""
    slow = np.flatnonzero(memory_of[order] > 0)
    if not len(slow):
        return swap(order, memory_of, rng)
    position = int(rng.choice(slow))
    return move(order, position, int(rng.integers(0, position + 1)))


def demote(order: np.ndarray, memory_of: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move a block the order put in the fastest memory back, to a random later place."""
    fast = np.flatnonzero(memory_of[order] == 0)
    if not len(fast):
        return swap(order, memory_of, rng)
    position = int(rng.choice(fast))
    return move(order, position, int(rng.integers(position, len(order))))


def move(order: np.ndarray, position: int, target: int) -> np.ndarray:
    """``order`` with the block at ``position`` moved to ``target``."""
    rest = np.delete(order, position)
    return np.concatenate([rest[:target], order[position : position + 1], rest[target:]])


#: Promotions twice as often as demotions: most of the cost is saved by moving blocks up.
MUTATIONS: tuple[Mutation, ...] = (promote, promote, demote)


def to_front(order: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """One order per position: the block there moved to the front of ``order``."""
    return np.array([np.concatenate([[order[p]], np.delete(order, p)]) for p in positions], np.int64)


class MemoryIsland(Island):
    """An island whose individuals are decoded across memories (see the module docstring)."""

    scores: MemoryScores  # type: ignore[assignment]
    #: Every child is mutated: two parents often place the same blocks in the fast memory, and their
    #: child would decode as one of them.
    crossed_mutation_rate = 1.0

    @property
    def costs(self) -> np.ndarray:
        return self.scores.costs

    def _survive(self, ranking: np.ndarray, children: np.ndarray, scores: MemoryScores) -> None:  # type: ignore[override]
        """The best of the population and the children, as many as there are places (DEAP's mu + lambda),
        one of each (cost, peak) first: copies of the best would crowd out the rest."""
        orders, merged = np.concatenate([self.population, children]), self.scores.join(scores)
        ranked = merged.ranking()
        costs, peaks = merged.costs[ranked], merged.peaks[ranked]
        distinct = np.ones(len(ranked), bool)
        distinct[1:] = (costs[1:] != costs[:-1]) | (peaks[1:] != peaks[:-1])
        keep = np.concatenate([ranked[distinct], ranked[~distinct]])[: len(self.population)]
        self.population, self.scores = orders[keep], merged.take(keep)

    def _mutate(self, orders: np.ndarray, rows: np.ndarray, parents: np.ndarray) -> None:
        """Mutate ``orders[rows]``: one move, then more with probability one half each, using where the
        parent's decoding put each block."""
        for r, a in zip(rows, parents, strict=True):
            child = orders[r]
            for _ in range(1 + int(self.rng.geometric(0.5))):
                child = MUTATIONS[int(self.rng.integers(0, len(MUTATIONS)))](
                    child, self.scores.memory_of[a], self.rng
                )
            orders[r] = child

    def local_search(self) -> None:
        """Move ``settings.local_search`` random slow blocks of the best order to its front, scored in one
        call; the best of them replaces the worst individual when it beats the best."""
        best = self.best_index
        order = self.population[best]
        slow = np.flatnonzero(self.scores.memory_of[best][order] > 0)
        if not len(slow):
            return
        tries = to_front(
            order, self.rng.choice(slow, min(len(slow), self.settings.local_search), replace=False)
        )
        tries, scores = self.toolbox.evaluate(tries)
        pick = int(scores.ranking()[0])
        if (scores.costs[pick], scores.peaks[pick]) < (self.scores.costs[best], self.scores.peaks[best]):
            worst = self._ranking()[-1:]
            self.population[worst] = tries[pick]
            self.scores.put(worst, scores.take(np.array([pick])))


def make_memory_islands(
    problem: Problem, settings: GASettings, decoder: MemoryDecoder, seeds: list[np.ndarray]
) -> list[MemoryIsland]:
    """Islands with independent random streams (as one arena's); the starting orders dealt round-robin."""
    streams = np.random.SeedSequence(settings.seed).spawn(settings.islands)
    islands = []
    for k, stream in enumerate(streams):
        rng = np.random.default_rng(stream)
        population = initial_population(problem, settings.population, seeds[k :: settings.islands], rng)
        islands.append(MemoryIsland(MemoryFitness(decoder), settings, rng, population, None))  # type: ignore[arg-type]
    return islands
