"""The planning problem: blocks, their conflicts and a lower bound.

:func:`build_problem` is the one entry from an input document to everything
the searches need. Blocks are indexed ``0..n-1`` in document order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gaplanner.documents.lifetimes import GraphTensors, after_all, analyse_graph, reuse_times
from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import MAX_INTEGER, Document
from gaplanner.errors import InputError
from gaplanner.problem.bounds import greedy_clique_bound, max_load
from gaplanner.problem.clocks import Clocks, check_clocks, clock_bound
from gaplanner.problem.conflicts import ConflictGraph, conflicts_from_intervals
from gaplanner.problem.memories import MemorySystem, memory_system, refuse_memory_pins
from gaplanner.problem.order import (
    PAIR_ENTRIES_LIMIT,
    HappensBefore,
    OrderConflicts,
    graph_happens_before,
    padded_entries,
    pinned_clash,
)
from gaplanner.problem.storage import Storage, group_tensors, relaxed_bound


@dataclass(frozen=True)
class TensorMap:
    """Every tensor of a graph document (workspaces included) and the block that holds it.

    A view or an in-place output shares its block with other tensors; the
    block is named after its first-written tensor (``Problem.ids``).
    """

    ids: tuple[str, ...]
    sizes: np.ndarray
    block_of: np.ndarray
    lower: np.ndarray  # each tensor's own lifetime, on the problem's time axis
    upper: np.ndarray
    #: with ``devices``: per tensor the devices touching it, and the alignment they, the tensor and the
    #: graph ask for
    devices: tuple[tuple[str, ...], ...] | None = None
    alignments: np.ndarray | None = None

    def device_fields(self, t: int) -> dict[str, Any]:
        """Tensor ``t``'s devices and the alignment they ask for, for a plan's row (none without devices)."""
        if self.devices is None or self.alignments is None:
            return {}
        return {"devices": list(self.devices[t]), "alignment": int(self.alignments[t])}


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
    #: fixed offset per block (pinned by the runtime), -1 where the planner chooses
    pinned: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: the document's tensors, for a graph; None for a buffer list (its blocks are its buffers)
    tensors: TensorMap | None = None
    #: the graph document and the rules it was planned under, for the model-level check of every plan
    document: Document | None = None
    rules: Rules = field(default_factory=Rules)
    #: vector-clock lifetimes (multi-stream buffer lists); None otherwise
    clocks: Clocks | None = None
    #: the memories blocks are placed in (capacities, costs); None: one unbounded arena
    memories: MemorySystem | None = None
    #: per block, the memories every device touching it reaches (None: any); None without devices
    reach: tuple[frozenset[str] | None, ...] | None = None
    #: a multi-core problem's happens-before as vectors (:mod:`gaplanner.problem.order`); None otherwise
    happens_before: HappensBefore | None = None

    def __post_init__(self) -> None:
        # Offsets and peaks are int64: the sizes must add up well inside it.
        if float(self.sizes.astype(np.float64).sum()) > 2.0**62:
            raise InputError("the sizes add up beyond 2**62 bytes", "sizes")
        if len(self.pinned) != len(self.sizes):
            object.__setattr__(self, "pinned", np.full(len(self.sizes), -1, np.int64))

    @property
    def has_pinned(self) -> bool:
        return bool((self.pinned >= 0).any())

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
        offsets=np.array([-1 if b.offset is None else b.offset for b in buffers], np.int64),
    )


def _unchecked_buffers(doc: Document, name: str) -> Problem:
    """A buffer list whose pinned offsets are checked later, per memory."""
    buffers = doc.buffers or []
    problem = _from_buffers(
        doc.model_copy(update={"buffers": [b.model_copy(update={"offset": None}) for b in buffers]}), name
    )
    pinned = np.array([-1 if b.offset is None else b.offset for b in buffers], np.int64)
    return replace(
        problem, pinned=pinned, lower_bound=max(problem.lower_bound, _pinned_top(problem.sizes, pinned))
    )


def interval_problem(
    name: str,
    ids: tuple[str, ...],
    sizes: np.ndarray,
    alignments: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    pinned: np.ndarray,
    **graph: object,
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
        lower_bound=max(max_load(lower, upper, sizes), _pinned_top(sizes, pinned)),
        pinned=pinned,
        **graph,  # type: ignore[arg-type]
    )


def _pinned_top(sizes: np.ndarray, pinned: np.ndarray) -> int:
    """No arena ends below a pinned block."""
    return int(np.where(pinned >= 0, pinned + sizes, 0).max(initial=0))


def _check_pinned(problem: Problem) -> Problem:
    """Refuse pinned blocks off their alignment, or overlapping a conflicting pinned block: no plan
    could keep them.

    On an interval problem the pinned blocks' lifetimes tell their conflicts: the
    pair list is not built for this.
    """
    fixed = np.flatnonzero(problem.pinned >= 0)
    offsets, ends = problem.pinned, problem.pinned + problem.sizes
    if len(problem.alignments) and (off := fixed[offsets[fixed] % problem.alignments[fixed] != 0]).size:
        a = int(off[0])  # its alignment may come from a unit an operator runs on, or a view of its bytes
        raise InputError(
            f"block {problem.ids[a]!r} is pinned at {offsets[a]}, not a multiple of {problem.alignments[a]}, "
            "the alignment its tensors need (their own, the document's, or a unit's that touches them)",
            "offset",
        )
    if problem.happens_before is not None:  # a multi-core problem: its vectors tell, without pairs
        clash = pinned_clash(problem.happens_before, offsets, problem.sizes)
        if clash is not None:
            _refuse_pinned_pair(problem, *clash)
        return problem
    for a in fixed:
        if problem.interval_conflicts:
            later = fixed[fixed > a]
            live = (problem.lower[later] < problem.upper[a]) & (problem.lower[a] < problem.upper[later])
            candidates = later[live]
        else:
            candidates = problem.conflicts.neighbors(int(a))
            candidates = np.sort(candidates[(candidates > a) & (offsets[candidates] >= 0)])
        clash = candidates[(offsets[a] < ends[candidates]) & (offsets[candidates] < ends[a])]
        if len(clash):
            _refuse_pinned_pair(problem, int(a), int(clash[0]))
    return problem


def _refuse_pinned_pair(problem: Problem, a: int, b: int) -> None:
    offsets, ends = problem.pinned, problem.pinned + problem.sizes
    raise InputError(
        f"pinned blocks {problem.ids[a]!r} [{offsets[a]}, {ends[a]}) and "
        f"{problem.ids[b]!r} [{offsets[b]}, {ends[b]}) are live at once and overlap",
        "offset",
    )


def pairs_fit(conflicts: ConflictGraph) -> bool:
    """Whether a multi-core problem's pair list is small enough to build (for its clique bound and the
    pair-list decoder): else it is planned from its vectors, bounded by the load over its time axis."""
    return padded_entries(conflicts.degrees()) <= PAIR_ENTRIES_LIMIT


def _from_graph(doc: Document, name: str, rules: Rules) -> Problem:
    tensors = analyse_graph(doc, keep_outputs=rules.keep_outputs)
    storage = group_tensors(tensors, rules)
    graph = {
        "tensors": TensorMap(
            tensors.ids,
            tensors.sizes,
            storage.block_of,
            np.maximum(tensors.writer, 0),
            np.array([a[-1] + 1 for a in tensors.accesses], np.int64),
            tensors.devices.names if tensors.devices else None,
            tensors.alignments if tensors.devices else None,
        ),
        "document": doc,
        "rules": rules,
        "reach": storage.reach if tensors.devices else None,
    }
    ids = tuple(tensors.ids[r] for r in storage.roots)
    lower, upper = storage.lower, storage.upper
    if tensors.cores is None:
        problem = interval_problem(
            name, ids, storage.sizes, storage.alignments, lower, upper, storage.pinned, **graph
        )
        return _bound_over_inplace_choices(problem, tensors, rules)
    release = _releases(tensors, storage)
    happens_before = graph_happens_before(release, storage.writer, tensors.cores)
    conflicts = OrderConflicts(happens_before)
    bound = (
        greedy_clique_bound(lower, upper, storage.sizes, conflicts.indptr, conflicts.indices)
        if pairs_fit(conflicts)
        else max_load(lower, upper, storage.sizes)  # the load over a linear extension: no pairs needed
    )
    problem = Problem(
        name=name,
        ids=ids,
        sizes=storage.sizes,
        alignments=storage.alignments,
        lower=lower,
        upper=upper,
        reuse_at=reuse_times(release, upper, tensors.cores),
        conflicts=conflicts,
        interval_conflicts=False,
        lower_bound=max(bound, _pinned_top(storage.sizes, storage.pinned)),
        pinned=storage.pinned,
        happens_before=happens_before,
        **graph,  # type: ignore[arg-type]
    )
    return _bound_over_inplace_choices(problem, tensors, rules)


def _bound_over_inplace_choices(problem: Problem, tensors: GraphTensors, rules: Rules) -> Problem:
    """The problem's bound, made valid for every choice of in-place writes, not just the one taken.

    A plan that takes other chances than the planner did could be smaller than
    the bound of the blocks planned; ``optimal`` must hold against all of them.
    """
    if rules.inplace == "never" or not tensors.inplace:
        return problem
    bound = max(relaxed_bound(tensors, rules), _pinned_top(problem.sizes, problem.pinned))
    return replace(problem, lower_bound=min(problem.lower_bound, bound))


def _releases(tensors: GraphTensors, storage: Storage) -> np.ndarray:
    """Per block and core, the first step surely after every access of the block."""
    return np.array([after_all(tensors, positions) for positions in storage.accesses], np.int64).reshape(
        len(storage.roots), -1
    )


def build_problem(doc: Document, name: str | None = None, rules: Rules | None = None) -> Problem:
    """Blocks, conflicts and lower bound of a validated document, under the runtime's ``rules``."""
    label = name or doc.name or "problem"
    if doc.memories is None:
        refuse_memory_pins(doc)
    else:  # pinned offsets are checked per memory
        problem = (
            _from_graph(doc, label, rules or Rules()) if doc.is_graph else _unchecked_buffers(doc, label)
        )
        return replace(problem, memories=memory_system(doc, problem))
    problem = _from_graph(doc, label, rules or Rules()) if doc.is_graph else _from_buffers(doc, label)
    return _check_pinned(problem)


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
    offsets: np.ndarray | None = None,
) -> Problem:
    """An interval problem straight from arrays (CSV readers, tests, generators).

    ``offsets``: per buffer a pinned offset, or -1 where the planner chooses.
    """
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
    alignments = np.full(len(sizes), alignment, np.int64)
    pinned = _pinned_offsets(offsets, alignment, len(sizes))
    return _check_pinned(interval_problem(name, ids, sizes, alignments, lower, upper, pinned))


