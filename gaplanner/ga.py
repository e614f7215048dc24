"""The genetic search over allocation orders (seed 003).

An individual is an allocation order, decoded by first-fit placement and then
re-sorted by the start addresses it was given. A generation keeps the elite,
fills the rest with children of tournament-selected parents (an ordered
crossover keeping a prefix of one parent, then swap / insertion / inversion /
peak-block / hole mutations) and scores the whole population in one
vectorized call (:mod:`gaplanner.fitness`).

The loop follows DEAP's ``algorithms.eaSimple`` shape with a per-run
``deap.base.Toolbox`` and ``deap.tools.Logbook``. No ``deap.creator`` classes
and no global ``random``: all randomness comes from one ``numpy`` Generator
per island, so two searches with the same seed give the same plan even when
they run at once in one process.

Several islands (populations started from different initial orders) can
evolve side by side with ring migration; :func:`run_ga` runs them in-process.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import numba
import numpy as np
from deap import base, tools

from gaplanner.baselines import baseline_plans
from gaplanner.errors import InputError
from gaplanner.fitness import PopulationFitness, Scores, shared_prefix
from gaplanner.io import load_problem
from gaplanner.operators import INVERSION, PEAK_MOVE, SWAP, HoleGuide, hole_moves, mutate, ordered_crossover
from gaplanner.placement import Decoder
from gaplanner.placement import warm_up as warm_up_decoder
from gaplanner.plan import Plan, make_plan
from gaplanner.problem import Problem, problem_from_arrays


@dataclass(frozen=True)
class GASettings:
    """Search settings. Termination: whichever of the limits comes first, or the lower bound."""

    population: int = 48
    generations: int | None = None
    time_limit: float | None = 10.0
    stall_generations: int | None = 1000
    max_evaluations: int | None = None
    seed: int = 0
    islands: int = 4
    migration_interval: int = 10
    migrants: int = 2
    elite: int = 2
    tournament: int = 3
    crossover_rate: float = 0.7
    prefix_crossover: bool = True  # keep a prefix of the first parent, not a slice (see ordered_crossover)
    hole_move_rate: float = 0.25
    peak_move_rate: float = 0.25
    use_contiguity: bool = True
    use_excess: bool = True
    local_search: int = 2  # hole moves from the best individuals each generation
    deduplicate: bool = True

    def __post_init__(self) -> None:
        """Refuse settings no search can run with; the error names the field."""
        for name, least in _AT_LEAST.items():
            value = getattr(self, name)
            if value is not None and value < least:
                raise InputError(f"must be at least {least}, got {value}", name)
        if self.time_limit is not None and not (math.isfinite(self.time_limit) and self.time_limit > 0):
            raise InputError(f"must be a positive number of seconds, got {self.time_limit}", "time_limit")
        limits = (self.generations, self.time_limit, self.stall_generations, self.max_evaluations)
        if all(limit is None for limit in limits):
            raise InputError("give one of generations, time_limit, stall_generations, max_evaluations")
        if self.elite >= self.population:
            raise InputError(f"must be below the population ({self.population}), got {self.elite}", "elite")
        for name in ("crossover_rate", "hole_move_rate", "peak_move_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise InputError(f"must lie in [0, 1], got {getattr(self, name)}", name)
        if self.peak_move_rate + self.hole_move_rate > 1:
            raise InputError("peak_move_rate and hole_move_rate must add up to at most 1", "peak_move_rate")


#: The least value of each integer setting (``None``, where allowed, means no limit).
_AT_LEAST = {
    "population": 4,
    "generations": 0,
    "stall_generations": 1,
    "max_evaluations": 1,
    "seed": 0,
    "islands": 1,
    "migration_interval": 1,
    "migrants": 0,
    "elite": 0,
    "tournament": 1,
    "local_search": 0,
}


@dataclass(frozen=True)
class GenerationRecord:
    """One line of the convergence trace."""

    generation: int
    best_peak: int
    mean_peak: float
    evaluations: int
    elapsed: float


StopCheck = Callable[[], bool]
ProgressCallback = Callable[[GenerationRecord], None]


def heuristic_orders(problem: Problem, plans: list[Plan] | None = None) -> list[np.ndarray]:
    """Seed 003's several initial orders: the baselines' plans and simple block keys.

    First-fit decoding of a plan's blocks sorted by address never places a block
    higher than the plan did, so the search starts no worse than any baseline.
    """
    index = np.arange(problem.n)
    duration = problem.upper - problem.lower
    degree = problem.conflicts.degrees()
    plans = plans if plans is not None else list(baseline_plans(problem).values())
    keys = [(plan.offsets, problem.lower) for plan in plans]  # every baseline's plan, by address
    keys += [
        (-problem.sizes, problem.lower),  # size, largest first
        (-problem.sizes * duration, problem.lower),  # area
        (-duration, -problem.sizes),  # longest lived first
        (-degree, -problem.sizes),  # most conflicting first
    ]
    return [np.lexsort((index, *reversed(k))) for k in keys]


def _initial_population(
    problem: Problem, size: int, seeds: list[np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    randoms = [rng.permutation(problem.n) for _ in range(max(0, size - len(seeds)))]
    return np.array((seeds + randoms)[:size], np.int64)


@dataclass
class Island:
    """One population and its random stream."""

    fitness: PopulationFitness
    settings: GASettings
    rng: np.random.Generator
    population: np.ndarray
    guide: HoleGuide
    scores: Scores = field(init=False)
    toolbox: base.Toolbox = field(init=False)

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
        """One generation: elite kept, children bred, everyone scored."""
        s, tb = self.settings, self.toolbox
        ranking = self._ranking()
        elite = self.population[ranking[: s.elite]]
        count = len(self.population) - s.elite
        parents = tb.select(2 * count).reshape(count, 2)
        children = self.population[parents[:, 0]].copy()
        crossed = self.rng.random(count) < s.crossover_rate
        if crossed.any():
            children[crossed] = tb.mate(self.population, parents[crossed])
        mutated = np.flatnonzero(~crossed | (self.rng.random(count) < 0.2))
        tb.mutate(children, mutated, parents[mutated, 0])
        children, scores = tb.evaluate(children, self._known_prefixes(children, parents))
        if s.deduplicate:
            children, scores = self._diversify(elite, children, scores, parents[:, 0])
        self.population = np.concatenate([elite, children])
        self.scores = self.scores.take(ranking[: s.elite]).join(scores)
        if s.local_search:
            self._improve_best(s.local_search)

    def polish(self) -> None:
        """A generation of the memetic step alone: what still fits when a full one would not."""
        self._improve_best(self.settings.local_search)

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

    def _improve_best(self, neighbours: int) -> None:
        """Memetic step: hole moves of the best individuals, scored in one call.

        Each move starts from an individual drawn among those at the best peak:
        plans tied at the peak differ in what a hole move can reach (on pangu,
        greedy-size's plan improved in 4 hole moves of 30, a tied one the
        search drifted to, with another block over the hole, in none). The best
        neighbour replaces the worst individual when it beats the best.
        """
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


def warm_up() -> None:
    """Load every numba kernel a search runs, for narrow and wide offsets and for graph problems.

    Numba compiles a kernel on its first call in a process unless its on-disk
    cache holds it already (a fresh install, or a changed source): seconds that
    would otherwise come out of the first search's time limit.
    """
    sizes, lower, upper = np.array([2, 1, 1]), np.array([0, 0, 1]), np.array([2, 1, 2])
    problems = [problem_from_arrays(sizes << shift, lower, upper) for shift in (0, 40)]
    problems.append(load_problem("example:multicore_fig1b"))
    settings = GASettings(population=4, elite=1, islands=1, generations=1, time_limit=None)
    for problem in problems:
        make_island(problem, settings, 0).step()


def fit_population_to_budget(
    problem: Problem, settings: GASettings, seconds_per_decode: float | None = None
) -> GASettings:
    """Fewer islands, then a smaller population, so that a time-limited search runs about 20 generations.

    On the largest inputs one first-fit decode takes seconds (tens of millions of
    conflict edges); a full-size population would use the whole budget before
    its first generation. Islands go first: they buy diversity for long
    searches, while a population too small stops the search from working. The
    cost of one decode is measured (here, or by the caller as the first-fit
    baseline's time), not guessed.
    """
    if settings.time_limit is None:
        return settings
    if seconds_per_decode is None:
        warm_up_decoder()  # the first call in a process loads the compiled decoder: not part of the cost
        started = time.perf_counter()
        Decoder.for_problem(problem).decode(problem.start_order())
        seconds_per_decode = time.perf_counter() - started
    seconds_per_decode /= max(1, numba.get_num_threads())
    affordable = int(settings.time_limit / (20 * max(seconds_per_decode, 1e-9)))  # individuals a generation
    islands = max(1, min(settings.islands, affordable // settings.population))
    population = max(4, min(settings.population, affordable // islands))
    elite = min(settings.elite, population - 1)
    return replace(settings, islands=islands, population=population, elite=elite)


def make_island(
    problem: Problem, settings: GASettings, index: int, seeds: list[np.ndarray] | None = None
) -> Island:
    """Island ``index`` of ``settings.islands``, the same wherever it is built (one Ray worker or here).

    ``seeds``: :func:`heuristic_orders` of the problem, when the caller has them already.
    """
    seeds = heuristic_orders(problem) if seeds is None else seeds
    rng = np.random.default_rng(np.random.SeedSequence(settings.seed).spawn(settings.islands)[index])
    fitness = PopulationFitness(problem, settings.use_contiguity)
    population = _initial_population(problem, settings.population, seeds[index :: settings.islands], rng)
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


@dataclass
class Termination:
    """When to stop: limits from the settings, the lower bound, or a caller's stop request."""

    settings: GASettings
    lower_bound: int
    should_stop: StopCheck | None = None
    started: float = field(default_factory=time.perf_counter)
    best: float = math.inf
    last_improvement: int = 0

    def reason(self, generation: int, best_peak: int, evaluations: int = 0) -> str | None:
        s = self.settings
        if best_peak < self.best:
            self.best, self.last_improvement = best_peak, generation
        if best_peak <= self.lower_bound:
            return "lower bound reached"
        if self.should_stop is not None and self.should_stop():
            return "stopped by request"
        if s.generations is not None and generation >= s.generations:
            return "generation limit"
        if s.time_limit is not None and time.perf_counter() - self.started >= s.time_limit:
            return "time limit"
        if s.max_evaluations is not None and evaluations >= s.max_evaluations:
            return "evaluation limit"
        if s.stall_generations is not None and generation - self.last_improvement >= s.stall_generations:
            return "stalled"
        return None


def _record(islands: list[Island], generation: int, started: float) -> GenerationRecord:
    peaks = np.concatenate([island.scores.peaks for island in islands])
    return GenerationRecord(
        generation=generation,
        best_peak=int(peaks.min()),
        mean_peak=float(peaks.mean()),
        evaluations=sum(island.fitness.evaluations for island in islands),
        elapsed=time.perf_counter() - started,
    )


def _first_generation_too_costly(settings: GASettings, seconds_per_decode: float, started: float) -> bool:
    """True when scoring the first population alone would overrun the time limit."""
    if settings.time_limit is None:
        return False
    left = settings.time_limit - (time.perf_counter() - started)
    cost = seconds_per_decode * settings.population * settings.islands / max(1, numba.get_num_threads())
    return cost > left


def most_scored_per_generation(settings: GASettings) -> int:
    """The most individuals one island scores in a generation (migration aside).

    Its children, up to twice (repeats are mutated and scored again), and the
    memetic step's neighbours.
    """
    return 2 * (settings.population - settings.elite) + settings.local_search


def _first_generation_seconds(settings: GASettings, building_seconds: float) -> float:
    """An upper estimate of the first generation's time, from the time building the islands took.

    Building scores one population per island; a generation may score about
    twice as many. Taking the building time itself as the estimate let
    iopddl_Y (population 4) start a generation that ended 3.4 s past a 60 s limit.
    """
    return building_seconds * most_scored_per_generation(settings) / settings.population


GENERATION, POLISH = "generation", "polish"


@dataclass
class Pacing:
    """Which step still fits the time left: a generation, the memetic step alone, or none.

    A step as long as the last one of its kind (at first, an estimate) that
    would end past the time limit is not started. On the largest inputs a
    generation takes seconds (iopddl_Y: about 20 s, after 29 s of seeding
    baselines): checking the clock only after it ended overran a 60 s limit by
    9-14 s, and not starting it left a quarter of the budget unused. So once a
    generation no longer fits, the search *polishes*: each island runs its
    memetic step alone (a few hole moves from its best individuals, decoded from
    where they depart from them) as long as one fits.
    """

    generation_seconds: float
    polish_seconds: float
    may_polish: bool

    @classmethod
    def for_search(cls, settings: GASettings, generation_seconds: float) -> Pacing:
        """Estimate the memetic step as the share of a generation's scoring it does."""
        share = settings.local_search / most_scored_per_generation(settings)
        return cls(generation_seconds, generation_seconds * share, settings.local_search > 0)

    def next_step(self, seconds_left: float | None) -> str | None:
        if seconds_left is None or self.generation_seconds <= seconds_left:
            return GENERATION
        if self.may_polish and self.polish_seconds <= seconds_left:
            return POLISH
        return None

    def measured(self, step: str, seconds: float) -> None:
        if step == GENERATION:
            self.generation_seconds = seconds
        else:
            self.polish_seconds = seconds


def _seconds_left(settings: GASettings, started: float) -> float | None:
    return None if settings.time_limit is None else settings.time_limit - (time.perf_counter() - started)


def run_ga(
    problem: Problem,
    settings: GASettings | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
) -> Plan:
    """Search allocation orders; return the best verified plan with its convergence trace.

    The time limit counts from after :func:`warm_up`: it is the search's budget.
    """
    warm_up()
    started = time.perf_counter()
    plans = baseline_plans(problem)
    decode_seconds = plans["first-fit"].details["decode_seconds"]
    settings = fit_population_to_budget(problem, settings or GASettings(), decode_seconds)
    if _first_generation_too_costly(settings, decode_seconds, started):
        best_plan = min(plans.values(), key=lambda plan: plan.peak)
        return make_plan(
            problem, best_plan.offsets, "ga", started, generations=0, evaluations=0,
            stop_reason=f"time limit: no generation fits the budget; {best_plan.algorithm}'s plan kept",
            seed=settings.seed, population=settings.population, trace=[],
        )  # fmt: skip
    termination = Termination(settings, problem.lower_bound, should_stop, started)
    logbook = tools.Logbook()
    building = time.perf_counter()
    islands = make_islands(problem, settings, heuristic_orders(problem, list(plans.values())))
    pacing = Pacing.for_search(settings, _first_generation_seconds(settings, time.perf_counter() - building))
    generation = 0
    while True:
        record = _record(islands, generation, started)
        logbook.record(**asdict(record))
        if on_progress is not None:
            on_progress(record)
        stop_reason = termination.reason(generation, record.best_peak, record.evaluations)
        step = pacing.next_step(_seconds_left(settings, started))
        if stop_reason is None and step is None:
            stop_reason = "time limit"
        if stop_reason is not None:
            break
        step_started = time.perf_counter()
        for island in islands:
            island.step() if step == GENERATION else island.polish()
        pacing.measured(step, time.perf_counter() - step_started)
        generation += 1
        if generation % settings.migration_interval == 0:
            migrate(islands, settings.migrants)
    best = min(islands, key=lambda island: island.best_peak)
    return make_plan(
        problem,
        best.scores.offsets[int(np.argmin(best.scores.peaks))],
        "ga",
        started,
        generations=generation,
        evaluations=record.evaluations,
        stop_reason=stop_reason,
        seed=settings.seed,
        population=settings.population,
        trace=[dict(entry) for entry in logbook],
    )
