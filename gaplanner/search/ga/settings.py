"""The GA's settings and their checks."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gaplanner.errors import InputError


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
    # Of the time limit, for exact probes in turns before and after the GA
    # (gaplanner.search.side_by_side); 0: the GA
    # alone; None: where the exact search takes the whole problem, the probes side by side with the GA
    # (two cores or more) or in turns with gaplanner.search.side_by_side.AUTO_EXACT_SHARE, else the GA alone.
    exact_share: float | None = None

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
        if self.exact_share is not None and not 0 <= self.exact_share < 1:
            raise InputError(f"must lie in [0, 1), got {self.exact_share}", "exact_share")
        if self.exact_share and self.time_limit is None:
            raise InputError("exact probes share the time limit: give time_limit", "exact_share")
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


def most_scored_per_generation(settings: GASettings) -> int:
    """The most individuals one island scores in a generation (migration aside).

    Its children, up to twice (repeats are mutated and scored again), and the
    local search's neighbours.
    """
    return 2 * (settings.population - settings.elite) + settings.local_search
