"""An island: one population, its random stream and its operators; and how islands start and migrate.

An individual is an allocation order, decoded by first-fit placement and then
re-sorted by the start addresses it was given. A generation keeps the elite,
fills the rest with children of tournament-selected parents (an ordered
crossover keeping a prefix of one parent, then swap / insertion / inversion /
peak-block / hole mutations), scores the whole population in one vectorized
call (:mod:`gaplanner.search.fitness`) and ends with a local search: hole moves from
the best individuals.

The operators are registered on a per-island ``deap.base.Toolbox``. No
``deap.creator`` classes and no global ``random``: all randomness comes from
one ``numpy`` Generator per island, so two searches with the same seed give
the same plan even when they run at once in one process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from deap import base

from gaplanner.plans.plan import Plan
from gaplanner.problem.problem import Problem
from gaplanner.search.fitness import PopulationFitness, Scores, shared_prefix
from gaplanner.search.ga.settings import GASettings
from gaplanner.search.starting_plans import starting_plans
from gaplanner.search.variation import (
    INVERSION,
    PEAK_MOVE,
    SWAP,
    HoleGuide,
    hole_moves,
    mutate,
    ordered_crossover,
)


def heuristic_orders(problem: Problem, plans: list[Plan] | None = None) -> list[np.ndarray]:
    """Several initial orders: the starting plans (:mod:`gaplanner.search.starting_plans`) and simple
    block keys.

    First-fit decoding of a plan's blocks sorted by address never places a block
    higher than the plan did, so the search starts no worse than any of them.
    """
    index = np.arange(problem.n)
    duration = problem.upper - problem.lower
    degree = problem.conflicts.degrees()
    plans = plans if plans is not None else list(starting_plans(problem).values())
    orders = [address_order(problem, plan.offsets) for plan in plans]  # every starting plan
    keys = [
        (-problem.sizes, problem.lower),  # size, largest first
        (-problem.sizes * duration, problem.lower),  # area
        (-duration, -problem.sizes),  # longest lived first
        (-degree, -problem.sizes),  # most conflicting first
    ]
    return [*orders, *(np.lexsort((index, *reversed(k))) for k in keys)]


def address_order(problem: Problem, offsets: np.ndarray) -> np.ndarray:
    """The blocks of a plan by address (ties by start time): first-fit decodes it no higher than the plan."""
    return np.lexsort((np.arange(problem.n), problem.lower, offsets))


def initial_population(
    problem: Problem, size: int, seeds: list[np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    randoms = [rng.permutation(problem.n) for _ in range(max(0, size - len(seeds)))]
    return np.array((seeds + randoms)[:size], np.int64)


@dataclass
class Island:
    """One population and its random stream."""

    fitness: PopulationFitness  # or another decoder's (across memories), called the same way
    settings: GASettings
    rng: np.random.Generator
    population: np.ndarray
    guide: HoleGuide | None
    scores: Scores = field(init=False)
    toolbox: base.Toolbox = field(init=False)
    #: Of the children a crossover made, the share mutated too (the others are mutated alone).
    crossed_mutation_rate: ClassVar[float] = 0.2

    def __post_init__(self) -> None:
        self.toolbox = base.Toolbox()
        self.toolbox.register("evaluate", self.fitness)
        self.toolbox.register("select", self._tournament)
        self.toolbox.register(
            "mate", ordered_crossover, rng=self.rng, keep_prefix=self.settings.prefix_crossover
        )
        self.toolbox.register("mutate", self._mutate)
        self.population, self.scores = self.toolbox.evaluate(self.population)

    def _ranking(self) -> np.ndarray:
        return self.scores.ranking(self.settings.use_excess, self.settings.use_contiguity)

    @property
    def best_index(self) -> int:
        return int(self._ranking()[0])

    @property
    def best_peak(self) -> int:
        return int(self.scores.peaks.min())

    @property
    def costs(self) -> np.ndarray | None:
        """Each individual's access cost, for islands that rank by one first (one arena's: None)."""
        return None

    def _tournament(self, count: int) -> np.ndarray:
        rank = np.empty(len(self.population), np.int64)
        rank[self._ranking()] = np.arange(len(self.population))
        entrants = self.rng.integers(0, len(self.population), size=(count, self.settings.tournament))
        return entrants[np.arange(count), np.argmin(rank[entrants], axis=1)]

    def _critical(self, parents: np.ndarray) -> np.ndarray:
        """Per parent, a mask of the blocks that end at its peak."""
        ends = self.scores.offsets[parents] + self.fitness.problem.sizes
        return ends == self.scores.peaks[parents, None]

    def _mutate(self, orders: np.ndarray, rows: np.ndarray, parents: np.ndarray) -> None:
        """Mutate ``orders[rows]``: a hole move or a peak move (at the rates set), else a random
        swap / insertion / inversion."""
        s, draw = self.settings, self.rng.random(len(rows))
        hole = draw < s.hole_move_rate
        peak = ~hole & (draw < s.hole_move_rate + s.peak_move_rate)
        kinds = np.where(peak, PEAK_MOVE, self.rng.integers(SWAP, INVERSION + 1, len(rows)))
        mutate(orders, rows[~hole], kinds[~hole], self._critical(parents[~hole]), self.rng)
        hole_moves(orders, rows[hole], self.scores.offsets[parents[hole]], self.guide, self.rng)

    def step(self) -> None:
        """One generation: children bred and scored, the survivors chosen, then the local search."""
        ranking = self._ranking()
        children, scores = self._offspring(ranking)
        self._survive(ranking, children, scores)
        if self.settings.local_search:
            self.local_search()

    def _survive(self, ranking: np.ndarray, children: np.ndarray, scores: Scores) -> None:
        """The next population: the elite and the children (generational, with elitism)."""
        elite = ranking[: self.settings.elite]
        self.population = np.concatenate([self.population[elite], children])
        self.scores = self.scores.take(elite).join(scores)

    def _offspring(self, ranking: np.ndarray) -> tuple[np.ndarray, Scores]:
        """As many children as the population has places beside the elite, bred and scored (repeats of
        the elite or of each other mutated and scored again)."""
        s, tb = self.settings, self.toolbox
        elite = self.population[ranking[: s.elite]]
        count = len(self.population) - s.elite
        parents = tb.select(2 * count).reshape(count, 2)
        children = self.population[parents[:, 0]].copy()
        crossed = self.rng.random(count) < s.crossover_rate
        if crossed.any():
            children[crossed] = tb.mate(self.population, parents[crossed])
        mutated = np.flatnonzero(~crossed | (self.rng.random(count) < self.crossed_mutation_rate))
        tb.mutate(children, mutated, parents[mutated, 0])
        children, scores = tb.evaluate(children, self._known_prefixes(children, parents))
        if s.deduplicate:
            children, scores = self._diversify(elite, children, scores, parents[:, 0])
        return children, scores

    def _known_prefixes(self, children: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per child, the length of the leading part it shares with the closer parent, and its offsets."""
        first = shared_prefix(children, self.population[parents[:, 0]])
        second = shared_prefix(children, self.population[parents[:, 1]])
        closer = np.where(first >= second, parents[:, 0], parents[:, 1])
        return np.maximum(first, second), self.scores.offsets[closer]

    def _diversify(
        self, elite: np.ndarray, children: np.ndarray, scores: Scores, parents: np.ndarray
    ) -> tuple[np.ndarray, Scores]:
        """Mutate and re-score children that repeat an elite or an earlier child.

        Different orders often re-sort to the same address order; copies would
        only take places and evaluations from new candidates.
        """
        seen = {order.tobytes() for order in elite}
        repeats = []
        for i, child in enumerate(children):
            key = child.tobytes()
            if key in seen:
                repeats.append(i)
            seen.add(key)
        if not repeats:
            return children, scores
        again = children[repeats].copy()
        self.toolbox.mutate(again, np.arange(len(again)), parents[repeats])
        known = (shared_prefix(again, children[repeats]), scores.offsets[repeats])
        again, rescored = self.toolbox.evaluate(again, known)
        children[repeats] = again
        scores.put(np.array(repeats), rescored)
        return children, scores

    def local_search(self) -> None:
        """``settings.local_search`` hole moves of the best individuals, scored in one call.

        Each move starts from an individual drawn among those at the best peak:
        plans tied at the peak differ in what a hole move can reach (one whose
        peak block sits over a hole may have a twin with another block there).
        The best neighbour replaces the worst individual when it beats the best.
        Run alone, it is the step that still fits when a whole generation would
        overrun the time limit.
        """
        neighbours = self.settings.local_search
        peaks = self.scores.peaks
        starts = self.rng.choice(np.flatnonzero(peaks == peaks.min()), neighbours)
        candidates = self.population[starts]
        hole_moves(candidates, np.arange(neighbours), self.scores.offsets[starts], self.guide, self.rng)
        known = (shared_prefix(candidates, self.population[starts]), self.scores.offsets[starts])
        candidates, scores = self.toolbox.evaluate(candidates, known)
        pick = int(scores.ranking(self.settings.use_excess, self.settings.use_contiguity)[0])
        joined = self.scores.take(np.array([self.best_index])).join(scores.take(np.array([pick])))
        if joined.ranking(self.settings.use_excess, self.settings.use_contiguity)[0] == 1:
            worst = self._ranking()[-1:]
            self.population[worst] = candidates[pick]
            self.scores.put(worst, scores.take(np.array([pick])))

    def emigrants(self, count: int) -> np.ndarray:
        return self.population[self._ranking()[:count]].copy()

    def immigrate(self, orders: np.ndarray) -> None:
        """Replace the worst individuals with ``orders``."""
        arrivals, scores = self.fitness(orders)
        worst = self._ranking()[::-1][: len(orders)]
        self.population[worst] = arrivals
        self.scores.put(worst, scores)


