"""Where each operator of a multi-core graph runs, and what surely runs after it, per core."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.documents.schema import Document


@dataclass(frozen=True)
class Cores:
    """Where each operator of a multi-core graph runs, and what surely runs after it, per core.

    A core runs its operators in program order, so the operators of a core that
    surely run after a given one are a suffix of that core's program:
    ``first_after`` keeps where it starts, in memory O(operators x cores).
    """

    core: np.ndarray  # int64 per position: its operator's core, numbered 0..cores-1
    step: np.ndarray  # int64 per position: its operator's index in its core's program
    #: (positions, cores) int64: the first step of each core whose operator runs strictly after the one at
    #: the position (the core's length where none does)
    first_after: np.ndarray
    by_core: np.ndarray  # int64: the positions by core, then step
    core_ptr: np.ndarray  # int64 (cores + 1): where each core's positions start in ``by_core``

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.core_ptr)

    def position(self, core: int, steps: np.ndarray) -> np.ndarray:
        """The positions of ``core``'s operators at ``steps``."""
        return self.by_core[self.core_ptr[core] + steps]


def cores_of(doc: Document, order: list[int], succ: list[set[int]], position: np.ndarray) -> Cores:
    """Each position's core and step, and per core the first step surely after it (see :class:`Cores`).

    Walked from the last position back: what surely runs after an operator is
    each successor and what surely runs after it.
    """
    ops = doc.operators or []
    core = np.unique(np.array([ops[k].core for k in order], np.int64), return_inverse=True)[1].astype(
        np.int64
    )
    lengths = np.bincount(core)
    core_ptr = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=core_ptr[1:])
    by_core = np.lexsort((np.arange(len(core)), core)).astype(np.int64)
    step = np.empty(len(core), np.int64)
    step[by_core] = np.arange(len(core)) - core_ptr[core[by_core]]
    first = np.tile(lengths.astype(np.int64), (len(order), 1))
    for p in range(len(order) - 1, -1, -1):
        row = first[p]
        for v in succ[order[p]]:
            q = position[v]
            np.minimum(row, first[q], out=row)
            row[core[q]] = min(row[core[q]], step[q])
    return Cores(core, step, first, by_core, core_ptr)
