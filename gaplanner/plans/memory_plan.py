"""Plans across memories: each block's memory and offset, verified, with the access cost.

:func:`make_memory_plan` is the only way the library builds a
:class:`MemoryPlan`, and it verifies the placement first (every memory's
capacity, conflicts within each memory, pins, alignments, and for a graph the
model's own rules tensor by tensor).
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gaplanner.errors import PlanError
from gaplanner.plans.plan import device_cells, device_columns
from gaplanner.plans.tensor_check import check_tensor_plan
from gaplanner.plans.verify import find_memory_violation
from gaplanner.problem.memories import MemorySystem
from gaplanner.problem.problem import Problem


@dataclass(frozen=True, eq=False)
class MemoryPlan:
    """A verified placement of every block of a problem in its memories.

    ``peaks``: per memory, the highest byte used; ``cost``: the total access
    cost (bytes written and read, times the cost per byte of their memory).
    ``lower_bound`` / ``optimal`` are about the cost.
    """

    algorithm: str
    problem: Problem
    memory_of: np.ndarray
    offsets: np.ndarray
    peaks: np.ndarray
    cost: float
    elapsed: float
    #: set by a search: its generations and the orders it decoded
    generations: int | None = None
    evaluations: int | None = None

    @property
    def system(self) -> MemorySystem:
        assert self.problem.memories is not None
        return self.problem.memories

    @property
    def peak(self) -> int:
        """The bytes used, summed over the memories."""
        return int(self.peaks.sum())

    @property
    def cost_lower_bound(self) -> float:
        """No plan costs less: every block in the cheapest memory it may use."""
        return self.system.cost_lower_bound()

    @property
    def lower_bound(self) -> float:
        return self.cost_lower_bound

    @property
    def optimal(self) -> bool:
        """Proven optimal: the cost meets the lower bound."""
        return self.cost <= self.cost_lower_bound

    def memory_summary(self) -> list[dict[str, Any]]:
        """Each memory with its capacity, peak, costs and how many blocks it holds."""
        counts = np.bincount(self.memory_of, minlength=len(self.system.memories))
        return [
            {
                "id": m.id,
                "capacity": m.capacity,
                "peak": int(self.peaks[i]),
                "blocks": int(counts[i]),
                "read_cost": m.read_cost,
                "write_cost": m.write_cost,
            }
            for i, m in enumerate(self.system.memories)
        ]

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON data (the CLI's output)."""
        problem, ids = self.problem, self.system.ids
        blocks = [
            {"id": bid, "memory": ids[m], "offset": int(off), "size": int(size)}
            for bid, m, off, size in zip(
                problem.ids, self.memory_of, self.offsets, problem.sizes, strict=True
            )
        ]
        return {
            "name": problem.name,
            "algorithm": self.algorithm,
            "cost": self.cost,
            "cost_lower_bound": self.cost_lower_bound,
            "peak": self.peak,
            "memories": self.memory_summary(),
            "elapsed_seconds": round(self.elapsed, 6),
            "blocks": blocks,
            **({"tensors": self.tensor_rows()} if problem.tensors is not None else {}),
            **({"generations": self.generations} if self.generations is not None else {}),
            **({"evaluations": self.evaluations} if self.evaluations is not None else {}),
        }

    def tensor_rows(self) -> list[dict[str, Any]]:
        """Each tensor with its memory, offset, size and the tensor whose bytes it shares."""
        tensors, ids, names = self.problem.tensors, self.problem.ids, self.system.ids
        assert tensors is not None
        rows = []
        for tid, size, b in zip(tensors.ids, tensors.sizes, tensors.block_of, strict=True):
            row: dict[str, Any] = {
                "id": tid,
                "memory": names[self.memory_of[b]],
                "offset": int(self.offsets[b]),
                "size": int(size),
            }
            if ids[b] != tid:
                row["shares_with"] = ids[b]
            rows.append(row | tensors.device_fields(len(rows)))
        return rows

    def to_csv(self) -> str:
        """``id,lower,upper,size,memory,offset`` (a graph: a row per tensor, plus ``shares_with``)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        p, tensors, names = self.problem, self.problem.tensors, self.system.ids
        if tensors is None:
            writer.writerow(["id", "lower", "upper", "size", "memory", "offset"])
            for i in range(p.n):
                writer.writerow(
                    [p.ids[i], p.lower[i], p.upper[i], p.sizes[i], names[self.memory_of[i]], self.offsets[i]]
                )
            return out.getvalue()
        extra = device_columns(tensors)
        writer.writerow(["id", "lower", "upper", "size", "memory", "offset", "shares_with", *extra])
        for t, row in enumerate(self.tensor_rows()):
            writer.writerow(
                [row["id"], tensors.lower[t], tensors.upper[t], row["size"], row["memory"], row["offset"],
                 row.get("shares_with", ""), *device_cells(row, extra)]
            )  # fmt: skip
        return out.getvalue()


def _tensor_memories(problem: Problem, memory_of: np.ndarray, offsets: np.ndarray) -> tuple[dict, dict]:
    tensors, names = problem.tensors, problem.memories.ids  # type: ignore[union-attr]
    assert tensors is not None
    at = {tid: int(offsets[b]) for tid, b in zip(tensors.ids, tensors.block_of, strict=True)}
    where = {tid: names[memory_of[b]] for tid, b in zip(tensors.ids, tensors.block_of, strict=True)}
    return at, where


def make_memory_plan(
    problem: Problem,
    memory_of: np.ndarray,
    offsets: np.ndarray,
    algorithm: str,
    started: float,
    *,
    generations: int | None = None,
    evaluations: int | None = None,
) -> MemoryPlan:
    """Verify a placement across memories and wrap it in a :class:`MemoryPlan`."""
    memory_of, offsets = np.asarray(memory_of, np.int64), np.asarray(offsets, np.int64)
    violation = find_memory_violation(problem, memory_of, offsets)
    if violation is None and problem.document is not None:
        at, where = _tensor_memories(problem, memory_of, offsets)
        violation = check_tensor_plan(problem.document, problem.rules, at, memories=where)
    if violation is not None:
        raise PlanError(f"the plan breaks a rule: {violation}")
    system = problem.memories
    assert system is not None
    peaks = np.zeros(len(system.memories), np.int64)
    np.maximum.at(peaks, memory_of, offsets + problem.sizes)
    elapsed = time.perf_counter() - started
    cost = system.cost(memory_of)
    return MemoryPlan(algorithm, problem, memory_of, offsets, peaks, cost, elapsed, generations, evaluations)