def _pinned_offsets(offsets: np.ndarray | None, alignment: int, n: int) -> np.ndarray:
    if offsets is None:
        return np.full(n, -1, np.int64)
    pinned = _whole_numbers(offsets, "offset")
    if len(pinned) != n:
        raise InputError("offsets and sizes differ in length", "buffers")
    if (bad := np.flatnonzero((pinned < -1) | ((pinned >= 0) & (pinned % alignment != 0)))).size:
        raise InputError(
            f"a pinned offset must be a non-negative multiple of {alignment}, got {pinned[bad[0]]}",
            f"buffers[{bad[0]}].offset",
        )
    return pinned


def problem_from_clocks(
    sizes: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    ids: tuple[str, ...] | None = None,
    alignment: int = 1,
    name: str = "problem",
    offsets: np.ndarray | None = None,
) -> Problem:
    """A problem from vector-clock lifetimes: ``lower``/``upper`` are ``(n, components)`` arrays.

    See :mod:`gaplanner.problem.clocks`; with one component it is :func:`problem_from_arrays`.
    """
    lower, upper = np.asarray(lower, np.int64), np.asarray(upper, np.int64)
    if lower.ndim != 2 or lower.shape != upper.shape:
        raise InputError("lower and upper must be (buffers, components) arrays of one shape", "buffers")
    if lower.shape[1] == 1:
        return problem_from_arrays(sizes, lower[:, 0], upper[:, 0], ids=ids, alignment=alignment, name=name,
                                   offsets=offsets)  # fmt: skip
    check_clocks(lower, upper)
    flat = problem_from_arrays(
        sizes, lower.sum(axis=1), upper.sum(axis=1), ids=ids, alignment=alignment, name=name, offsets=offsets
    )  # the same checks of sizes, ids and pins as any buffer list
    clocks = Clocks(lower, upper)
    conflicts = OrderConflicts(HappensBefore(clocks.lower, clocks.upper))
    # A buffer's space is free for the time walk once every buffer it conflicts with has started.
    reuse_at = conflicts.greatest(flat.lower + 1, flat.upper)
    bound = (
        clock_bound(flat.lower, flat.upper, flat.sizes, conflicts)
        if pairs_fit(conflicts)
        else max_load(flat.lower, flat.upper, flat.sizes)
    )
    problem = replace(
        flat,
        reuse_at=reuse_at,
        conflicts=conflicts,
        interval_conflicts=False,
        lower_bound=max(bound, _pinned_top(flat.sizes, flat.pinned)),
        clocks=clocks,
        happens_before=conflicts.happens_before,
    )
    return _check_pinned(problem)
