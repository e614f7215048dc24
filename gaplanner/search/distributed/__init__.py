"""The island-model GA on Ray: one worker (actor) per group of islands, ring migration.

The islands are :class:`gaplanner.search.ga.Island` objects built by
:func:`gaplanner.search.ga.make_island`, so island ``k`` is the same population with
the same random stream wherever it lives. The driver asks every worker to
evolve its islands up to the next migration (or termination) point, then
moves each island's best orders to the next island of the ring
(:meth:`Island.emigrants` / :meth:`Island.immigrate`, as
:func:`gaplanner.search.ga.migrate` does in-process). It keeps the global best, merges
the per-island records into one convergence trace and verifies the final plan
with :func:`gaplanner.plans.plan.make_plan`.

Consequences:

- A search ended by a generation, stall or evaluation limit (not the clock)
  gives the same plan as :func:`gaplanner.search.ga.run_ga` with the same settings and
  island count, on any number of workers, and whether or not a worker died on
  the way. (Ended by the lower bound, the peak is the same, but the offsets may
  come from another island: workers do not stop in the same generation.)
- Fault tolerance: after every phase each worker returns its islands' state
  (population, scores, random-generator state). When a worker process dies
  the driver starts a new worker, restores its islands from that state and
  repeats the phase.

The modules: :mod:`~gaplanner.search.distributed.session` (connecting to Ray),
:mod:`~gaplanner.search.distributed.cost` (when Ray pays off),
:mod:`~gaplanner.search.distributed.worker` (the island actor),
:mod:`~gaplanner.search.distributed.driver` (starting and restarting workers) and
:mod:`~gaplanner.search.distributed.search` (the phases, the merged trace, the plan).
Ray is imported lazily: the core library never needs it. :func:`solve_islands`
is what :func:`gaplanner.solve` calls for ``workers > 1``.
"""

from gaplanner.search.distributed.cost import expected_search_seconds, ray_pays_off
from gaplanner.search.distributed.driver import Driver
from gaplanner.search.distributed.search import merge_records, run_islands, solve_islands
from gaplanner.search.distributed.session import local_ray, ray_session, sigterm_unwinds
from gaplanner.search.distributed.worker import IslandReport, IslandState, IslandWorker

__all__ = [
    "Driver",
    "IslandReport",
    "IslandState",
    "IslandWorker",
    "expected_search_seconds",
    "local_ray",
    "merge_records",
    "ray_pays_off",
    "ray_session",
    "run_islands",
    "sigterm_unwinds",
    "solve_islands",
]
