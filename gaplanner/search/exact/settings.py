"""The exact search's settings and their checks."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gaplanner.errors import InputError


@dataclass(frozen=True)
class ExactSettings:
    """Exact search settings: it stops at the time limit, or when the plan is proved optimal."""

    time_limit: float = 10.0
    #: Threads: one runs the portfolio of probes (below), each other one draws targets at random
    #: (:class:`RandomTargets`); None: one per core this process may use.
    threads: int | None = None
    #: The random targets' draws.
    seed: int = 0

    def __post_init__(self) -> None:
        threads = self.threads
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InputError(f"must be a whole number of threads, at least 1, got {threads!r}", "threads")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputError(f"must be a whole number, got {self.seed!r}", "seed")
        limit = self.time_limit
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not math.isfinite(limit):
            raise InputError(f"must be a positive number of seconds, got {limit!r}", "time_limit")
        if limit <= 0:
            raise InputError(f"must be a positive number of seconds, got {limit}", "time_limit")


# --- targets: probes from the lower bound up, and below the best plan known -----------------------
