"""When a search stops: a limit of its settings, the lower bound, or a caller's stop request."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gaplanner.deadline import Deadline
from gaplanner.search.ga.settings import GASettings

#: Asked between generations; True stops the search, which returns its best plan so far.
StopCheck = Callable[[], bool]


@dataclass
class Termination:
    """When to stop: limits from the settings, the lower bound, or a caller's stop request.

    ``by_cost``: the search minimises an access cost first (across memories),
    then the peak; ``lower_bound`` is then the cost's bound, and an
    improvement is a lower cost, or an equal cost with a lower peak.

    ``deadline``: the run's (see :mod:`gaplanner.deadline`), which replaces the settings' time limit
    counted from ``started``.
    """

    settings: GASettings
    lower_bound: float
    should_stop: StopCheck | None = None
    started: float = field(default_factory=time.perf_counter)
    by_cost: bool = False
    best: tuple[float, ...] | None = None
    last_improvement: int = 0
    deadline: Deadline | None = None

    def reason(
        self, generation: int, best_peak: int, evaluations: int = 0, best_cost: float | None = None
    ) -> str | None:
        """Why the search stops after ``generation``, or None to go on (``best_cost``: with ``by_cost``,
        None while no plan was found)."""
        s = self.settings
        key = (math.inf if best_cost is None else best_cost, best_peak) if self.by_cost else (best_peak,)
        if self.best is None or key < self.best:
            self.best, self.last_improvement = key, generation
        if key[0] <= self.lower_bound:
            return "lower bound reached"
        if self.should_stop is not None and self.should_stop():
            return "stopped by request"
        if s.generations is not None and generation >= s.generations:
            return "generation limit"
        if self._late():
            return "time limit"
        if s.max_evaluations is not None and evaluations >= s.max_evaluations:
            return "evaluation limit"
        if s.stall_generations is not None and generation - self.last_improvement >= s.stall_generations:
            return "stalled"
        return None

    def _late(self) -> bool:
        if self.deadline is not None:
            return self.deadline.passed()
        limit = self.settings.time_limit
        return limit is not None and time.perf_counter() - self.started >= limit
