"""The exact search's depth-first search over canonical placements (numba), one target at a time.

A :class:`Probe` asks: can every block of a part lie below ``target``? Its
search places blocks one per level, each on its floor (the lowest aligned
offset above the placed blocks it conflicts with), in non-decreasing order of
(floor, rank). See :mod:`gaplanner.search.exact.search` for why each rule keeps the search
complete. The whole state lives in arrays, so :meth:`Probe.run` searches a
slice of placements and returns; the caller reads the clock between slices.

**Splitting as it goes.** When a placement leaves the unplaced blocks of the
current group in several connected pieces (no unplaced conflict between
them), each piece becomes a group of its own and is solved in turn, all from
the same starting key. Pieces do not constrain each other, so when one piece
has no plan the search jumps back over the pieces solved before it, to the
placement that split them, instead of retrying their placements one by one.
"""

from __future__ import annotations

import numpy as np

from gaplanner.compiled import njit

FOUND, INFEASIBLE, PAUSED, NEED_SPACE = 0, 1, 2, 3

#: Block orders for the tie-break rank (MiniMalloc's: lifetime width, area, heaviest clique; descending).
HEURISTICS: tuple[str, ...] = ("WAT", "TAW", "TWA")
#: Skyline orders, for parts packed full at their bound (see :attr:`Part.full`): earliest start first or
#: latest end first, the longest lifetime first among equals. With placements in (floor, rank) order, the
#: lowest hole is filled from one end of time to the other (the bottom-left rule of perfect packings), and
#: a hole whose blocks the order has passed is found at once (:func:`_lowest_ahead`).
SKYLINE: tuple[str, ...] = ("LW", "UW")

_BIG = np.iinfo(np.int64).max

# Positions in the tuple of the part's arrays (read-only during the search).
(SIZES, ALIGNS, FIXED, RANK, TWIN, TWIN_CLASS, NBR_PTR, NBR_IDX, CLQ_PTR, CLQ_IDX, BC_PTR, BC_IDX,
 ORDER_KEYS, WIDTH, AREA, SIZE_KEY, START_KEY, END_KEY, NBR_LEAST, LEAST) = range(20)  # fmt: skip
#: Codes of the block features in ``p[ORDER_KEYS]`` (see :data:`HEURISTICS`); L: earliest start first,
#: U: latest end first.
KEY_CODES = {"T": 0, "W": 1, "A": 2, "Z": 3, "L": 4, "U": 5}
# Positions in the tuple of state arrays.
(OFFSETS, MIN_OFF, FLOOR, TOTAL, GRP, GRP_LEFT, GRP_FRAME, CLQ_GRP, RANK_NOW,  # per block, group, clique
 LV_BLK, LV_OFF, LV_RANK, LV_DONE, LV_HEIGHT, LV_MO, LV_FL, LV_GROUP, LV_ROOT,  # per level
 F_START, F_PARENT, F_FIRST, F_COUNT, F_CUR, F_RK,  # per frame (a split)
 MO_B, MO_V, FL_C, FL_V, RK_B, RK_V, STAMP, AFFECTED, QUEUE, NEAR, WITNESS, SC) = range(36)  # fmt: skip
# Scalars in state[SC].
DEPTH, MO_TOP, FL_TOP, RK_TOP, STAMP_NOW, NODES, FRAMES, NEXT_GROUP, SPLITS = range(9)


@njit
def _align_up(x, alignment):
    return (x + alignment - 1) // alignment * alignment


@njit
def _lowest_top(p, s, g):
    """The lowest top an unplaced movable block of group ``g`` could reach: no block goes at or above it."""
    sizes, fixed, offsets, min_off, grp = p[SIZES], p[FIXED], s[OFFSETS], s[MIN_OFF], s[GRP]
    height = _BIG
    for b in range(len(sizes)):
        if offsets[b] < 0 and fixed[b] < 0 and grp[b] == g:
            height = min(height, min_off[b] + sizes[b])
    return height


