"""How much exact search a GA generation is worth: the quanta of the probes beside the GA.

Side by side (:mod:`gaplanner.search.side_by_side`) the GA and the exact
probes trade plans once a generation, at points counted in work, and each
waits for the other there. Neither should idle long, so a quantum of the
probes' placements should take about as long as the GA's generation. The
model counts both in their own unit of work:

* **The GA's unit is the evaluation** (one order decoded and scored), counted
  as the GA goes, not predicted from its settings: the population fitted to
  the time limit, repeated children scored again and the local search's
  neighbours all change a generation's evaluations, and a child decodes only
  past the prefix it shares with a parent.
* **A placement of the probes costs about what an evaluation does**, up to a
  factor that the problem's shape barely moves on interval lifetimes. Both
  are linear in the blocks: a decode places every block among its placed
  neighbours, and every placement of the depth-first search scans the blocks
  of its part for the next candidate, walks the part to split it and updates
  the floors of the cliques (time sections) its neighbours belong to. Denser
  lifetimes make both dearer alike (more neighbours to sweep past, more
  sections per block), so the ratio stays within a small band from 150 to
  tens of thousands of blocks (:data:`PLACEMENTS_PER_EVALUATION`). Blocks the
  probes do not search (other parts, parts at their bound, kept blocks) cost
  the GA and not the probes: the ratio grows with the blocks over the parts'
  mean size, each part weighed by its size (the probes' placements go on
  longest in the largest parts; a part of a few blocks is done at once).
* **On a conflict graph** (multi-core lifetimes) the decoder's gather reads a
  block's every conflict, and its first-fit sweeps once more for each placed
  neighbour it jumps past, while the exact search's cliques there are grown
  greedily and few per block: an evaluation grows about with the square of
  the mean degree where a placement does not (:data:`GRAPH_DEGREE`).

A quantum aims past the generation (:data:`QUANTUM_GENERATIONS`): the
model is a band, not a point, and of the two threads the probes should
rarely be the one that waits. Most of the default search's gains on hard
instances are theirs, and where other work holds the process to a share of
the cores, the GA's time comes out of theirs; the GA waits for about a
generation at most.
Trading every K generations instead would only make the waits rarer, not
shorter; quanta of the right size make them short.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.problem.problem import Problem
from gaplanner.search.exact import ExactSearch
from gaplanner.search.ga.settings import GASettings

#: Placements of the exact probes that take about as long as one evaluation of the GA, on interval
#: lifetimes with every block in one part (see the module's text).
PLACEMENTS_PER_EVALUATION = 10.0
#: On a conflict graph, the mean degree at which an evaluation costs twice as many placements.
GRAPH_DEGREE = 450.0
#: A quantum's length in the GA's generations, as the model reckons them (see the module's text).
QUANTUM_GENERATIONS = 2.0


def placements_per_evaluation(problem: Problem, part_sizes: list[int]) -> float:
    """Placements about as long as one GA evaluation of ``problem``, whose parts the probes search
    have ``part_sizes`` blocks (see the module's text)."""
    sizes = np.asarray(part_sizes or [problem.n], np.float64)
    mean_part = float((sizes**2).sum() / sizes.sum())
    ratio = PLACEMENTS_PER_EVALUATION * problem.n / max(1.0, mean_part)
    if not problem.interval_conflicts:
        degree = float(problem.conflicts.degrees().mean()) if problem.n else 0.0
        ratio *= 1.0 + (degree / GRAPH_DEGREE) ** 2
    return ratio


@dataclass(frozen=True)
class Pace:
    """The exact probes' quanta beside the GA: ``per_evaluation`` placements for each evaluation the GA
    made since the last trade (:data:`QUANTUM_GENERATIONS` times the model's); ``first_quantum``, while
    the GA scores its first populations."""

    per_evaluation: float
    first_quantum: int

    @classmethod
    def of(cls, problem: Problem, search: ExactSearch, settings: GASettings) -> Pace:
        """The pace for ``search`` beside a GA with ``settings`` (its first populations: one per island)."""
        per = QUANTUM_GENERATIONS * placements_per_evaluation(problem, search.part_sizes())
        return cls(per, max(1, round(per * settings.islands * settings.population)))

    def quantum(self, evaluations: int) -> int:
        """Placements for a generation after one of ``evaluations``."""
        return max(1, round(self.per_evaluation * evaluations))
