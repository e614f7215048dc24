"""The exact search's parts: connected components of the conflict graph, with their cliques.

Blocks of different components never conflict, so each component is planned
on its own (for intervals: the blocks between two times no lifetime crosses).
A *clique* is a set of pairwise conflicting blocks; the search keeps, per
clique, a floor no unplaced member can go below, and prunes when the floor
plus the members' total size passes the target. For intervals the cliques are
the blocks live in each time section; for a conflict graph, each start time's
live set on the problem's time axis, kept only where the members conflict and
grown greedily by common neighbours, plus one clique grown from each block no
other clique holds.

**Large interval parts.** Every time section of a training graph's tens of
thousands of tensors holds millions of (block, section) pairs, and raising one
long-lived block's floor would touch thousands of sections. There the cliques
are only the heaviest *maximal* sections (a start followed by an end), those
whose live bytes come near the heaviest's, plus a clique of one for each block
none of them holds. Any set of cliques prunes soundly (a plan never breaks a
clique's bound), and the heavy sections are where a target near the lower bound
binds. Such a part is not split as it is searched: on its dense conflicts the
walk that finds the pieces costs more than the pieces save.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

from gaplanner.native import _parts
from gaplanner.problem.conflicts import IntervalConflicts
from gaplanner.problem.problem import Problem
from gaplanner.search.exact.dfs import HEURISTICS, SKYLINE

#: (block, time section) pairs an interval part may hold before it keeps only its heavy sections.
MAX_SECTION_MEMBERS = 4_000_000
#: An interval part whose time sections are this share or more at its heaviest section's load is *full*:
#: a plan at its bound leaves (almost) no hole anywhere, and the skyline orders search it (see
#: :data:`gaplanner.search.exact.dfs.SKYLINE`).
FULL_SHARE = 0.9
#: On a large interval part, the maximal sections kept: those whose live bytes reach this share of the
#: heaviest section's (at most :data:`MAX_SECTION_MEMBERS` pairs, the heaviest first).
HEAVY_SECTION_SHARE = 0.95


@dataclass(frozen=True)
class Part:
    """One connected component of the conflict graph, in local block indices."""

    blocks: np.ndarray  # the problem's indices of its blocks
    sizes: np.ndarray
    aligns: np.ndarray
    fixed: np.ndarray  # pinned offset, -1 where free
    nbr_ptr: np.ndarray
    nbr_idx: np.ndarray
    clq_ptr: np.ndarray  # clique -> members
    clq_idx: np.ndarray
    bc_ptr: np.ndarray  # block -> cliques
    bc_idx: np.ndarray
    features: dict[str, np.ndarray]
    bound: int  # heaviest clique (and pinned tops): no plan of the part is lower
    grain: int  # every peak of a pushed-down plan is a multiple of it
    twin_class: np.ndarray  # interchangeable blocks share a class (see _twin_classes)
    large: bool = False  # cliques of heavy sections only, not split as it is searched (see the module)
    full: bool = False  # nearly every time section is as heavy as the bound (see FULL_SHARE)

    @property
    def orders(self) -> tuple[str, ...]:
        """The tie-break orders its probes use: the skyline ones first on a part packed full."""
        return (*SKYLINE, *HEURISTICS) if self.full else HEURISTICS

    def rank(self, heuristic: str) -> np.ndarray:
        """Each block's position when sorted by the heuristic's features, descending, ties by index.

        Letters: W lifetime width, A area (size x width), T heaviest clique holding the block, Z size.
        """
        index = np.arange(len(self.sizes))
        order = np.lexsort([index, *(-self.features[letter] for letter in reversed(heuristic))])
        rank = np.empty(len(order), np.int64)
        rank[order] = index
        return rank

    def twins(self, rank: np.ndarray) -> np.ndarray:
        """Per block, the previous block (in ``rank`` order) it is interchangeable with, or -1."""
        twin_prev = np.full(len(self.sizes), -1, np.int64)
        last: dict[int, int] = {}
        for b in np.argsort(rank).tolist():
            kind = int(self.twin_class[b])
            if kind >= 0:
                twin_prev[b] = last.get(kind, -1)
                last[kind] = b
        return twin_prev


def _twin_classes(sizes: np.ndarray, aligns: np.ndarray, fixed: np.ndarray, nbr_ptr: np.ndarray,
                  nbr_idx: np.ndarray) -> np.ndarray:  # fmt: skip
    """Per block, a class of interchangeable blocks (-1: pinned, never swapped).

    Interchangeable: same size and alignment, both free, and the same
    conflicts (two that conflict: the same conflicts counting themselves);
    swapping two such blocks maps plans onto plans. A block joins the class of
    the first block it matches either way.
    """
    classes = np.full(len(sizes), -1, np.int64)
    seen: dict[tuple, int] = {}
    for b in range(len(sizes)):
        if fixed[b] >= 0:
            continue
        neighbours = nbr_idx[nbr_ptr[b] : nbr_ptr[b + 1]]
        head = (int(sizes[b]), int(aligns[b]))
        keys = ((False, *head, neighbours.tobytes()), (True, *head, np.sort(np.r_[neighbours, b]).tobytes()))
        kind = next((seen[key] for key in keys if key in seen), b)
        classes[b] = kind
        for key in keys:
            seen.setdefault(key, kind)
    return classes


def _csr(rows: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(rows) + 1, np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows])
    idx = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    return ptr, idx


def _sections(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Each block's first and past-last elementary time section, and the number of sections."""
    times = np.unique(np.concatenate([lower, upper]))
    return np.searchsorted(times, lower), np.searchsorted(times, upper), len(times) - 1


