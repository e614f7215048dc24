"""Plans: verified offsets plus what a user wants to know about them.

:func:`make_plan` is the only way the library builds a :class:`Plan`, and it
verifies the offsets first: a plan that leaves the library is a valid plan.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaplanner.problem import Problem
from gaplanner.verify import verify


@dataclass(frozen=True, eq=False)
class Plan:
    """A verified placement of every block of a problem."""

    algorithm: str
    problem: Problem
    offsets: np.ndarray
    peak: int
    elapsed: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def lower_bound(self) -> int:
        return self.problem.lower_bound

    @property
    def ratio(self) -> float:
        return self.peak / self.lower_bound if self.lower_bound else 1.0

    @property
    def optimal(self) -> bool:
        """Proven optimal: the peak meets the lower bound."""
        return self.peak <= self.lower_bound

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON data (the CLI's and the service's output)."""
        problem = self.problem
        return {
            "name": problem.name,
            "algorithm": self.algorithm,
            "peak": self.peak,
            "lower_bound": self.lower_bound,
            "ratio": round(self.ratio, 6),
            "optimal": self.optimal,
            "elapsed_seconds": round(self.elapsed, 6),
            "blocks": [
                {"id": bid, "offset": int(off), "size": int(size)}
                for bid, off, size in zip(problem.ids, self.offsets, problem.sizes, strict=True)
            ],
            **self.details,
        }

    def to_csv(self) -> str:
        """MiniMalloc's CSV with an ``offset`` column (``id,lower,upper,size,offset``)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["id", "lower", "upper", "size", "offset"])
        p = self.problem
        for i in range(p.n):
            writer.writerow([p.ids[i], p.lower[i], p.upper[i], p.sizes[i], self.offsets[i]])
        return out.getvalue()


def make_plan(
    problem: Problem,
    offsets: np.ndarray,
    algorithm: str,
    started: float,
    **details: Any,
) -> Plan:
    """Verify ``offsets`` and wrap them in a :class:`Plan` (``started``: a perf_counter time)."""
    offsets = np.asarray(offsets, np.int64)
    peak = int((offsets + problem.sizes).max())
    verify(problem, offsets, peak)
    return Plan(algorithm, problem, offsets, peak, time.perf_counter() - started, details)
