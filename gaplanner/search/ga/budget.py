"""Spending a time limit: a population the budget affords, and pacing steps so none overruns it.

On the largest inputs one first-fit decode takes seconds and a generation
tens of them. So the search fits its population to the budget before it
starts, gives up on searching when not even the first generation fits, and,
once a whole generation no longer fits in the time left, runs the islands'
local search alone for as long as one fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numba

from gaplanner.problem.problem import Problem
from gaplanner.search.decoder import Decoder
from gaplanner.search.ga.island import Island
from gaplanner.search.ga.settings import GASettings, most_scored_per_generation
from gaplanner.search.load_decoders import load_decoder

GENERATION, LOCAL_SEARCH = "generation", "local search"
#: Why a search ends before its first generation (its starting plan kept): not even that fits the time left.
NO_GENERATION_FITS = "time limit: no generation fits the budget"


def fit_population_to_budget(
    problem: Problem,
    settings: GASettings,
    seconds_per_decode: float | None = None,
    seconds: float | None = None,
) -> GASettings:
    """Fewer islands, then a smaller population, so that a time-limited search runs about 20 generations.

    On the largest inputs one first-fit decode takes seconds (tens of millions of
    conflict edges); a full-size population would use the whole budget before
    its first generation. Islands go first: they buy diversity for long
    searches, while a population too small stops the search from working. The
    cost of one decode is measured (here, or by the caller as the first-fit
    baseline's time), not guessed. ``seconds``: the time the search has (default:
    the settings' time limit).
    """
    seconds = settings.time_limit if seconds is None else seconds
    if seconds is None or seconds == math.inf:
        return settings
    if seconds_per_decode is None:
        load_decoder()  # the first call in a process loads the compiled decoder: not part of the cost
        started = time.perf_counter()
        Decoder.for_problem(problem).decode(problem.start_order())
        seconds_per_decode = time.perf_counter() - started
    seconds_per_decode /= max(1, numba.get_num_threads())
    affordable = int(seconds / (20 * max(seconds_per_decode, 1e-9)))  # individuals a generation
    islands = max(1, min(settings.islands, affordable // settings.population))
    population = max(4, min(settings.population, affordable // islands))
    elite = min(settings.elite, population - 1)
    return replace(settings, islands=islands, population=population, elite=elite)


def first_generation_too_costly(settings: GASettings, seconds_per_decode: float, left: float) -> bool:
    """True when scoring the first population alone would take more than the ``left`` seconds.

    One arena's GA and the memories' both ask this before building their islands, and keep a
    starting plan instead (:func:`kept_reason` of :data:`NO_GENERATION_FITS`).
    """
    cost = seconds_per_decode * settings.population * settings.islands / max(1, numba.get_num_threads())
    return cost > left


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
    as one fits.
    """

    generation_seconds: float
    local_search_seconds: float
    has_local_search: bool

    @classmethod
    def for_search(cls, settings: GASettings, generation_seconds: float) -> Pacing:
        """Estimate the local search as the share of a generation's scoring it does."""
        share = settings.local_search / most_scored_per_generation(settings)
        return cls(generation_seconds, generation_seconds * share, settings.local_search > 0)

    def next_step(self, seconds_left: float | None) -> str | None:
        if seconds_left is None or self.generation_seconds <= seconds_left:
            return GENERATION
        if self.has_local_search and self.local_search_seconds <= seconds_left:
            return LOCAL_SEARCH
        return None

    def measured(self, step: str, seconds: float) -> None:
        if step == GENERATION:
            self.generation_seconds = seconds
        else:
            self.local_search_seconds = seconds

    def run(self, step: str, islands: Iterable[Island]) -> None:
        """Run ``step`` on every island and keep its time for the next decision."""
        started = time.perf_counter()
        for island in islands:
            island.step() if step == GENERATION else island.local_search()
        self.measured(step, time.perf_counter() - started)
