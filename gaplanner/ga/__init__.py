"""The genetic search over allocation orders.

The modules follow the search's pipeline:

* :mod:`~gaplanner.ga.settings` — :class:`GASettings` and their checks;
* :mod:`~gaplanner.ga.island` — one population and its operators (:class:`Island`),
  its initial orders and ring migration between islands;
* :mod:`~gaplanner.ga.budget` — fitting the population to a time limit and pacing
  the steps within it;
* :mod:`~gaplanner.ga.termination` — when to stop;
* :mod:`~gaplanner.ga.loop` — :func:`run_ga`, the loop itself.

Several islands (populations started from different initial orders) evolve
side by side with ring migration; :func:`run_ga` runs them in-process,
:mod:`gaplanner.distributed` on Ray workers.
"""

from gaplanner.ga.budget import GENERATION, LOCAL_SEARCH, Pacing, fit_population_to_budget
from gaplanner.ga.island import Island, heuristic_orders, make_island, make_islands, migrate
from gaplanner.ga.loop import Exchange, ProgressCallback, generation_record, plan_at_bound, run_ga
from gaplanner.ga.settings import GASettings, most_scored_per_generation
from gaplanner.ga.termination import StopCheck, Termination
from gaplanner.plan import GenerationRecord

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
