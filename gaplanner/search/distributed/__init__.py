"""The island-model GA on Ray: units of island work on whichever worker is free, ring migration.

The islands are :class:`gaplanner.search.ga.Island` objects built by
:func:`gaplanner.search.ga.make_island`, so island ``k`` is the same population with
the same random stream wherever it lives. The work is a stream of units: one
island's generations up to its next migration, starting with the best orders
island ``k-1`` had at that migration (:meth:`Island.emigrants` /
:meth:`Island.immigrate`, as :func:`gaplanner.search.ga.migrate` does in-process).
A unit waits for its own island and for island ``k-1``, never for all islands;
it runs on the worker expected to finish it first, so a faster worker runs more
of them and islands move between workers with their state. The driver keeps the
global best, merges the per-island records into one convergence trace and
verifies the final plan with :func:`gaplanner.plans.plan.make_plan`.

Consequences:

- A search ended by a generation, stall or evaluation limit (not the clock)
  gives the same plan as :func:`gaplanner.search.ga.run_ga` with the same settings and
  island count, on any number of workers, whichever worker ran which unit, and
  whether or not a worker died on the way. (Ended by the lower bound, the peak is
  the same, but the offsets may come from another island: islands do not stop in
  the same generation.)
- Fault tolerance: after every unit the worker returns its island's state
  (population, random-generator state, counters). When a worker process dies the
  driver starts a new worker, and the islands it held run again from that state.

The modules: :mod:`~gaplanner.search.distributed.session` (connecting to Ray),
:mod:`~gaplanner.search.distributed.cost` (when Ray pays off),
:mod:`~gaplanner.search.distributed.worker` (the island actor and its units),
:mod:`~gaplanner.search.distributed.driver` (starting and restarting workers),
:mod:`~gaplanner.search.distributed.schedule` (which unit next, on which worker) and
:mod:`~gaplanner.search.distributed.search` (the loop, the merged trace, the plan).
Ray is imported lazily: the core library never needs it. :func:`solve_islands`
is what :func:`gaplanner.solve` calls for ``workers > 1``.
"""

from gaplanner.search.distributed.cost import expected_search_seconds, ray_pays_off
from gaplanner.search.distributed.driver import Driver
from gaplanner.search.distributed.search import run_islands, solve_islands
from gaplanner.search.distributed.session import local_ray, ray_session, sigterm_unwinds
from gaplanner.search.distributed.worker import IslandReport, IslandState, IslandWorker, Unit

__all__ = [
    "Driver",
    "IslandReport",
    "IslandState",
    "IslandWorker",
    "Unit",
    "expected_search_seconds",
    "local_ray",
    "ray_pays_off",
    "ray_session",
    "run_islands",
    "sigterm_unwinds",
    "solve_islands",
]
