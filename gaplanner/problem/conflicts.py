"""Conflict graphs: which blocks may never share memory.

One output (:class:`ConflictGraph`, adjacency in CSR form), built lazily:

* :func:`conflicts_from_intervals` — half-open lifetimes ``[lower, upper)``
  conflict when they overlap. A sweep over blocks sorted by start emits each
  overlapping pair exactly once, so the work is O(n log n + edges).
* Multi-core graphs and vector clocks: :class:`gaplanner.problem.order.OrderConflicts`,
  from happens-before vectors.

Rows of the CSR are not sorted; every edge appears in both rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.native import _conflicts


@dataclass(frozen=True)
class ConflictGraph:
    """Symmetric conflict adjacency in CSR form (``indices[indptr[i]:indptr[i+1]]``)."""

    indptr: np.ndarray  # int64, n + 1
    indices: np.ndarray  # int32

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @property
    def edge_count(self) -> int:
        return len(self.indices) // 2

    def degrees(self) -> np.ndarray:
        return np.diff(self.indptr)

    def neighbors(self, i: int) -> np.ndarray:
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Every conflicting pair once, as two arrays ``(a, b)`` with ``a < b``."""
        rows = np.repeat(np.arange(self.n, dtype=np.int32), self.degrees())
        upper = rows < self.indices
        return rows[upper], self.indices[upper]


def _csr_from_degrees(deg: np.ndarray) -> np.ndarray:
    indptr = np.zeros(len(deg) + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    return indptr


def conflicts_from_intervals(lower: np.ndarray, upper: np.ndarray) -> ConflictGraph:
    """Blocks conflict iff their half-open lifetimes overlap (the pairs built when first read)."""
    return IntervalConflicts(lower, upper)


def _interval_pairs(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(lower, kind="stable").astype(np.int64)
    indptr = _csr_from_degrees(_conflicts.interval_degrees(order, lower, upper))
    return indptr, _conflicts.interval_fill(order, lower, upper, indptr)


def interval_degrees(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per block, how many others' lifetimes overlap its own, in O(n log n) without the pairs.

    Those that start before it ends, less those that ended by its start, less itself.
    """
    started = np.searchsorted(np.sort(lower), upper, side="left")
    ended = np.searchsorted(np.sort(upper), lower, side="right")
    return (started - ended - 1).astype(np.int64)


class IntervalConflicts(ConflictGraph):
    """The conflicts of half-open lifetimes: degrees from the lifetimes, the pair list only when read.

    Decoders, bounds and the verifier of interval problems work from the lifetimes
    alone, so a problem of a million blocks never holds its pairs unless a search
    that needs them (the GA's moves, the exact search) reads ``indptr``/``indices``.
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray) -> None:
        object.__setattr__(self, "lower", np.ascontiguousarray(lower, np.int64))
        object.__setattr__(self, "upper", np.ascontiguousarray(upper, np.int64))
        object.__setattr__(self, "_pairs", None)
        object.__setattr__(self, "_degrees", None)

    def _built(self) -> tuple[np.ndarray, np.ndarray]:
        if self._pairs is None:
            object.__setattr__(self, "_pairs", _interval_pairs(self.lower, self.upper))
        return self._pairs

    @property  # type: ignore[override]
    def indptr(self) -> np.ndarray:
        return self._built()[0]

    @property  # type: ignore[override]
    def indices(self) -> np.ndarray:
        return self._built()[1]

    @property
    def n(self) -> int:
        return len(self.lower)

    @property
    def edge_count(self) -> int:
        return int(self.degrees().sum()) // 2

    @property
    def built(self) -> bool:
        """Whether the pair list has been built."""
        return self._pairs is not None

    def degrees(self) -> np.ndarray:
        """Per block, its conflicts (kept: the decoders, the bounds and the exact search each ask)."""
        if self._degrees is None:
            pairs = self._pairs
            degrees = np.diff(pairs[0]) if pairs is not None else interval_degrees(self.lower, self.upper)
            degrees.setflags(write=False)
            object.__setattr__(self, "_degrees", degrees)
        return self._degrees

    def __repr__(self) -> str:
        return f"IntervalConflicts(n={self.n}, built={self.built})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConflictGraph):
            return NotImplemented
        return np.array_equal(self.indptr, other.indptr) and np.array_equal(self.indices, other.indices)

    __hash__ = None  # type: ignore[assignment]
