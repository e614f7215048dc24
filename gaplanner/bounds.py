"""Lower bounds on the arena size.

No plan can be smaller than the total size of a set of mutually conflicting
blocks (they need pairwise disjoint address ranges). For interval lifetimes
the heaviest such set is the *max load*: the largest sum of sizes live at one
instant.

For a multi-core graph the conflict graph is not an interval graph, but the
max load over any linear extension of its happens-before order is still a
valid bound: if blocks ``a`` and ``b`` are both live at position ``t`` of the
extension, then (say) ``a``'s last reader is at or after ``t`` and ``b``'s
writer at or before ``t``, so ``a``'s readers cannot all happen before ``b``'s
writer (that would put them earlier in the extension), and the same with the
roles swapped: the blocks live at ``t`` conflict pairwise, a clique.
"""

from __future__ import annotations

import numpy as np


def max_load(lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray) -> int:
    """Largest sum of ``sizes`` over blocks live at one instant of ``[lower, upper)``."""
    if len(sizes) == 0:
        return 0
    times = np.concatenate([upper, lower])
    deltas = np.concatenate([-sizes, sizes]).astype(np.int64)
    # At equal times the ends come first: half-open lifetimes ending at t do not meet those starting at t.
    order = np.lexsort((np.r_[np.zeros(len(upper)), np.ones(len(lower))], times))
    return int(np.cumsum(deltas[order]).max())


def load_profile(lower: np.ndarray, upper: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the live bytes: ``(times, load)`` with ``load[i]`` on ``[times[i], times[i+1])``."""
    times = np.unique(np.concatenate([lower, upper]))
    change = np.zeros(len(times), np.int64)
    np.add.at(change, np.searchsorted(times, lower), sizes)
    np.add.at(change, np.searchsorted(times, upper), -sizes)
    return times, np.cumsum(change)
