"""Spending a time limit: a population the budget affords, and pacing steps so none overruns it.

On the largest inputs one first-fit decode takes seconds and a generation
tens of them. So the search fits its population to the budget before it
starts, from a cost model of the problem and the nominal budget (so the same
seed and generations search the same way under any load), gives up on
searching when not even a shrunk first generation fits, and, once a whole
generation no longer fits in the time left, runs the islands' local search
alone for as long as one fits. Only these last two read the clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gaplanner import native
from gaplanner.deadline import Deadline
from gaplanner.problem.problem import Problem
from gaplanner.search.ga.island import Island
from gaplanner.search.ga.settings import GASettings, most_scored_per_generation
from gaplanner.search.neighbours import uses_intervals, uses_order_index

GENERATION, LOCAL_SEARCH = "generation", "local search"
#: Why a search ends before its first generation (its starting plan kept): not even that fits the time left.
NO_GENERATION_FITS = "time limit: no generation fits the budget"
#: A generation reckoned from a local search's time: so many times the scoring it does, for the rest of
#: its work (selection, variation, migration) and a margin against overrunning the limit.
GENERATION_MARGIN = 2.0


#: Of a search bounded by a time limit, the generations its population is sized for.
GENERATIONS_AFFORDED = 20
#: The cost model of one of the GA's decodes, on one thread of the reference machine (2 cores, shared
#: with other work): so much per block placed, and so much per conflicting pair, by the decoder a
#: population uses (:func:`gaplanner.search.neighbours.uses_intervals`). Interval problems whose pairs
#: fit read them from a pair list; a conflict graph's pair list costs less per pair; the lifetimes
#: decoder (the largest interval problems) and the happens-before one find each neighbour before
#: reading it, and cost more. Fitted to single-threaded population decodes of the benchmark inputs
#: (MiniMalloc's, the large ones, the zoo, the synthetic ones). One thread: more threads (a machine
#: with more cores) fit more generations, and the population stays the same there.
DECODE_SECONDS_PER_BLOCK = 1e-6
PAIR_SECONDS_INTERVAL_LIST = 3e-8
PAIR_SECONDS_GRAPH_LIST = 1e-8
PAIR_SECONDS_PAIR_FREE = 9e-8


def modelled_decode_seconds(problem: Problem) -> float:
    """The seconds one of the GA's decodes of ``problem`` is reckoned to take on one thread.

    A model of the problem (its blocks, its conflicting pairs and the decoder its populations use),
    never a measurement: the population it sizes must be the same on any machine, under any load,
    and on the first run in a process as on the tenth, so that the same seed and generations give
    the same plan (a measured decode of a small input is mostly the machine's noise).
    """
    if uses_intervals(problem) or uses_order_index(problem):
        per_pair = PAIR_SECONDS_PAIR_FREE
    elif problem.interval_conflicts:
        per_pair = PAIR_SECONDS_INTERVAL_LIST
    else:
        per_pair = PAIR_SECONDS_GRAPH_LIST
    return DECODE_SECONDS_PER_BLOCK * problem.n + per_pair * problem.conflicts.edge_count


def nominal_seconds(settings: GASettings, deadline: Deadline | None = None) -> float | None:
    """The search's budget as given: the least of the settings' time limit and the ``deadline``'s
    limit (None: neither has one). Never the time left, which depends on how fast the stages before
    ran."""
    given = (settings.time_limit, None if deadline is None else deadline.limit)
    return min((limit for limit in given if limit is not None), default=None)


def fit_population_to_budget(
    problem: Problem, settings: GASettings, seconds: float | None = None
) -> GASettings:
    """Fewer islands, then a smaller population, so that a time-limited search runs about
    :data:`GENERATIONS_AFFORDED` generations.

    On the largest inputs one decode takes seconds (tens of millions of conflicting pairs); a
    full-size population would use the whole budget before its first generation. Islands go first:
    they buy diversity for long searches, while a population too small stops the search from
    working. What a decode costs comes from :func:`modelled_decode_seconds` and the budget is the
    nominal one (``seconds``, default: the settings' time limit; see :func:`nominal_seconds`), so
    the population depends on the input and the settings alone, never on the machine's load. Only
    the time-limit guards (:func:`fit_first_generation`, :class:`Pacing`) read the clock: they end
    a run early, or shrink the first population of a run whose time limit binds anyway.
    """
    seconds = settings.time_limit if seconds is None else seconds
    if seconds is None or seconds == math.inf:
        return settings
    per_decode = modelled_decode_seconds(problem)
    affordable = int(seconds / (GENERATIONS_AFFORDED * max(per_decode, 1e-9)))  # individuals a generation
    islands = max(1, min(settings.islands, affordable // settings.population))
    population = max(4, min(settings.population, affordable // islands))
    elite = min(settings.elite, population - 1)
    return replace(settings, islands=islands, population=population, elite=elite)


def fit_first_generation(settings: GASettings, seconds_per_decode: float, left: float) -> GASettings | None:
    """``settings``, or fewer islands and a smaller population whose first scoring fits the ``left``
    seconds; None when not even one island of four does.

    The population is sized from the nominal budget (:func:`fit_population_to_budget`), so the same
    seed searches the same way under any load. Only where the time left is too short for that
    population's first scoring, and the run is bound by its time limit anyway, does the clock shrink
    it: a small search is better than none. One arena's GA and the memories' both ask this before
    building their islands, and keep a starting plan when it says None (:func:`kept_reason` of
    :data:`NO_GENERATION_FITS`).
    """
    per_individual = seconds_per_decode / max(1, native.threads())
    if per_individual * settings.population * settings.islands <= left:
        return settings
    affordable = int(left / max(per_individual, 1e-12))
    if affordable < 4:
        return None
    islands = max(1, min(settings.islands, affordable // settings.population))
    population = min(settings.population, affordable // islands)
    return replace(
        settings, islands=islands, population=population, elite=min(settings.elite, population - 1)
    )


def kept_reason(reason: str, kept: str) -> str:
    """The stop reason of a search that returns the plan of the algorithm ``kept`` as its own."""
    return f"{reason}; {kept}'s plan kept"


def first_generation_seconds(settings: GASettings, building_seconds: float) -> float:
    """An upper estimate of the first generation's time, from the time building the islands took.

    Building scores one population per island; a generation may score about
    twice as many, so the building time alone underestimates it.
    """
    return building_seconds * most_scored_per_generation(settings) / settings.population


def seconds_left(settings: GASettings, started: float) -> float | None:
    """Of the time limit, what is left since ``started`` (None: no time limit)."""
    return None if settings.time_limit is None else settings.time_limit - (time.perf_counter() - started)


@dataclass
class Pacing:
    """Which step still fits the time left: a generation, the local search alone, or none.

    A step as long as the last one of its kind (at first, an estimate) that
    would end past the time limit is not started: checking the clock only
    after a long generation ended overruns the limit, and stopping once a
    generation no longer fits leaves part of the budget unused. So the
    search then runs each island's local search alone (a few hole moves from
    its best individuals, decoded from where they depart from them) as long
    as one fits. A generation slowed once (the machine stalled) would then
    stop every later one: each local search's time, scaled by the share of a
    generation's scoring it does (``local_search_share``, 0: never), lowers
    the generation's estimate again.
    """

    generation_seconds: float
    local_search_seconds: float
    has_local_search: bool
    local_search_share: float = 0.0

    @classmethod
    def for_search(cls, settings: GASettings, generation_seconds: float) -> Pacing:
        """Estimate the local search as the share of a generation's scoring it does."""
        share = settings.local_search / most_scored_per_generation(settings)
        return cls(generation_seconds, generation_seconds * share, settings.local_search > 0, share)

    def next_step(self, seconds_left: float | None) -> str | None:
        if seconds_left is None or self.generation_seconds <= seconds_left:
            return GENERATION
        if self.has_local_search and self.local_search_seconds <= seconds_left:
            return LOCAL_SEARCH
        return None

    def measured(self, step: str, seconds: float) -> None:
        if step == GENERATION:
            self.generation_seconds = seconds
            return
        self.local_search_seconds = seconds
        if self.local_search_share > 0:
            reckoned = GENERATION_MARGIN * seconds / self.local_search_share
            self.generation_seconds = min(self.generation_seconds, reckoned)

    def run(self, step: str, islands: Iterable[Island]) -> None:
        """Run ``step`` on every island and keep its time for the next decision."""
        started = time.perf_counter()
        for island in islands:
            island.step() if step == GENERATION else island.local_search()
        self.measured(step, time.perf_counter() - started)