@njit
def _next_candidate(p, s, d):
    """The unplaced block of level ``d``'s group with the smallest (floor, rank) above the level's key."""
    rank, twin_prev, offsets, min_off, grp = s[RANK_NOW], p[TWIN], s[OFFSETS], s[MIN_OFF], s[GRP]
    g, key_off, key_rank, height = s[LV_GROUP][d], s[LV_OFF][d], s[LV_RANK][d], s[LV_HEIGHT][d]
    best, best_off, best_rank = -1, _BIG, _BIG
    for b in range(len(rank)):
        if offsets[b] >= 0 or grp[b] != g:
            continue
        o, r = min_off[b], rank[b]
        if o >= height or o < key_off or (o == key_off and r <= key_rank):
            continue
        if o < best_off or (o == best_off and r < best_rank):
            twin = twin_prev[b]
            if twin >= 0 and offsets[twin] < 0 and grp[twin] == g:  # its identical twin goes first
                continue
            best, best_off, best_rank = b, o, r
    return best


@njit
def _take_back(p, s, b):
    """Unplace ``b`` (its own totals and counts; the logs are rolled back by :func:`_roll_back`)."""
    bc_ptr, bc_idx, total = p[BC_PTR], p[BC_IDX], s[TOTAL]
    for e in range(bc_ptr[b], bc_ptr[b + 1]):
        total[bc_idx[e]] += p[SIZES][b]
    s[OFFSETS][b] = -1
    s[GRP_LEFT][s[GRP][b]] += 1


@njit
def _roll_back(s, mo_mark, fl_mark):
    """Restore floors and clique floors changed since the marks."""
    sc, min_off, floor = s[SC], s[MIN_OFF], s[FLOOR]
    for k in range(sc[MO_TOP] - 1, mo_mark - 1, -1):
        min_off[s[MO_B][k]] = s[MO_V][k]
    for k in range(sc[FL_TOP] - 1, fl_mark - 1, -1):
        floor[s[FL_C][k]] = s[FL_V][k]
    sc[MO_TOP], sc[FL_TOP] = mo_mark, fl_mark


@njit
def _place(p, s, c, capacity):
    """Place ``c`` on its floor and propagate; (still feasible, unplaced blocks conflicting with ``c``)."""
    sizes, aligns, fixed, nbr_ptr, nbr_idx = p[SIZES], p[ALIGNS], p[FIXED], p[NBR_PTR], p[NBR_IDX]
    clq_ptr, clq_idx, bc_ptr, bc_idx = p[CLQ_PTR], p[CLQ_IDX], p[BC_PTR], p[BC_IDX]
    offsets, min_off, floor, total, sc = s[OFFSETS], s[MIN_OFF], s[FLOOR], s[TOTAL], s[SC]
    mo_b, mo_v, fl_c, fl_v, stamp, affected = s[MO_B], s[MO_V], s[FL_C], s[FL_V], s[STAMP], s[AFFECTED]
    witness = s[WITNESS]
    off = min_off[c]
    top = off + sizes[c]
    g = s[GRP][c]
    offsets[c] = off
    s[GRP_LEFT][g] -= 1
    ok = top <= capacity
    above = 0
    sc[STAMP_NOW] += 1  # a fresh stamp for the cliques this placement affects
    n_affected = 0
    mo_top = sc[MO_TOP]
    for e in range(nbr_ptr[c], nbr_ptr[c + 1]):
        x = nbr_idx[e]
        if offsets[x] >= 0:
            continue
        above += 1
        if min_off[x] >= top:
            continue
        mo_b[mo_top], mo_v[mo_top] = x, min_off[x]
        mo_top += 1
        raised = _align_up(top, aligns[x])
        min_off[x] = raised
        if (fixed[x] >= 0 and raised > fixed[x]) or raised + sizes[x] > capacity:
            ok = False
        for f in range(bc_ptr[x], bc_ptr[x + 1]):
            q = bc_idx[f]
            w = witness[q]
            if stamp[q] != sc[STAMP_NOW] and (w == x or offsets[w] >= 0 or min_off[w] != floor[q]):
                # The clique's floor is still its witness's floor unless the witness moved or is placed.
                stamp[q] = sc[STAMP_NOW]
                affected[n_affected] = q
                n_affected += 1
    sc[MO_TOP] = mo_top
    fl_top = sc[FL_TOP]
    for e in range(bc_ptr[c], bc_ptr[c + 1]):
        q = bc_idx[e]
        total[q] -= sizes[c]
        if floor[q] < top:  # every unplaced member conflicts with c and goes above it
            fl_c[fl_top], fl_v[fl_top] = q, floor[q]
            fl_top += 1
            floor[q] = top
    for k in range(n_affected):  # no unplaced member goes below the lowest floor among them
        q = affected[k]
        lowest = _BIG
        for e in range(clq_ptr[q], clq_ptr[q + 1]):
            y = clq_idx[e]
            if offsets[y] < 0 and min_off[y] < lowest:
                lowest = min_off[y]
                witness[q] = y
        if lowest != _BIG and floor[q] < lowest:
            fl_c[fl_top], fl_v[fl_top] = q, floor[q]
            fl_top += 1
            floor[q] = lowest
    sc[FL_TOP] = fl_top
    if ok:
        clq_grp, least = s[CLQ_GRP], p[LEAST][0]
        for q in range(len(total)):
            if total[q] > 0:
                if clq_grp[q] != g:
                    lowest = floor[q]
                elif floor[q] <= off and off + total[q] + least > capacity:
                    lowest = _lowest_ahead(p, s, q, off, s[RANK_NOW][c], capacity - total[q])
                else:  # within the group, blocks come in non-decreasing offset: none goes below c
                    lowest = max(floor[q], off)
                if lowest + total[q] > capacity:
                    ok = False
                    break
    return ok, above


