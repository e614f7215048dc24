"""A plan of an interval problem repaired window by window: the blocks above the bound placed again
with every block whose lifetime lies in a time window around them.

On a large interval problem (tens or hundreds of thousands of blocks) the
starting plans miss the max load by a few long-lived blocks: a block that
lives through thousands of steps needs a gap over its whole lifetime, and
after the heaviest instant's stack and greedy-size's order the arena is
fragmented there, so it goes on top. The rest of the plan is fine. A small
problem does the same when its long lifetimes cross instead of nesting (a
training graph run in an order chosen for its bound, where the saved tensors
no longer die last-in first-out).

So the repair takes the highest block above the bound (the *violator*) and a
window of time around its lifetime. Every block that lives inside the window
is free; every block that crosses an edge of the window keeps its offset and
is pinned, its lifetime cut to the window. A block inside the window
conflicts only with blocks that overlap the window, so the window is a
problem of its own: placed again by first-fit in a few orders (the violators
first, or the window's heaviest instant stacked first, then by size), its
best plan replaces the window's blocks when its peak is lower than theirs
was. A window that does not improve is widened (half the violator's lifetime
on each side, then three halves, seven halves, ...) until the whole run is one window.
A crossing block above the bound must move too, so the window grows until
none crosses its edges.

Each accepted window lowers the highest block in it and moves nothing
outside, so the plan's peak never rises, and every repaired plan is verified
before it is used. The repair is deterministic (fixed orders and windows); a
deadline may end it earlier. It is a heuristic: it stops at the bound, or
when the whole run fails to improve, proving nothing.
"""

from __future__ import annotations

import numpy as np

from gaplanner.deadline import Deadline, no_deadline
from gaplanner.problem.bounds import load_profile
from gaplanner.problem.problem import Problem, interval_problem
from gaplanner.search.decoder import decode
from gaplanner.search.exact.pieces import fit_pieces

#: Widenings of a window that did not improve: the ``k``-th widening adds ``(2**k - 1) / 2`` of the
#: violator's lifetime on each side (0, a half, three halves, ...), until the window holds the whole run.
#: Windows tried in all, at most (each at least lowers the highest block in it, or is widened).
MAX_WINDOWS = 1000
#: The windows' blocks and conflicting pairs, summed over the windows tried, at most this many times the
#: problem's: a budget counted in work, so the repair ends at the same plan whatever the machine's load
#: (unless a deadline comes first), and never costs more than a few dozen decodes of the problem.
MAX_WORK = 16
#: Estimated seconds per conflicting pair and per block of one window's orders, decoded, all together
#: (four first-fit decodes out of time order, the window's conflicts built first).
WINDOW_SECONDS_PER_PAIR = 1e-6
WINDOW_SECONDS_PER_BLOCK = 3e-5
#: A window that first-fit leaves above the bound is searched exactly, piece by piece
#: (:func:`gaplanner.search.exact.pieces.fit_pieces`): placements per order tried on a piece, and
#: placements in all (per block of the problem), counted in work so the plan does not depend on the load.
#: Pieces of more blocks (obstacles included) are not searched: the compiled search's placements cost
#: time in proportion to a piece's blocks, and a window that large would spend the repair's time.
PIECE_PLACEMENTS = 20_000
MAX_PLACEMENTS_PER_BLOCK = 40
PIECE_MAX_BLOCKS = 2_000


def repairable(problem: Problem) -> bool:
    """Interval lifetimes on one time axis (not vector clocks, not a conflict graph)."""
    return problem.interval_conflicts and problem.clocks is None and problem.n > 1


