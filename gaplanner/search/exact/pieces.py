"""The exact search on an interval problem split where no free block crosses: each piece on its own.

Some blocks are placed (their offsets fixed) and the rest are free. A time
that no free block's lifetime crosses splits the free blocks into pieces: a
free block of one piece never meets a free block of another, and each meets
only the placed blocks live during its own piece. So each piece is a problem
of its own (its free blocks, and the placed blocks live during it pinned as
obstacles), and the free blocks fit under a target exactly when every piece
does: a piece that has no plan proves that no plan of the free blocks has
one, and a piece once fitted is never searched again while another is.

:func:`fit_pieces` searches each piece whose blocks do not all lie under the
target yet with the compiled depth-first search (:mod:`gaplanner.search.exact.dfs`,
which goes on splitting its piece as it places blocks), in a few orders, each
for a budget of placements; pieces already under the target keep their
offsets. Budgets are counted in placements, so the same inputs give the same
plan whatever the machine's load (unless the deadline comes first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gaplanner.deadline import Deadline, no_deadline
from gaplanner.problem.problem import Problem, interval_problem
from gaplanner.search.exact.dfs import FOUND, INFEASIBLE, PAUSED, SKYLINE
from gaplanner.search.exact.parts import make_part
from gaplanner.search.exact.parts_search import slice_budget
from gaplanner.search.exact.probes import Probe, RestartingProbe

#: The tie-break orders tried on a piece, heaviest clique first: around blocks placed already, the
#: sections they leave least room in decide whether the piece fits. Then restarting probes (their seeds).
PIECE_ORDERS = ("TAW", "TWA", "WAT")
PIECE_SEEDS = (1, 2)


@dataclass(frozen=True)
class PieceResult:
    """Offsets of the window's blocks (None: some piece did not fit), whether a piece was proved not to
    fit under the target (no plan of the free blocks does then), and the placements searched."""

    offsets: np.ndarray | None
    proved: bool
    placements: int


def pieces(lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
    """The blocks (indices into ``lower``) split at each time no lifetime crosses, in time order."""
    if len(lower) == 0:
        return []
    order = np.lexsort((np.arange(len(lower)), lower))
    reach = np.maximum.accumulate(upper[order])
    starts = np.ones(len(order), bool)
    starts[1:] = lower[order][1:] >= reach[:-1]
    return [piece.astype(np.int64) for piece in np.split(order, np.flatnonzero(starts)[1:])]


def piece_problem(window: Problem, free: np.ndarray, offsets: np.ndarray) -> tuple[Problem, np.ndarray]:
    """The piece of ``free`` blocks with the window's placed blocks (those past its free ones, see
    :func:`fit_pieces`) live during it pinned at ``offsets``, lifetimes cut to the piece; and the
    window's indices of the piece's blocks (the free ones first)."""
    a, b = int(window.lower[free].min()), int(window.upper[free].max())
    placed = window.pinned >= 0
    placed[free] = False
    live = np.flatnonzero(placed & (window.lower < b) & (window.upper > a))
    blocks = np.r_[free, live].astype(np.int64)
    pinned = window.pinned[blocks].copy()
    pinned[len(free) :] = offsets[live]
    lower, upper = np.maximum(window.lower[blocks], a), np.minimum(window.upper[blocks], b)
    ids = tuple(str(i) for i in range(len(blocks)))
    sizes, alignments = window.sizes[blocks], window.alignments[blocks]
    return interval_problem(f"{window.name}[{a}:{b})", ids, sizes, alignments, lower, upper, pinned), blocks


def _search_piece(
    piece: Problem, target: int, budget: int, deadline: Deadline
) -> tuple[np.ndarray | None, bool, int]:
    """A plan of ``piece`` under ``target`` (or None), whether it has none for sure, and placements."""
    part = make_part(piece, np.arange(piece.n))
    if part.bound > target:
        return None, True, 0
    spent, step = 0, slice_budget(part)
    orders = (*SKYLINE, *PIECE_ORDERS) if part.full else PIECE_ORDERS
    for kind in (*orders, *PIECE_SEEDS):
        probe = Probe(part, target, kind) if isinstance(kind, str) else RestartingProbe(part, target, kind)
        start = probe.nodes
        status = PAUSED
        while status == PAUSED and probe.nodes - start < budget and not deadline.passed():
            status = probe.run(min(step, budget - (probe.nodes - start)))
        spent += probe.nodes - start
        if status == FOUND:
            return probe.offsets.copy(), False, spent
        if status == INFEASIBLE:
            return None, True, spent
        if deadline.passed():
            break
    return None, False, spent


def fit_pieces(
    window: Problem,
    free: int,
    offsets: np.ndarray,
    target: int,
    budget: int,
    deadline: Deadline | None = None,
    max_blocks: int | None = None,
) -> PieceResult:
    """``offsets`` (a valid plan of ``window``) with every block under ``target``, its first ``free``
    blocks placed again piece by piece (see the module), or None where a piece did not fit.

    The window's other blocks are placed where ``offsets`` puts them and must be pinned there in
    ``window``. ``budget``: placements per order tried on a piece. The pieces with a block above the
    target are searched, the highest block's first; one of more than ``max_blocks`` blocks (obstacles
    included) is not, and does not fit (each placement costs time in proportion to its blocks).
    """
    deadline = deadline or no_deadline()
    result = np.asarray(offsets, np.int64).copy()
    tops = result + window.sizes
    if tops[free:].max(initial=0) > target:  # a placed block above the target stays there
        return PieceResult(None, True, 0)
    split = pieces(window.lower[:free], window.upper[:free])
    split = [piece for piece in split if tops[piece].max() > target]
    split.sort(key=lambda piece: -int(tops[piece].max()))
    spent = 0
    for piece in split:
        sub, blocks = piece_problem(window, piece, result)
        if max_blocks is not None and sub.n > max_blocks:
            return PieceResult(None, False, spent)
        found, proved, placements = _search_piece(sub, target, budget, deadline)
        spent += placements
        if found is None:
            return PieceResult(None, proved, spent)
        result[blocks[: len(piece)]] = found[: len(piece)]
    return PieceResult(result, False, spent)
