"""When Ray pays off: a rough duration of the search against a local Ray's start-up cost."""

from __future__ import annotations

import math
import os

from gaplanner.problem.problem import Problem
from gaplanner.search.distributed.session import cluster_address, ray_available, ray_running
from gaplanner.search.ga import GASettings

#: Cost of one evaluation on one thread: per conflict-list entry, and per individual.
SECONDS_PER_ENTRY = 1e-8
SECONDS_PER_INDIVIDUAL = 2e-5


def expected_search_seconds(problem: Problem, settings: GASettings) -> float:
    """A rough in-process duration of the search, from its limits (inf when only stalling ends it).

    The time limit, or the evaluations that the generation or evaluation limit
    allows times a cost per evaluation (:data:`SECONDS_PER_ENTRY` per
    conflict-list entry plus :data:`SECONDS_PER_INDIVIDUAL`).
    """
    per_evaluation = SECONDS_PER_ENTRY * 2 * problem.conflicts.edge_count + SECONDS_PER_INDIVIDUAL
    limits = [math.inf]
    if settings.time_limit is not None:
        limits.append(settings.time_limit)
    if settings.generations is not None:
        limits.append((settings.generations + 1) * settings.population * settings.islands * per_evaluation)
    if settings.max_evaluations is not None:
        limits.append(settings.max_evaluations * per_evaluation)
    return min(limits)


def ray_pays_off(problem: Problem, settings: GASettings, workers: int, address: str | None = None) -> bool:
    """Whether to run the islands on Ray rather than in this process.

    Yes when more than one worker is wanted, Ray is installed, and a cluster is
    named (argument or ``RAY_ADDRESS``) or Ray is already running in this
    process: more cores than this process uses. A fresh local Ray only adds
    processes on the cores this process's kernel threads keep busy already
    (docs/results/scaling.md: fewer evaluations per second than in-process in
    every Ray row), so it starts only when ``GAPLANNER_RAY_MIN_SECONDS`` is set
    and the search is expected to last at least that long.
    """
    if workers < 2 or not ray_available():
        return False
    if cluster_address(address) or ray_running():
        return True
    threshold = os.environ.get("GAPLANNER_RAY_MIN_SECONDS")
    return threshold is not None and expected_search_seconds(problem, settings) >= float(threshold)