def _by(blocks: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """``blocks`` sorted by ``keys`` (the first is the primary key), ties by index."""
    return blocks[np.lexsort((blocks, *reversed(keys)))]


def _window(
    problem: Problem, offsets: np.ndarray, target: int, a: int, b: int
) -> tuple[np.ndarray, int, int]:
    """The blocks of window ``[a, b)`` (those inside, then those crossing an edge) and its edges, grown
    until no crossing block lies above ``target``."""
    lower, upper, tops = problem.lower, problem.upper, offsets + problem.sizes
    while True:
        inside = (lower >= a) & (upper <= b)
        crossing = (lower < b) & (upper > a) & ~inside
        stuck = crossing & (tops > target)
        if not stuck.any():
            return np.r_[np.flatnonzero(inside), np.flatnonzero(crossing)], a, b
        a, b = min(a, int(lower[stuck].min())), max(b, int(upper[stuck].max()))


def _sub_problem(
    problem: Problem, offsets: np.ndarray, blocks: np.ndarray, free: int, a: int, b: int
) -> Problem:
    """The window as a problem: its first ``free`` blocks free (unless pinned in ``problem``), the rest
    pinned where ``offsets`` put them, every lifetime cut to ``[a, b)``."""
    pinned = problem.pinned[blocks].copy()
    pinned[free:] = offsets[blocks[free:]]
    lower, upper = np.maximum(problem.lower[blocks], a), np.minimum(problem.upper[blocks], b)
    ids = tuple(str(i) for i in range(len(blocks)))
    name = f"{problem.name}[{a}:{b})"
    sizes, alignments = problem.sizes[blocks], problem.alignments[blocks]
    return interval_problem(name, ids, sizes, alignments, lower, upper, pinned)


def window_orders(sub: Problem, free: int, target: int, current: np.ndarray) -> list[np.ndarray]:
    """The orders a window is placed in (its free blocks; the pinned ones follow, placed where pinned).

    The violators (free blocks whose ``current`` offsets put them above ``target``) first, then the
    rest by size; the violators, then the window's heaviest instant stacked (earliest start first,
    latest end first), then the rest by size; that stack first, then the violators; the violators by
    lifetime, then the rest by lifetime, then size (the long ones first, where gaps over time are
    still open)."""
    sizes, width = sub.sizes[:free], (sub.upper - sub.lower)[:free]
    free_blocks = np.arange(free)
    over = (current[:free] + sizes) > target
    violators, rest = _by(free_blocks[over], -sizes[over]), free_blocks[~over]
    times, load = load_profile(sub.lower[:free], sub.upper[:free], sizes)
    instant = times[int(np.argmax(load))] if free else 0
    live = (sub.lower[rest] <= instant) & (sub.upper[rest] > instant)
    stack, others = rest[live], rest[~live]
    stack = _by(stack, sub.lower[stack], -sub.upper[stack])
    others = _by(others, -sizes[others])
    pinned = np.arange(free, sub.n)
    orders = [
        np.r_[violators, _by(rest, -sizes[rest])],
        np.r_[violators, stack, others],
        np.r_[stack, violators, others],
        np.r_[_by(free_blocks[over], -width[over]), _by(rest, -width[rest], -sizes[rest])],
    ]
    return [np.r_[order, pinned] for order in orders]


def _window_estimate(sub: Problem) -> float:
    return WINDOW_SECONDS_PER_PAIR * sub.conflicts.edge_count + WINDOW_SECONDS_PER_BLOCK * sub.n


def _replace(
    problem: Problem, offsets: np.ndarray, target: int, a: int, b: int, deadline: Deadline, placements: int
) -> tuple[bool | None, int, int]:
    """Place window ``[a, b)`` again (see the module) and say whether its highest block is lower now
    (``offsets`` updated; None: the deadline leaves no time for it), with the window's work (blocks and
    pairs) and the exact search's placements (at most ``placements``, where first-fit misses ``target``)."""
    blocks, a, b = _window(problem, offsets, target, a, b)
    free = int(((problem.lower[blocks] >= a) & (problem.upper[blocks] <= b)).sum())
    current = offsets[blocks]
    sub = _sub_problem(problem, offsets, blocks, free, a, b)
    work = sub.n + sub.conflicts.edge_count
    if not deadline.fits(_window_estimate(sub)):
        return None, work, 0
    before = int((current + sub.sizes).max())
    best, best_peak = current, before
    for order in window_orders(sub, free, target, current):
        placed = decode(sub, order)
        peak = int((placed + sub.sizes).max())
        if peak < best_peak:
            best, best_peak = placed, peak
    spent = 0
    if best_peak > target and placements > 0:
        fitted = fit_pieces(
            sub, free, best, target, min(PIECE_PLACEMENTS, placements), deadline, PIECE_MAX_BLOCKS
        )
        spent = fitted.placements
        if fitted.offsets is not None:
            best, best_peak = fitted.offsets, int((fitted.offsets + sub.sizes).max())
    offsets[blocks] = best
    return best_peak < before, work, spent


def repair(problem: Problem, offsets: np.ndarray, deadline: Deadline | None = None) -> np.ndarray:
    """``offsets`` (a valid plan) with its blocks above the lower bound repaired window by window.

    The result is valid and never peaks higher (see the module); it is not verified here.
    """
    deadline = deadline or no_deadline()
    offsets = np.asarray(offsets, np.int64).copy()
    if not repairable(problem):
        return offsets
    target, sizes = problem.lower_bound, problem.sizes
    lower, upper = problem.lower, problem.upper
    run = (int(lower.min()), int(upper.max()))
    widening, work = 0, MAX_WORK * (problem.n + problem.conflicts.edge_count)
    placements = MAX_PLACEMENTS_PER_BLOCK * problem.n
    for _ in range(MAX_WINDOWS):
        tops = offsets + sizes
        if tops.max() <= target or deadline.passed() or work <= 0:
            break
        v = int(np.argmax(tops))  # the highest violator (the first such)
        margin = int((2**widening - 1) / 2 * (upper[v] - lower[v]))
        a, b = int(lower[v]) - margin, int(upper[v]) + margin
        improved, spent, searched = _replace(problem, offsets, target, a, b, deadline, placements)
        work, placements = work - spent, placements - searched
        if improved is None:
            break
        if improved:
            widening = 0
        elif a <= run[0] and b >= run[1]:
            break
        else:
            widening += 1
    return offsets