@njit
def _lowest_ahead(p, s, q, off, r, enough):
    """The lowest offset an unplaced member of clique ``q`` can still take after a placement at (off, r);
    it stops early at one no higher than ``enough``.

    The group's placements go on in increasing (floor, rank) from (off, r). A
    member whose (floor, rank) is already behind that key is placed, if ever,
    only after a later placement raises its floor: a conflicting block placed at
    ``off`` or above, so its floor passes ``off`` by at least its smallest
    neighbour's size. Pinned members keep their floor. At a target with no
    slack this finds at once a time section none of its blocks can fill.
    """
    clq_ptr, clq_idx, aligns, fixed, nbr_least = p[CLQ_PTR], p[CLQ_IDX], p[ALIGNS], p[FIXED], p[NBR_LEAST]
    offsets, min_off, rank = s[OFFSETS], s[MIN_OFF], s[RANK_NOW]
    lowest = _BIG
    for e in range(clq_ptr[q], clq_ptr[q + 1]):
        y = clq_idx[e]
        if offsets[y] >= 0:
            continue
        o = min_off[y]
        if fixed[y] < 0 and (o < off or (o == off and rank[y] < r)):
            o = _BIG if nbr_least[y] == _BIG else _align_up(off + nbr_least[y], aligns[y])
        if o < lowest:
            lowest = o
            if lowest <= enough:
                break
    return max(lowest, off)


@njit
def _split(p, s, d, c, above, capacity):
    """After placing ``c`` at level ``d``: split its group into connected pieces; the pieces' count."""
    nbr_ptr, nbr_idx, bc_ptr, bc_idx = p[NBR_PTR], p[NBR_IDX], p[BC_PTR], p[BC_IDX]
    offsets, grp, queue, sc = s[OFFSETS], s[GRP], s[QUEUE], s[SC]
    g = grp[c]
    first = sc[NEXT_GROUP]
    pieces = 0
    # The group was connected with c: every block in it is joined to a neighbour of c. So once the
    # walk has reached every unplaced neighbour of c, it has reached the whole group: one piece.
    near, mark = s[NEAR], sc[NODES]
    for e in range(nbr_ptr[c], nbr_ptr[c + 1]):
        near[nbr_idx[e]] = mark
    for start in range(len(offsets)):
        if offsets[start] >= 0 or grp[start] != g:
            continue
        label = first + pieces
        pieces += 1
        grp[start] = label
        head, tail = 0, 1
        queue[0] = start
        reached = int(near[start] == mark)
        while head < tail:
            if pieces == 1 and reached == above:
                for k in range(tail):
                    grp[queue[k]] = g
                return 1
            b = queue[head]
            head += 1
            for e in range(nbr_ptr[b], nbr_ptr[b + 1]):
                x = nbr_idx[e]
                if offsets[x] < 0 and grp[x] == g:
                    grp[x] = label
                    queue[tail] = x
                    tail += 1
                    reached += near[x] == mark
        s[GRP_LEFT][label] = tail
    if pieces < 2:  # one piece: give the blocks their group back
        for b in range(len(offsets)):
            if grp[b] == first:
                grp[b] = g
        return pieces
    _hardest_first(p, s, first, pieces, capacity)
    f = sc[FRAMES]
    sc[FRAMES] += 1
    sc[NEXT_GROUP] += pieces
    s[F_START][f], s[F_PARENT][f], s[F_FIRST][f], s[F_COUNT][f], s[F_CUR][f] = d + 1, g, first, pieces, 0
    s[F_RK][f] = sc[RK_TOP]
    for k in range(pieces):
        s[GRP_FRAME][first + k] = f
    clq_grp = s[CLQ_GRP]
    for b in range(len(offsets)):
        if offsets[b] < 0 and first <= grp[b] < first + pieces:
            for e in range(bc_ptr[b], bc_ptr[b + 1]):
                clq_grp[bc_idx[e]] = grp[b]
    _rerank(p, s, first, pieces)
    return pieces


