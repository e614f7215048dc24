"""A search's convergence trace, thinned for the service's answers and the plan viewer."""

from __future__ import annotations

from typing import Any


def thin_trace(records: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most about ``limit`` records: every improvement of the best peak, the last, evenly spaced others."""
    if len(records) <= limit:
        return records
    step = max(1, len(records) // limit)
    keep = [
        r
        for i, r in enumerate(records)
        if i % step == 0 or i == len(records) - 1 or r["best_peak"] < records[i - 1]["best_peak"]
    ]
    return keep
