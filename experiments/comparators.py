"""Other allocator libraries, run side by side in the benchmarks (optional extra ``compare``).

omnimalloc (https://github.com/fpedd/omnimalloc, ``pip install -e '.[compare]'``)
is where the GA issue's reference figures come from: a C++ first-fit placer
called once per order from Python, its DEAP genetic allocator, its branch
and bound (``SupermallocAllocator``) and its greedy portfolio
(``OmniAllocator``, which also takes vector clocks). Timing the placer in the same process,
in rounds that take turns with ours, gives a ratio that the speed of a shared
machine does not move. Without the library the helpers return nothing
(``None``, an empty dict) and the benchmarks leave those columns out or print
``-``. The search itself never uses it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gaplanner import Problem

try:
    from omnimalloc import allocate
    from omnimalloc._cpp import Allocation, FirstFitPlacer
    from omnimalloc.allocators import GeneticAllocator, OmniAllocator, SupermallocAllocator
except ImportError:  # the extra is not installed
    FirstFitPlacer = None


def _allocations(problem: Problem) -> list:
    """One omnimalloc allocation per block: its lifetime, or its vector clocks for a multi-stream problem."""
    if problem.clocks is not None:
        lower = [tuple(clock) for clock in problem.clocks.lower.tolist()]
        upper = [tuple(clock) for clock in problem.clocks.upper.tolist()]
    else:
        lower, upper = problem.lower.tolist(), problem.upper.tolist()
    lifetimes = zip(problem.sizes.tolist(), lower, upper, strict=True)
    return [Allocation(b, size, lo, hi) for b, (size, lo, hi) in enumerate(lifetimes)]


def _placer(make: Callable) -> Callable[[Problem], np.ndarray]:
    """Offsets per block from the omnimalloc allocator ``make()`` builds afresh for each problem."""

    def place(problem: Problem) -> np.ndarray:
        placed = allocate(_allocations(problem), allocator=make())
        offsets = np.empty(problem.n, np.int64)
        for allocation in placed:
            offsets[allocation.id] = allocation.offset
        return offsets

    return place


def omnimalloc_first_fit(problem: Problem) -> Callable[[np.ndarray], np.ndarray] | None:
    """Peaks of a population's orders by omnimalloc's C++ first-fit placer, one call per order.

    ``None`` without omnimalloc, or for a problem whose conflicts are not
    overlapping lifetimes (the placer knows only those).
    """
    if FirstFitPlacer is None or not problem.interval_conflicts:
        return None
    placer = FirstFitPlacer(_allocations(problem))

    def decode(orders: np.ndarray) -> np.ndarray:
        return np.array([placer.peak(order.tolist()) for order in orders], np.int64)

    return decode


def omnimalloc_allocators(time_limit: float) -> dict[str, Callable[[Problem], np.ndarray]]:
    """omnimalloc's genetic allocator and branch and bound at ``time_limit`` seconds: offsets per block.

    The branch and bound runs twice: at its default thread count (the
    machine's cores) and with 6 threads, which lets it try two bound targets
    at once even on 2 cores.

    Empty without omnimalloc. Both take interval problems only; check the
    offsets they return with :func:`gaplanner.plans.verify` before trusting a peak.
    """
    if FirstFitPlacer is None:
        return {}
    allocators = {
        "omnimalloc GA": lambda: GeneticAllocator(timeout=time_limit, max_generations=2**31),
        "omnimalloc B&B": lambda: SupermallocAllocator(timeout=time_limit),
        # Its search tries threads // 3 bound targets at once: its best setting on few cores.
        "omnimalloc B&B, 6 threads": lambda: SupermallocAllocator(timeout=time_limit, num_threads=6),
    }
    return {name: _placer(make) for name, make in allocators.items()}


def omnimalloc_portfolio() -> Callable[[Problem], np.ndarray] | None:
    """omnimalloc's greedy portfolio (``OmniAllocator``): offsets per block, or None without omnimalloc.

    It takes vector clocks (linearizing them where the order allows), which
    the branch and bound does not, so it stands in for omnimalloc on
    multi-stream problems; it runs once, without a time limit.
    """
    return None if FirstFitPlacer is None else _placer(OmniAllocator)