@njit
def _rerank(p, s, first, pieces):
    """Order the pieces' blocks afresh by the heuristic, with each clique's weight what is left unplaced.

    Each piece is a problem of its own, searched from an empty key, as MiniMalloc
    solves each part it splits off; the old ranks go to a log the frame undoes.
    Interchangeable blocks keep their order among themselves (see :func:`_next_candidate`).
    """
    offsets, grp, total, rank, sc = s[OFFSETS], s[GRP], s[TOTAL], s[RANK_NOW], s[SC]
    bc_ptr, bc_idx, twin_class, keys = p[BC_PTR], p[BC_IDX], p[TWIN_CLASS], p[ORDER_KEYS]
    n = len(offsets)
    members = np.empty(n, np.int64)
    k = 0
    for b in range(n):
        if offsets[b] < 0 and first <= grp[b] < first + pieces:
            members[k] = b
            k += 1
    members = members[:k]
    heaviest = np.zeros(k, np.int64)
    for i in range(k):
        b = members[i]
        for e in range(bc_ptr[b], bc_ptr[b + 1]):
            heaviest[i] = max(heaviest[i], total[bc_idx[e]])
    order = np.arange(k)
    for j in range(len(keys) - 1, -1, -1):  # stable sorts, last key first: descending, ties by index
        code = keys[j]
        key = heaviest if code == 0 else p[WIDTH + code - 1][members]
        order = order[np.argsort(-key[order], kind="mergesort")]
    fresh = np.empty(k, np.int64)
    fresh[order] = np.arange(k)
    kind = np.empty(k, np.int64)
    for i in range(k):
        c = twin_class[members[i]]
        kind[i] = c if c >= 0 else n + members[i]
    by_fresh = np.argsort(kind * (k + 1) + fresh, kind="mergesort")
    by_chain = np.argsort(kind * (n + 1) + p[RANK][members], kind="mergesort")
    top = sc[RK_TOP]
    for i in range(k):
        b = members[by_chain[i]]
        s[RK_B][top], s[RK_V][top] = b, rank[b]
        top += 1
        rank[b] = fresh[by_fresh[i]]
    sc[RK_TOP] = top


@njit
def _hardest_first(p, s, first, pieces, capacity):
    """Renumber the pieces by their least slack under the target: the one most likely to fail goes first."""
    bc_ptr, bc_idx, offsets, grp, floor, total = p[BC_PTR], p[BC_IDX], s[OFFSETS], s[GRP], s[FLOOR], s[TOTAL]
    slack = np.full(pieces, _BIG, np.int64)
    for b in range(len(offsets)):
        k = grp[b] - first
        if offsets[b] < 0 and 0 <= k < pieces:
            for e in range(bc_ptr[b], bc_ptr[b + 1]):
                q = bc_idx[e]
                slack[k] = min(slack[k], capacity - floor[q] - total[q])
    order = np.argsort(slack, kind="mergesort")
    new_label = np.empty(pieces, np.int64)
    left = s[GRP_LEFT][first : first + pieces].copy()
    for position in range(pieces):
        new_label[order[position]] = first + position
        s[GRP_LEFT][first + position] = left[order[position]]
    for b in range(len(offsets)):
        k = grp[b] - first
        if offsets[b] < 0 and 0 <= k < pieces:
            grp[b] = new_label[k]


@njit
def _enter(p, s, d, g, root, key_off, key_rank):
    """Start level ``d`` on group ``g``; ``root``: the frame whose piece starts here, or -1."""
    s[LV_GROUP][d], s[LV_ROOT][d], s[LV_OFF][d], s[LV_RANK][d], s[LV_DONE][d] = g, root, key_off, key_rank, 0
    s[LV_HEIGHT][d] = _lowest_top(p, s, g)


