"""Happens-before as vectors: the conflicts of multi-core and multi-stream problems without pairs.

Both kinds of multi-core problem say when block ``a`` is surely done before
block ``b`` starts (``a`` may then hand its space to ``b``) by comparing two
vectors, one component per core or stream: ``a`` is before ``b`` when
``release[a] <= acquire[b]`` in every component. Two blocks conflict when
neither is before the other (:class:`HappensBefore`).

* Vector clocks (omnimalloc's multi-stream CSV): ``acquire`` is a buffer's
  start clock and ``release`` its end clock, as they are.
* Multi-core graphs: ``b``'s writer runs at step ``i`` of its core ``h``, and
  the operators surely after every access of ``a`` are, on each core, a
  suffix of that core's program (a core runs its operators in order).
  ``release[a]`` is, per core, the step where that suffix starts;
  ``acquire[b]`` is ``i`` on ``h`` and :data:`FAR` elsewhere; a graph input
  (written before everything) acquires at -1, after nothing.

:class:`OrderIndex` finds a block's conflicts from the vectors, in memory
O(n x components) whatever the number of conflicting pairs. The blocks are cut
into *chains* along which ``acquire`` never decreases in any component (a core's
or a stream's blocks in program order), and each chain into classes of
similar lifetime. Along a group, "``b`` is before the block" is false then true
(``acquire`` grows), and so is "the group's greatest ``release`` so far passes
``b``'s ``acquire`` in some component": the blocks of the group that may
conflict with ``b`` are one run of ranks between the two switches, found by two
binary searches, and each block of the run is tested exactly. A point that fits
no chain (there are at most :data:`MAX_CHAINS`) goes to a leftover group
scanned whole, so any vectors work, the few-chained ones fast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.documents.cores import Cores
from gaplanner.native import _order
from gaplanner.problem.conflicts import ConflictGraph

#: A component no release reaches: a graph block's acquire on the cores its writer is not on.
FAR = 1 << 53
#: At most this many chains; points that fit none are scanned whole for every query.
MAX_CHAINS = 64
# The pair-list decoder pads neighbour lists with the never-placed block to a multiple of this many
# entries, so its sweeps' vector loops have no remainder. LLVM vectorizes a sweep as 8 lanes unrolled
# 4 times; with lists padded to 32 every sweep runs that body alone, never the 4-lane epilogue, which
# pays for the padding the gather copies.
NEIGHBOUR_LANES = 32
#: A problem's conflicts are decoded from a pair list (and, on a multi-core problem, the list built
#: for the clique bound) only when that list, padded, holds at most this many entries (a few hundred MB
#: with the list itself); larger ones are planned from their lifetimes or happens-before vectors.
PAIR_ENTRIES_LIMIT = 1 << 25


def padded_entries(degrees: np.ndarray) -> int:
    """The entries of the pair-list decoder's padded neighbour lists."""
    return int((-(-degrees // NEIGHBOUR_LANES) * NEIGHBOUR_LANES).sum())


@dataclass(frozen=True)
class HappensBefore:
    """``a`` is surely done before ``b`` starts iff ``release[a] <= acquire[b]`` in every component."""

    acquire: np.ndarray  # (n, components) int64
    release: np.ndarray  # (n, components) int64

    @property
    def n(self) -> int:
        return len(self.acquire)


def graph_happens_before(release: np.ndarray, writer: np.ndarray, cores: Cores) -> HappensBefore:
    """The vectors of a multi-core graph's blocks (see the module doc).

    ``release``: per block and core, the first step surely after all its
    accesses; ``writer``: per block, its writer's position (-1: a graph input).
    """
    writer = np.asarray(writer, np.int64)
    acquire = np.full(release.shape, FAR, np.int64)
    written = np.flatnonzero(writer >= 0)
    acquire[written, cores.core[writer[written]]] = cores.step[writer[written]]
    acquire[writer < 0] = -1
    return HappensBefore(acquire, np.ascontiguousarray(release, np.int64))


def _lifetime_class(acquire: np.ndarray, release: np.ndarray) -> np.ndarray:
    """floor(log2) of a block's longest reach past its acquire, over the components it acquires in."""
    reach = np.where(acquire < FAR, release - acquire, 0).max(axis=1)
    return np.floor(np.log2(np.maximum(reach, 1).astype(np.float64))).astype(np.int64)


@dataclass(frozen=True)
class OrderIndex:
    """The blocks ranked by (chain, lifetime class, position in the chain), with their vectors by rank.

    ``groups`` (3, groups): each group's first and end rank, and 1 where its
    ranks are a chain (bisected), 0 for the leftover group (scanned whole).
    ``reach``: per rank, the greatest ``release`` of its group up to it.
    """

    rank: np.ndarray
    acquire: np.ndarray
    release: np.ndarray
    reach: np.ndarray
    groups: np.ndarray

    @classmethod
    def of(cls, order: HappensBefore) -> OrderIndex:
        acquire = np.ascontiguousarray(order.acquire, np.int64)
        release = np.ascontiguousarray(order.release, np.int64)
        n = len(acquire)
        lex = np.lexsort((np.arange(n), *acquire.T[::-1]))  # by acquire, first component first
        position = np.empty(n, np.int64)
        position[lex] = np.arange(n)
        chain = _order.chains(acquire, lex, MAX_CHAINS)  # greedy chains; -1: fits none
        chain[chain < 0] = MAX_CHAINS  # the leftover group, last
        life = _lifetime_class(acquire, release)
        by_rank = np.lexsort((position, life, chain))
        rank = np.empty(n, np.int64)
        rank[by_rank] = np.arange(n)
        key = chain[by_rank] * 128 + life[by_rank]
        firsts = np.flatnonzero(np.diff(key, prepend=-1)) if n else np.zeros(0, np.int64)
        ends = np.append(firsts[1:], n)
        monotone = (chain[by_rank][firsts] < MAX_CHAINS).astype(np.int64)
        groups = np.ascontiguousarray(np.stack([firsts, ends, monotone]).astype(np.int64))
        release_by_rank = np.ascontiguousarray(release[by_rank])
        reach = release_by_rank.copy()
        for first, end in zip(firsts, ends, strict=True):
            np.maximum.accumulate(reach[first:end], axis=0, out=reach[first:end])
        return cls(rank, np.ascontiguousarray(acquire[by_rank]), release_by_rank, reach, groups)

    def arrays(self) -> tuple:
        return self.rank, self.acquire, self.release, self.reach, self.groups


def order_degrees(index: OrderIndex) -> np.ndarray:
    """Per block, how many blocks it conflicts with (no pairs held)."""
    return _order.each_conflict(index.arrays(), False, np.zeros(1, np.int64), np.zeros(1, np.int32),
                                np.zeros(1, np.int32))  # fmt: skip


def order_pairs(index: OrderIndex) -> tuple[np.ndarray, np.ndarray]:
    """The conflict graph's CSR (``indptr``, ``indices``), each row sorted."""
    degrees = order_degrees(index)
    indptr = np.zeros(len(degrees) + 1, np.int64)
    np.cumsum(degrees, out=indptr[1:])
    block_of_rank = np.empty(len(degrees), np.int32)
    block_of_rank[index.rank] = np.arange(len(degrees), dtype=np.int32)
    indices = np.empty(indptr[-1], np.int32)
    _order.each_conflict(index.arrays(), True, indptr, block_of_rank, indices)
    return indptr, indices


def greatest_conflicting(index: tuple, values: np.ndarray, floor: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per block, its conflict count and the greatest of ``values`` (per block) over the blocks it
    conflicts with, or ``floor`` where none is greater: ``(degrees, greatest)``, in one pass."""
    return _order.greatest_conflicting(
        index, np.ascontiguousarray(values, np.int64), np.ascontiguousarray(floor, np.int64)
    )


class OrderConflicts(ConflictGraph):
    """The conflicts of happens-before vectors: degrees from the vectors, the pair list only when read.

    A multi-core problem too large for its pair list (:data:`PAIR_ENTRIES_LIMIT`)
    is decoded, bounded and verified from the vectors alone; a search that needs
    the pairs (the GA's moves, the exact search) builds them by reading
    ``indptr``/``indices``.
    """

    def __init__(self, happens_before: HappensBefore) -> None:
        object.__setattr__(self, "happens_before", happens_before)
        object.__setattr__(self, "_index", None)
        object.__setattr__(self, "_pairs", None)
        object.__setattr__(self, "_degrees", None)

    @property
    def index(self) -> OrderIndex:
        if self._index is None:
            object.__setattr__(self, "_index", OrderIndex.of(self.happens_before))
        return self._index

    def _built(self) -> tuple[np.ndarray, np.ndarray]:
        if self._pairs is None:
            object.__setattr__(self, "_pairs", order_pairs(self.index))
        return self._pairs

    @property  # type: ignore[override]
    def indptr(self) -> np.ndarray:
        return self._built()[0]

    @property  # type: ignore[override]
    def indices(self) -> np.ndarray:
        return self._built()[1]

    @property
    def n(self) -> int:
        return self.happens_before.n

    @property
    def edge_count(self) -> int:
        return int(self.degrees().sum()) // 2

    @property
    def built(self) -> bool:
        """Whether the pair list has been built."""
        return self._pairs is not None

    def greatest(self, values: np.ndarray, floor: np.ndarray) -> np.ndarray:
        """Per block, the greatest of ``values`` over its conflicts, or ``floor`` (counting its
        conflicts on the way: the degrees are kept)."""
        degrees, greatest = greatest_conflicting(self.index.arrays(), values, floor)
        if self._degrees is None:
            degrees.setflags(write=False)
            object.__setattr__(self, "_degrees", degrees)
        return greatest

    def degrees(self) -> np.ndarray:
        if self._degrees is None:
            pairs = self._pairs
            degrees = np.diff(pairs[0]) if pairs is not None else order_degrees(self.index)
            degrees.setflags(write=False)
            object.__setattr__(self, "_degrees", degrees)
        return self._degrees

    def __repr__(self) -> str:
        return f"OrderConflicts(n={self.n}, built={self.built})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConflictGraph):
            return NotImplemented
        return np.array_equal(self.indptr, other.indptr) and np.array_equal(self.indices, other.indices)

    __hash__ = None  # type: ignore[assignment]


def pinned_clash(
    happens_before: HappensBefore, pinned: np.ndarray, sizes: np.ndarray
) -> tuple[int, int] | None:
    """The first pair of pinned blocks (``pinned`` >= 0) that conflict and overlap in memory, or None."""
    fixed = np.flatnonzero(pinned >= 0)
    acquire, release = happens_before.acquire[fixed], happens_before.release[fixed]
    ends = pinned[fixed] + sizes[fixed]
    for k, a in enumerate(fixed[:-1]):
        later = slice(k + 1, len(fixed))
        before = (release[k] <= acquire[later]).all(axis=1) | (release[later] <= acquire[k]).all(axis=1)
        overlap = (pinned[a] < ends[later]) & (pinned[fixed[later]] < ends[k])
        if (hit := np.flatnonzero(~before & overlap)).size:
            return int(a), int(fixed[later][hit[0]])
    return None
