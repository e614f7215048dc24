"""The planning problem: blocks, their conflicts and a lower bound.

:func:`build_problem` is the one entry from an input document to everything
the searches need. Blocks are indexed ``0..n-1`` in document order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.bounds import greedy_clique_bound, max_load
from gaplanner.conflicts import (
    ConflictGraph,
    conflicts_from_intervals,
    conflicts_from_partial_order,
)
from gaplanner.errors import InputError
from gaplanner.graph import analyse_graph, reuse_times
from gaplanner.schema import MAX_INTEGER, Document


@dataclass(frozen=True, eq=False)
class Problem:
    """Blocks to place and the pairs that may not share memory.

    ``lower``/``upper`` are half-open lifetimes on the problem's time axis (the
    buffer list's own times, or positions in a linear extension of a graph's
    operator order). When ``interval_conflicts`` is true two blocks conflict
    exactly when these lifetimes overlap; otherwise (multi-core graphs) the
    conflict graph is the authority and ``reuse_at`` gives, per block, the time
    from which blocks written later may take its space.
    """

    name: str
    ids: tuple[str, ...]
    sizes: np.ndarray
    alignments: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    reuse_at: np.ndarray
    conflicts: ConflictGraph
    interval_conflicts: bool
    lower_bound: int

    def __post_init__(self) -> None:
        # Offsets and peaks are int64: the sizes must add up well inside it.
        if float(self.sizes.astype(np.float64).sum()) > 2.0**62:
            raise InputError("the sizes add up beyond 2**62 bytes", "sizes")

    @property
    def n(self) -> int:
        return len(self.sizes)

    @property
    def total_size(self) -> int:
        return int(self.sizes.sum())

    def start_order(self) -> np.ndarray:
        """Blocks in execution order: by start time, then index."""
        return np.lexsort((np.arange(self.n), self.lower))


def _from_buffers(doc: Document, name: str) -> Problem:
    buffers = doc.buffers or []
    return problem_from_arrays(
        np.array([b.size for b in buffers], np.int64),
        np.array([b.lower for b in buffers], np.int64),
        np.array([b.upper for b in buffers], np.int64),
        ids=tuple(b.id for b in buffers),
        alignment=doc.alignment,
        name=name,
    )


def _interval_problem(
    name: str,
    ids: tuple[str, ...],
    sizes: np.ndarray,
    alignments: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> Problem:
    return Problem(
        name=name,
        ids=ids,
        sizes=sizes,
        alignments=alignments,
        lower=lower,
        upper=upper,
        reuse_at=upper,
        conflicts=conflicts_from_intervals(lower, upper),
        interval_conflicts=True,
        lower_bound=max_load(lower, upper, sizes),
    )


def _from_graph(doc: Document, name: str) -> Problem:
    blocks = analyse_graph(doc)
    if blocks.after_readers is None:
        return _interval_problem(
            name, blocks.ids, blocks.sizes, blocks.alignments, blocks.lower, blocks.upper
        )
    conflicts = conflicts_from_partial_order(blocks.after_readers, blocks.writer)
    return Problem(
        name=name,
        ids=blocks.ids,
        sizes=blocks.sizes,
        alignments=blocks.alignments,
        lower=blocks.lower,
        upper=blocks.upper,
        reuse_at=reuse_times(blocks),
        conflicts=conflicts,
        interval_conflicts=False,
        lower_bound=greedy_clique_bound(
            blocks.lower, blocks.upper, blocks.sizes, conflicts.indptr, conflicts.indices
        ),
    )


def build_problem(doc: Document, name: str | None = None) -> Problem:
    """Blocks, conflicts and lower bound of a validated document."""
    label = name or doc.name or "problem"
    return _from_graph(doc, label) if doc.is_graph else _from_buffers(doc, label)


def _whole_numbers(values: np.ndarray, column: str) -> np.ndarray:
    """``values`` (one column of the buffers) as int64, refusing what a cast would change.

    A cast would truncate 1.5 to 1 and wrap integers beyond int64: a silent
    guess at what the caller meant.
    """
    array = np.asarray(values)
    if array.ndim != 1:
        raise InputError(f"expected a 1-D array, got shape {array.shape}", f"buffers.{column}")
    if array.dtype.kind == "f":
        changed = ~np.isfinite(array) | (array != np.trunc(array)) | (np.abs(array) > MAX_INTEGER)
    elif array.dtype.kind in "iu":
        changed = (array > MAX_INTEGER) | (array < -MAX_INTEGER)
    else:
        raise InputError(f"expected integers, got {array.dtype}", f"buffers.{column}")
    if (bad := np.flatnonzero(changed)).size:
        raise InputError(
            f"must be a whole number within ±2**53, got {array[bad[0]]}", f"buffers[{bad[0]}].{column}"
        )
    return array.astype(np.int64)


def problem_from_arrays(
    sizes: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    ids: tuple[str, ...] | None = None,
    alignment: int = 1,
    name: str = "problem",
) -> Problem:
    """An interval problem straight from arrays (CSV readers, tests, generators)."""
    sizes, lower, upper = (
        _whole_numbers(a, column) for a, column in ((sizes, "size"), (lower, "lower"), (upper, "upper"))
    )
    if isinstance(alignment, bool) or not isinstance(alignment, int | np.integer) or alignment < 1:
        raise InputError(f"must be a positive integer, got {alignment!r}", "alignment")
    if len(sizes) == 0:
        raise InputError("no blocks", "buffers")
    if not (len(sizes) == len(lower) == len(upper)):
        raise InputError("sizes, lower and upper differ in length", "buffers")
    if (bad := np.flatnonzero((sizes <= 0) | (sizes > MAX_INTEGER))).size:
        raise InputError(
            f"size must be positive and at most 2**53, got {sizes[bad[0]]}", f"buffers[{bad[0]}].size"
        )
    if (bad := np.flatnonzero(upper <= lower)).size:
        i = bad[0]
        raise InputError(f"upper ({upper[i]}) must be greater than lower ({lower[i]})", f"buffers[{i}].upper")
    ids = ids if ids is not None else tuple(str(i) for i in range(len(sizes)))
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for i, bid in enumerate(ids):
            if bid in seen:
                raise InputError(f"duplicate buffer id {bid!r}", f"buffers[{i}].id")
            seen.add(bid)
    return _interval_problem(name, ids, sizes, np.full(len(sizes), alignment, np.int64), lower, upper)