@njit
def _pop_frames(p, s, keep):
    """Drop the frames from ``keep`` up: their pieces' blocks and cliques go back to the group split."""
    sc, grp, clq_grp, rank = s[SC], s[GRP], s[CLQ_GRP], s[RANK_NOW]
    if keep < sc[FRAMES]:
        for k in range(sc[RK_TOP] - 1, s[F_RK][keep] - 1, -1):
            rank[s[RK_B][k]] = s[RK_V][k]
        sc[RK_TOP] = s[F_RK][keep]
    for f in range(sc[FRAMES] - 1, keep - 1, -1):
        first, last, parent = s[F_FIRST][f], s[F_FIRST][f] + s[F_COUNT][f], s[F_PARENT][f]
        for b in range(len(grp)):
            if first <= grp[b] < last:
                grp[b] = parent
        for q in range(len(clq_grp)):
            if first <= clq_grp[q] < last:
                clq_grp[q] = parent
        sc[NEXT_GROUP] = first
    sc[FRAMES] = keep


@njit
def _advance(p, s, d):
    """Level ``d``'s group is complete: start the next piece to solve; False when nothing is left."""
    g = s[LV_GROUP][d]
    while True:
        f = s[GRP_FRAME][g]
        if f < 0:
            return False
        if s[F_CUR][f] + 1 < s[F_COUNT][f]:
            s[F_CUR][f] += 1
            _enter(p, s, d, s[F_FIRST][f] + s[F_CUR][f], f, -1, -1)
            return True
        g = s[F_PARENT][f]  # every piece done: the group that was split is done too


@njit(nogil=True)
def search(p, s, capacity, budget):
    """Search for at most ``budget`` placements from the state ``s``: FOUND, INFEASIBLE or PAUSED."""
    sc = s[SC]
    n = len(p[SIZES])
    nodes = 0
    while True:
        d = sc[DEPTH]
        if d == n:
            return FOUND
        if s[GRP_LEFT][s[LV_GROUP][d]] == 0:
            if not _advance(p, s, d):
                return FOUND
            continue
        if nodes >= budget:
            return PAUSED
        c = -1 if s[LV_DONE][d] else _next_candidate(p, s, d)
        if c < 0:
            root = s[LV_ROOT][d]
            if root >= 0:  # a piece has no plan: neither has the split, whatever the pieces before it did
                back = s[F_START][root] - 1
                for k in range(d - 1, back, -1):
                    _take_back(p, s, s[LV_BLK][k])
                _pop_frames(p, s, root)
            elif d == 0:
                return INFEASIBLE
            else:
                back = d - 1
            sc[DEPTH] = back
            _take_back(p, s, s[LV_BLK][back])
            _roll_back(s, s[LV_MO][back], s[LV_FL][back])
            continue
        floors_full = sc[FL_TOP] + (p[BC_PTR][c + 1] - p[BC_PTR][c]) + len(s[TOTAL]) > len(s[FL_C])
        raises_full = sc[MO_TOP] + (p[NBR_PTR][c + 1] - p[NBR_PTR][c]) > len(s[MO_B])
        if floors_full or raises_full or sc[RK_TOP] + n > len(s[RK_B]):
            return NEED_SPACE  # a log could overflow: the caller grows them
        nodes += 1
        sc[NODES] += 1
        s[LV_BLK][d], s[LV_OFF][d], s[LV_RANK][d] = c, s[MIN_OFF][c], s[RANK_NOW][c]
        s[LV_MO][d], s[LV_FL][d] = sc[MO_TOP], sc[FL_TOP]
        ok, above = _place(p, s, c, capacity)
        s[LV_DONE][d] = above == 0  # nothing rests on c: if this branch fails, its siblings do too
        if not ok:
            _take_back(p, s, c)
            _roll_back(s, s[LV_MO][d], s[LV_FL][d])
            continue
        sc[DEPTH] = d + 1
        if d + 1 == n:
            continue
        g = s[GRP][c]
        if sc[SPLITS] and above >= 2 and s[GRP_LEFT][g] >= 2 and _split(p, s, d, c, above, capacity) >= 2:
            f = sc[FRAMES] - 1
            _enter(p, s, d + 1, s[F_FIRST][f], f, -1, -1)
        else:
            _enter(p, s, d + 1, g, -1, s[OFFSETS][c], s[RANK_NOW][c])
