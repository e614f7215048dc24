"""The exact search's depth-first search over canonical placements, one target at a time.

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

The search itself is compiled (``gaplanner/native/_dfs.cpp``); this module names
its arrays and codes for the probes that drive it.
"""

from __future__ import annotations

import numpy as np

from gaplanner.native import _dfs

FOUND, INFEASIBLE, PAUSED, NEED_SPACE = 0, 1, 2, 3

#: Block orders for the tie-break rank (MiniMalloc's: lifetime width, area, heaviest clique; descending).
HEURISTICS: tuple[str, ...] = ("WAT", "TAW", "TWA")
#: Skyline orders, for parts packed full at their bound (see :attr:`Part.full`): earliest start first or
#: latest end first, the longest lifetime first among equals. With placements in (floor, rank) order, the
#: lowest hole is filled from one end of time to the other (the bottom-left rule of perfect packings), and
#: a hole whose blocks the order has passed is found at once.
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


#: search(p, s, capacity, budget): at most ``budget`` more placements from the state ``s`` (changed in
#: place, the node count included): FOUND, INFEASIBLE, PAUSED or NEED_SPACE (a log could overflow: the
#: caller grows them and calls again). Holds no Python lock while it searches.
search = _dfs.search
#: _enter(p, s, d, g, root, key_off, key_rank): start level ``d`` on group ``g``; ``root``: the frame whose
#: piece starts there, or -1.
_enter = _dfs.enter
