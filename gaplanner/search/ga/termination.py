"""When a search stops: a limit of its settings, the lower bound, or a caller's stop request."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gaplanner.search.ga.settings import GASettings

#: Asked between generations; True stops the search, which returns its best plan so far.
StopCheck = Callable[[], bool]


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
        """Why the search stops after ``generation``, or None to go on."""
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