def _members(first: np.ndarray, stop: np.ndarray, sections: int) -> list[np.ndarray]:
    """The blocks in each section, for blocks spanning sections ``[first, stop)``; empty ones left out."""
    spans = stop - first
    blocks = np.repeat(np.arange(len(first)), spans)
    # Section of each (block, section) pair: the block's first section plus its position in the run.
    runs = np.arange(len(blocks)) - np.repeat(np.cumsum(spans) - spans, spans)
    in_section = np.repeat(first, spans) + runs
    order = np.lexsort((blocks, in_section))
    bounds = np.flatnonzero(np.diff(in_section[order])) + 1
    return [members.astype(np.int64) for members in np.split(blocks[order], bounds) if members.size]


def _interval_cliques(lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
    """The blocks live in each elementary time section (pairwise conflicting), each sorted."""
    first, stop, sections = _sections(lower, upper)
    return _members(first, stop, sections)


def section_members(lower: np.ndarray, upper: np.ndarray) -> int:
    """How many (block, time section) pairs the interval cliques hold: their memory, before building them."""
    first, stop, _ = _sections(lower, upper)
    return int((stop - first).sum())


def _heavy_interval_cliques(lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    """The heavy maximal sections' blocks, then each block none of them holds alone (see the module)."""
    first, stop, sections = _sections(lower, upper)
    starts, ends = np.zeros(sections + 1, bool), np.zeros(sections + 1, bool)
    starts[first], ends[stop] = True, True
    maximal = np.flatnonzero(starts[:-1] & ends[1:])
    live = np.zeros(sections + 1, np.int64)
    np.add.at(live, first, sizes)
    np.add.at(live, stop, -sizes)
    live_bytes, count = np.cumsum(live)[maximal], np.zeros(sections + 1, np.int64)
    np.add.at(count, first, 1)
    np.add.at(count, stop, -1)
    heavy = np.argsort(-live_bytes, kind="stable")
    heavy = heavy[live_bytes[heavy] >= HEAVY_SECTION_SHARE * live_bytes.max()]
    within = np.cumsum(np.cumsum(count)[maximal][heavy]) <= MAX_SECTION_MEMBERS
    kept = np.sort(maximal[heavy[: max(1, int(within.sum()))]])
    # Renumber the kept sections 0.. so each block spans the kept ones inside its own span.
    cliques = _members(np.searchsorted(kept, first), np.searchsorted(kept, stop), len(kept))
    held = np.zeros(len(sizes), bool)
    for clique in cliques:
        held[clique] = True
    return [*cliques, *(np.array([b], np.int64) for b in np.flatnonzero(~held))]


def _grow_clique(
    seed: list[int], candidates: np.ndarray, adjacent: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """``seed`` grown by the heaviest blocks adjacent to every member, ``candidates`` first."""
    clique = list(seed)
    common = adjacent[clique].all(axis=0) if clique else np.ones(len(sizes), bool)
    for pool in (candidates, np.arange(len(sizes))):
        allowed = np.zeros(len(sizes), bool)
        allowed[pool] = True
        while (options := common & allowed).any():
            b = int(np.argmax(np.where(options, sizes, -1)))
            clique.append(b)
            common &= adjacent[b]
    return np.array(sorted(set(clique)), np.int64)


def _graph_cliques(problem_lower: np.ndarray, problem_upper: np.ndarray, sizes: np.ndarray,
                   adjacent: np.ndarray) -> list[np.ndarray]:  # fmt: skip
    """Cliques of a conflict graph: each start time's live set (on the problem's time axis), kept only
    where members conflict, grown greedily; then one from each block no clique holds yet."""
    cliques: dict[tuple[int, ...], np.ndarray] = {}
    for t in np.unique(problem_lower):
        live = np.flatnonzero((problem_lower <= t) & (problem_upper > t))
        clique = _grow_clique([], live, adjacent, sizes)
        cliques.setdefault(tuple(clique.tolist()), clique)
    covered = np.zeros(len(sizes), bool)
    for clique in cliques.values():
        covered[clique] = True
    for b in np.flatnonzero(~covered):
        live = np.flatnonzero(adjacent[b])
        clique = _grow_clique([int(b)], live, adjacent, sizes)
        cliques.setdefault(tuple(clique.tolist()), clique)
    return list(cliques.values())


def _component_labels(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Per block, its connected component of the conflict graph (CSR), numbered in order of first block."""
    return _parts.component_labels(indptr, indices)


def _interval_labels(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The labels :func:`_component_labels` gives half-open lifetimes, from the lifetimes alone.

    By start, a component ends where no lifetime so far reaches past the next
    start; an empty lifetime meets nothing. So a problem of a million blocks
    never builds its pairs (hundreds of millions) to find that it is one part
    too large to search.
    """
    n = len(lower)
    live = np.flatnonzero(upper > lower)
    order = live[np.argsort(lower[live], kind="stable")]
    starts = np.ones(len(order), bool)
    starts[1:] = lower[order][1:] >= np.maximum.accumulate(upper[order])[:-1]
    label = np.empty(n, np.int64)
    label[order] = np.cumsum(starts) - 1
    empty = np.flatnonzero(upper <= lower)
    label[empty] = int(starts.sum()) + np.arange(len(empty))
    first = np.full(int(starts.sum()) + len(empty), n, np.int64)
    np.minimum.at(first, label, np.arange(n))  # numbered by their first block, as the graph's search does
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[label]


def components(problem: Problem) -> list[np.ndarray]:
    """Connected components of the conflict graph, each sorted, in order of their first block."""
    conflicts = problem.conflicts
    if isinstance(conflicts, IntervalConflicts):
        label = _interval_labels(conflicts.lower, conflicts.upper)
    else:
        label = _component_labels(conflicts.indptr, conflicts.indices)
    order = np.argsort(label, kind="stable")
    return np.split(order.astype(np.int64), np.flatnonzero(np.diff(label[order])) + 1)


def local_neighbours(
    blocks: np.ndarray, local: np.ndarray, indptr: np.ndarray, indices: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The conflicts of ``blocks`` (CSR), in their local indices, each row sorted.

    ``blocks``, ``local`` (each problem block's local index) and ``indptr`` are int64; ``indices`` int32 or
    int64.
    """
    return _parts.local_neighbours(blocks, local, indptr, indices)


def make_part(problem: Problem, blocks: np.ndarray) -> Part:
    local = np.full(problem.n, -1, np.int64)
    local[blocks] = np.arange(len(blocks))
    sizes = problem.sizes[blocks].astype(np.int64)
    nbr_ptr, nbr_idx = local_neighbours(blocks, local, problem.conflicts.indptr, problem.conflicts.indices)
    lower, upper = problem.lower[blocks], problem.upper[blocks]
    fixed = problem.pinned[blocks].astype(np.int64)
    aligns = problem.alignments[blocks].astype(np.int64)
    large = problem.interval_conflicts and section_members(lower, upper) > MAX_SECTION_MEMBERS
    if large:
        cliques = _heavy_interval_cliques(lower, upper, sizes)
        twin_class = _lifetime_twin_classes(sizes, aligns, fixed, lower, upper)
    else:
        if problem.interval_conflicts:
            cliques = _interval_cliques(lower, upper)
        else:
            adjacent = np.zeros((len(blocks), len(blocks)), bool)
            adjacent[np.repeat(np.arange(len(blocks)), np.diff(nbr_ptr)), nbr_idx] = True
            cliques = _graph_cliques(lower, upper, sizes, adjacent)
        twin_class = _twin_classes(sizes, aligns, fixed, nbr_ptr, nbr_idx)
    clq_ptr, clq_idx = _csr(cliques)
    bc_ptr, bc_idx = _block_cliques(clq_ptr, clq_idx, len(blocks))
    weights = np.add.reduceat(sizes[clq_idx], clq_ptr[:-1])
    pinned_top = int(np.where(fixed >= 0, fixed + sizes, 0).max(initial=0))
    grain = _grain(sizes, aligns, fixed)
    width = (upper - lower).astype(np.int64)
    full = problem.interval_conflicts and not large and (weights == weights.max()).mean() >= FULL_SHARE
    heaviest = np.maximum.reduceat(weights[bc_idx], bc_ptr[:-1])  # every block is in some clique
    return Part(
        blocks=blocks, sizes=sizes, aligns=aligns, fixed=fixed, nbr_ptr=nbr_ptr, nbr_idx=nbr_idx,
        clq_ptr=clq_ptr, clq_idx=clq_idx, bc_ptr=bc_ptr, bc_idx=bc_idx,
        features={"W": width, "A": width * sizes, "T": heaviest, "Z": sizes, "L": -lower.astype(np.int64),
                  "U": upper.astype(np.int64)},
        bound=max(int(weights.max()), pinned_top), grain=grain, twin_class=twin_class, large=large,
        full=bool(full),
    )  # fmt: skip


def _block_cliques(clq_ptr: np.ndarray, clq_idx: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The cliques of each block (CSR, ascending), from the members of each clique."""
    clique_of = np.repeat(np.arange(len(clq_ptr) - 1), np.diff(clq_ptr))
    order = np.lexsort((clique_of, clq_idx))
    ptr = np.zeros(n + 1, np.int64)
    ptr[1:] = np.cumsum(np.bincount(clq_idx, minlength=n))
    return ptr, clique_of[order].astype(np.int64)


def _lifetime_twin_classes(sizes: np.ndarray, aligns: np.ndarray, fixed: np.ndarray, lower: np.ndarray,
                           upper: np.ndarray) -> np.ndarray:  # fmt: skip
    """Per block, a class of blocks with its size, alignment and lifetime (-1: pinned).

    On intervals the same lifetime means the same conflicts, so these are
    interchangeable (:func:`_twin_classes` finds them too, and others, at a cost
    that grows with the conflicts); the class is named by its first block.
    """
    keys = np.stack([sizes, aligns, lower, upper], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return np.where(fixed >= 0, -1, first[inverse.ravel()]).astype(np.int64)


def _grain(sizes: np.ndarray, aligns: np.ndarray, fixed: np.ndarray) -> int:
    """A step every offset and peak of a pushed-down plan is a multiple of.

    Tops are sums of sizes and pinned offsets; rounding a multiple of the step
    up to an alignment that divides it or that it divides keeps a multiple.
    """
    grain = 0
    for value in (*sizes.tolist(), *fixed[fixed >= 0].tolist()):
        grain = gcd(grain, int(value))
    for a in np.unique(aligns).tolist():
        if a % grain and grain % a:
            grain = gcd(grain, a)
    return max(grain, 1)
