"""Plans across memories from one order, and the orders the memories' GA starts from.

Every order is decoded by :class:`gaplanner.search.memories.decoder.MemoryDecoder`
(fastest memory with room, first-fit there).

* ``spill-greedy``: blocks by size, largest first, each into the fastest
  memory with room (ExecuTorch's banked greedy).
* ``first-fit``: the execution order, decoded across memories.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from gaplanner.deadline import Deadline, no_deadline
from gaplanner.errors import DoesNotFit
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.problem.memories import single_memory
from gaplanner.problem.problem import Problem
from gaplanner.search.memories.decoder import MemoryDecoder

#: Estimated seconds of :func:`profile_order` per block and bounded memory (a walk in Python): a high
#: estimate from large synthetic inputs on a loaded 2-core machine.
PROFILE_SECONDS_PER_BLOCK = 2e-5


def spill_order(problem: Problem) -> np.ndarray:
    """Largest block first, ties by earlier start (ExecuTorch's greedy by size)."""
    return np.lexsort((np.arange(problem.n), problem.lower, -problem.sizes))


def density_order(problem: Problem) -> np.ndarray:
    """Blocks by access cost saved per byte of memory-time, highest first (a knapsack's greedy)."""
    assert problem.memories is not None
    accessed = problem.memories.write_bytes + problem.memories.read_bytes
    area = problem.sizes.astype(np.float64) * np.maximum(problem.upper - problem.lower, 1)
    return np.lexsort((np.arange(problem.n), -problem.sizes, -accessed / area))


def profile_order(problem: Problem, priority: np.ndarray) -> np.ndarray:
    """Fill the memories fastest first by ``priority`` (highest first), ignoring fragmentation.

    A block joins a memory when the bytes live there at every moment of its
    lifetime stay within the capacity (a knapsack per moment); the order is
    the fastest memory's blocks, largest first (first-fit packs them best), then
    the next memory's, and so on, then what no bounded memory took.
    """
    system = problem.memories
    assert system is not None
    times, lower = np.unique(problem.lower, return_inverse=True)
    upper = np.searchsorted(times, problem.upper, side="left")
    left = np.flatnonzero(system.pinned_memory < 0)
    left = left[np.argsort(-priority[left], kind="stable")]
    parts = []
    for m, capacity in enumerate(system.capacities):
        if capacity < 0:
            break
        load = np.zeros(len(times), np.int64)
        taken = np.zeros(len(left), bool)
        for k, b in enumerate(left):
            if not system.allowed[b, m]:  # its devices do not reach this memory
                continue
            window = load[lower[b] : max(upper[b], lower[b] + 1)]
            if window.max() + problem.sizes[b] <= capacity:
                window += problem.sizes[b]
                taken[k] = True
        chosen = left[taken]
        parts.append(chosen[np.argsort(-problem.sizes[chosen], kind="stable")])
        left = left[~taken]
    pinned = np.flatnonzero(system.pinned_memory >= 0)
    return np.concatenate([pinned, *parts, left]).astype(np.int64)


def seed_orders(problem: Problem, deadline: Deadline | None = None) -> list[np.ndarray]:
    """The orders a search starts from: the spill order, and memories filled by saving per byte.

    Filling the memories walks the blocks one at a time for each bounded memory: with a ``deadline``
    each such order is made only when its estimate (:data:`PROFILE_SECONDS_PER_BLOCK`) fits the time
    left; the sorted orders always are.
    """
    system = problem.memories
    assert system is not None
    deadline = deadline or no_deadline()
    table = system.cost_table()
    saving = table[:, -1] - table.min(axis=1)
    sizes = problem.sizes.astype(np.float64)
    duration = np.maximum(problem.upper - problem.lower, 1).astype(np.float64)
    by_reads = np.lexsort((-problem.sizes, -(system.read_bytes / sizes)))
    bounded = sum(1 for capacity in system.capacities if capacity >= 0)
    profile_seconds = PROFILE_SECONDS_PER_BLOCK * problem.n * bounded
    profiles = [
        profile_order(problem, priority)
        for priority in (saving / (sizes * duration), saving / sizes / np.sqrt(duration), saving / sizes)
        if deadline.fits(profile_seconds)
    ]
    return [spill_order(problem), *profiles, density_order(problem), problem.start_order(), by_reads]


def plan_placement(
    problem: Problem, memory_of: np.ndarray, offsets: np.ndarray, cost: float, algorithm: str, started: float,
    **search: object,
) -> Plan:  # fmt: skip
    """The verified plan of a decoded order; :class:`DoesNotFit` when some block fit in no memory."""
    if not np.isfinite(cost):
        capacities = ", ".join(f"{m.id} {m.capacity}" for m in problem.memories.memories)  # type: ignore[union-attr]
        raise DoesNotFit(f"{algorithm} found no placement within the memories' capacities ({capacities})")
    return make_plan(problem, offsets, algorithm, started, memory_of=memory_of, **search)  # type: ignore[arg-type]


def plan_order(problem: Problem, order: np.ndarray, algorithm: str) -> Plan:
    """The plan of one order decoded across the memories."""
    started = time.perf_counter()
    p = MemoryDecoder.for_problem(problem).decode(order)
    return plan_placement(problem, p.memory_of[0], p.offsets[0], float(p.costs[0]), algorithm, started)


def spill_greedy(problem: Problem) -> Plan:
    """Largest block first, each into the fastest memory with room."""
    return plan_order(problem, spill_order(problem), "spill-greedy")


def spill_greedy_arena(problem: Problem) -> Plan:
    """``spill-greedy`` on one unbounded arena: largest block first, each at its lowest free offset."""
    started = time.perf_counter()
    one = replace(problem, memories=single_memory(problem, None))
    placement = MemoryDecoder.for_problem(one).decode(spill_order(problem))
    return make_plan(problem, placement.offsets[0], "spill-greedy", started)
