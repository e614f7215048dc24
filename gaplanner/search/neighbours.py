"""The pair lists the pair-list decoder reads, and which problems' decodes read them.

The pair-list decoder (:mod:`gaplanner.search.decoder`) gathers each block's
neighbours from a padded copy of the conflict graph's lists; the interval
decoder (:mod:`gaplanner.search.interval_decoder`) finds them from the
lifetimes. :func:`uses_intervals` picks one for a problem.
"""

from __future__ import annotations

import numpy as np

from gaplanner.problem.order import NEIGHBOUR_LANES, PAIR_ENTRIES_LIMIT, OrderIndex, padded_entries
from gaplanner.problem.problem import Problem
from gaplanner.search.interval_decoder import IntervalIndex

# Where a problem's pairs fit, a population decodes faster from them; a single order of an interval
# problem is decoded from the lifetimes, which costs about what building the pair list alone does
# (experiments/bench_decoder.py measures both).


def worst_end(problem: Problem) -> int:
    """No offset reaches the highest pinned block's end plus the sum of sizes and alignment padding."""
    pinned_end = int((problem.pinned + problem.sizes)[problem.pinned >= 0].max(initial=0))
    return pinned_end + problem.total_size + int(problem.alignments.max()) * problem.n


def uses_intervals(problem: Problem, degrees: np.ndarray | None = None, population: bool = True) -> bool:
    """Whether ``problem``'s decodes place blocks from their lifetimes rather than a pair list.

    Only interval problems can. A single order always does; a population does when
    the padded pair list would hold more than ``PAIR_ENTRIES_LIMIT`` entries or the pair
    decoder's packed keys (offset and neighbour index in 62 bits) would overflow.
    """
    if not problem.interval_conflicts:
        return False
    if not population:
        return True
    degrees = problem.conflicts.degrees() if degrees is None else degrees
    padded = padded_entries(degrees)
    index_bits = max(1, int(degrees.max(initial=0)).bit_length())
    return padded > PAIR_ENTRIES_LIMIT or worst_end(problem).bit_length() + index_bits > 62


def padded_neighbours(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The neighbour lists, each padded to a multiple of ``NEIGHBOUR_LANES`` with the block ``n``.

    Block ``n`` is the range table's never-placed row. The indices are unsigned.
    """
    n, degrees = len(indptr) - 1, np.diff(indptr)
    padded = -(-degrees // NEIGHBOUR_LANES) * NEIGHBOUR_LANES
    padded_indptr = np.zeros(n + 1, np.int64)
    np.cumsum(padded, out=padded_indptr[1:])
    padded_indices = np.full(padded_indptr[-1], n, np.uint32)
    for b in range(n):  # a list at a time: no temporary the size of the graph
        padded_indices[padded_indptr[b] : padded_indptr[b] + degrees[b]] = indices[indptr[b] : indptr[b + 1]]
    return padded_indptr, padded_indices


def uses_order_index(problem: Problem, population: bool = True) -> bool:
    """Whether a multi-core problem's decodes place blocks from its happens-before vectors.

    They do when its pair list was not built (too large: see
    :data:`gaplanner.problem.order.PAIR_ENTRIES_LIMIT`), or when the pair decoder's
    packed keys would overflow. ``population`` is the same choice either way.
    """
    del population
    if problem.interval_conflicts or problem.happens_before is None:
        return False
    if not getattr(problem.conflicts, "built", True):
        return True
    index_bits = max(1, int(problem.conflicts.degrees().max(initial=0)).bit_length())
    return worst_end(problem).bit_length() + index_bits > 62


def pair_free_index(
    problem: Problem, population: bool = True, pairs: bool | None = None
) -> IntervalIndex | OrderIndex | None:
    """What ``problem``'s decodes place blocks from instead of a pair list, or None for the pair list.

    ``pairs``: True for the pair list, False for the lifetimes (interval problems) or the
    happens-before vectors (multi-core ones), None to choose as :func:`uses_intervals` and
    :func:`uses_order_index` do.
    """
    if pairs is True:
        return None
    if problem.interval_conflicts and (pairs is False or uses_intervals(problem, None, population)):
        return IntervalIndex.of(problem.lower, problem.upper)
    if problem.happens_before is not None and (pairs is False or uses_order_index(problem, population)):
        return OrderIndex.of(problem.happens_before)
    return None
