"""The genetic search over allocation orders.

The modules follow the search's pipeline:

* :mod:`~gaplanner.search.ga.settings` — :class:`GASettings` and their checks;
* :mod:`~gaplanner.search.ga.island` — one population and its operators (:class:`Island`),
  its initial orders and ring migration between islands;
* :mod:`~gaplanner.search.ga.budget` — fitting the population to a time limit and pacing
  the steps within it;
* :mod:`~gaplanner.search.ga.termination` — when to stop;
* :mod:`~gaplanner.search.ga.loop` — :func:`evolve`, the loop itself (one arena's and the memories'
  islands), and :func:`run_ga`, one arena's search around it.

Several islands (populations started from different initial orders) evolve
side by side with ring migration; :func:`run_ga` runs them in-process,
:mod:`gaplanner.search.distributed` on Ray workers.
"""

from gaplanner.plans.plan import GenerationRecord
from gaplanner.search.ga.budget import GENERATION, LOCAL_SEARCH, Pacing, fit_population_to_budget
from gaplanner.search.ga.island import Island, heuristic_orders, make_island, make_islands, migrate
from gaplanner.search.ga.loop import (
    Exchange,
    ProgressCallback,
    evolve,
    generation_record,
    plan_at_bound,
    run_ga,
)
from gaplanner.search.ga.settings import GASettings, most_scored_per_generation
from gaplanner.search.ga.termination import StopCheck, Termination

__all__ = [
    "GENERATION",
    "LOCAL_SEARCH",
    "Exchange",
    "GASettings",
    "GenerationRecord",
    "Island",
    "Pacing",
    "ProgressCallback",
    "StopCheck",
    "Termination",
    "evolve",
    "fit_population_to_budget",
    "generation_record",
    "heuristic_orders",
    "make_island",
    "make_islands",
    "migrate",
    "most_scored_per_generation",
    "plan_at_bound",
    "run_ga",
]