def make_island(
    problem: Problem, settings: GASettings, index: int, seeds: list[np.ndarray] | None = None
) -> Island:
    """Island ``index`` of ``settings.islands``, the same wherever it is built (one Ray worker or here).

    ``seeds``: :func:`heuristic_orders` of the problem, when the caller has them already.
    """
    seeds = heuristic_orders(problem) if seeds is None else seeds
    rng = np.random.default_rng(np.random.SeedSequence(settings.seed).spawn(settings.islands)[index])
    fitness = PopulationFitness(problem, settings.use_contiguity)
    population = initial_population(problem, settings.population, seeds[index :: settings.islands], rng)
    return Island(fitness, settings, rng, population, HoleGuide.for_problem(problem))


def make_islands(
    problem: Problem, settings: GASettings, seeds: list[np.ndarray] | None = None
) -> list[Island]:
    """Islands with independent random streams; heuristic orders dealt round-robin among them."""
    seeds = heuristic_orders(problem) if seeds is None else seeds
    return [make_island(problem, settings, k, seeds) for k in range(settings.islands)]


def migrate(islands: list[Island], count: int) -> None:
    """Ring migration: each island's best replace the next island's worst."""
    if len(islands) < 2 or count < 1:
        return
    outgoing = [island.emigrants(count) for island in islands]
    for k, island in enumerate(islands):
        island.immigrate(outgoing[k - 1])
