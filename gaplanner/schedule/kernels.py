"""Compiled kernels of the order search: random keys to an order, an order's score, one-operator moves.

An order is scored by (peak, positions at the peak): the second number lets a
local search walk across orders of one peak towards one that lowers it.
"""

from __future__ import annotations

import numpy as np

from gaplanner.compiled import njit
from gaplanner.schedule.bounds import _surely_live
from gaplanner.schedule.exact import _part_dp
from gaplanner.schedule.memory import _live_bytes, _peak_and_count

#: Share of the drags that go anywhere in the order rather than nearby: in a training graph the saving
#: moves are long ones (a tensor's gradient-free backward work done in the forward pass, so a small
#: result is saved instead of its large input; or forward work only the backward reads, run there).
LONG_DRAGS = 0.25
#: Positions scanned beside an operator for the ones only it needs (or that only need it) to carry along.
CARRY_SPAN = 64


@njit(nogil=True)
def decode_keys(
    keys: np.ndarray, pred_ptr: np.ndarray, succ_ptr: np.ndarray, succ_idx: np.ndarray
) -> np.ndarray:
    """The topological order that always runs the ready operator of smallest key (ties: lower index)."""
    n = len(keys)
    indegree = np.empty(n, np.int64)
    for k in range(n):
        indegree[k] = pred_ptr[k + 1] - pred_ptr[k]
    heap_key = np.empty(n, np.float64)
    heap_op = np.empty(n, np.int64)
    size = 0
    order = np.empty(n, np.int64)
    for k in range(n):
        if indegree[k] == 0:
            size = _push(heap_key, heap_op, size, keys[k], k)
    for p in range(n):
        u = heap_op[0]
        size = _pop(heap_key, heap_op, size)
        order[p] = u
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[e]
            indegree[v] -= 1
            if indegree[v] == 0:
                size = _push(heap_key, heap_op, size, keys[v], v)
    return order


@njit(inline="always")
def _less(ka: float, oa: int, kb: float, ob: int) -> bool:
    return ka < kb or (ka == kb and oa < ob)


@njit
def _push(hk: np.ndarray, ho: np.ndarray, size: int, key: float, op: int) -> int:
    i = size
    hk[i], ho[i] = key, op
    while i > 0:
        parent = (i - 1) >> 1
        if not _less(hk[i], ho[i], hk[parent], ho[parent]):
            break
        hk[i], hk[parent] = hk[parent], hk[i]
        ho[i], ho[parent] = ho[parent], ho[i]
        i = parent
    return size + 1


@njit
def _pop(hk: np.ndarray, ho: np.ndarray, size: int) -> int:
    size -= 1
    hk[0], ho[0] = hk[size], ho[size]
    i = 0
    while True:
        left, smallest = 2 * i + 1, i
        if left < size and _less(hk[left], ho[left], hk[smallest], ho[smallest]):
            smallest = left
        if left + 1 < size and _less(hk[left + 1], ho[left + 1], hk[smallest], ho[smallest]):
            smallest = left + 1
        if smallest == i:
            return size
        hk[i], hk[smallest] = hk[smallest], hk[i]
        ho[i], ho[smallest] = ho[smallest], ho[i]
        i = smallest


@njit(nogil=True)
def score_keys(
    keys: np.ndarray,
    pred_ptr: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    model: tuple,  # type: ignore[type-arg]
) -> np.ndarray:
    """(peak, positions at the peak) of each row of ``keys`` decoded to an order."""
    n = keys.shape[1]
    out = np.empty((keys.shape[0], 2), np.int64)
    pos = np.empty(n, np.int64)
    load = np.empty(n + 1, np.int64)
    last = np.empty(len(model[0]), np.int64)
    for r in range(keys.shape[0]):
        order = decode_keys(keys[r], pred_ptr, succ_ptr, succ_idx)
        for p in range(n):
            pos[order[p]] = p
        _live_bytes(pos, n, *model, load, last)
        out[r, 0], out[r, 1] = _peak_and_count(load)
    return out


@njit(nogil=True)
def _move(order: np.ndarray, pos: np.ndarray, src: int, dst: int) -> None:
    """Move the operator at position ``src`` to position ``dst``, shifting those between."""
    k = order[src]
    if dst > src:
        for p in range(src, dst):
            order[p] = order[p + 1]
            pos[order[p]] = p
    else:
        for p in range(src, dst, -1):
            order[p] = order[p - 1]
            pos[order[p]] = p
    order[dst] = k
    pos[k] = dst


@njit(nogil=True)
def _drag(
    order: np.ndarray,
    pos: np.ndarray,
    src: int,
    dst: int,
    ptr: np.ndarray,
    idx: np.ndarray,
    mark: np.ndarray,
    buffer: np.ndarray,
) -> None:
    """Move the operator at ``src`` to ``dst`` with the operators between that it depends on (earlier:
    ``ptr``/``idx`` are successor lists, an operator with a marked successor is marked) or that depend
    on it (later: predecessor lists), the others keeping their relative order: a valid order again."""
    step = -1 if dst < src else 1
    lo, hi = min(src, dst), max(src, dst)
    mark[order[src]] = True
    for p in range(src + step, dst + step, step):
        u = order[p]
        for e in range(ptr[u], ptr[u + 1]):
            if mark[idx[e]]:
                mark[u] = True
                break
    count = 0
    first, second = (True, False) if dst < src else (False, True)
    for want in (first, second):
        for p in range(lo, hi + 1):
            if mark[order[p]] == want:
                buffer[count] = order[p]
                count += 1
    for p in range(lo, hi + 1):
        order[p] = buffer[p - lo]
        pos[order[p]] = p
        mark[order[p]] = False


@njit(nogil=True)
def _carry(
    order: np.ndarray,
    pos: np.ndarray,
    src: int,
    dst: int,
    ptr: np.ndarray,
    idx: np.ndarray,
    mark: np.ndarray,
    buffer: np.ndarray,
) -> tuple[int, int]:
    """Move the operator at ``src`` to ``dst`` with the operators near it, on the other side, that only it
    and they need (later: ``ptr``/``idx`` are successor lists, so its private producers go along) or
    that need only it and them (earlier: predecessor lists, its private consumers). The first and last
    positions touched."""
    n = len(order)
    later = dst > src
    step = -1 if later else 1
    end = max(0, src - CARRY_SPAN) if later else min(n - 1, src + CARRY_SPAN)
    mark[order[src]] = True
    for p in range(src + step, end + step, step):
        u = order[p]
        private = ptr[u + 1] > ptr[u]
        for e in range(ptr[u], ptr[u + 1]):
            if not mark[idx[e]]:
                private = False
                break
        mark[u] = private
    lo, hi = (end, dst) if later else (dst, end)
    count = 0
    for want in (not later, later):
        for p in range(lo, hi + 1):
            if mark[order[p]] == want:
                buffer[count] = order[p]
                count += 1
    for p in range(lo, hi + 1):
        order[p] = buffer[p - lo]
        pos[order[p]] = p
        mark[order[p]] = False
    return lo, hi


@njit(nogil=True)
def _group_move(
    kind: int,
    order: np.ndarray,
    pos: np.ndarray,
    src: int,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    mark: np.ndarray,
    buffer: np.ndarray,
) -> tuple[int, int]:
    """A move of several operators at once (``kind`` 2-7); the positions touched, or (-1, -1) for none."""
    n = len(order)
    k = order[src]
    if kind >= 6:  # carried: anywhere the operator itself may go
        lo, hi = 0, n - 1
        for e in range(pred_ptr[k], pred_ptr[k + 1]):
            lo = max(lo, pos[pred_idx[e]] + 1)
        for e in range(succ_ptr[k], succ_ptr[k + 1]):
            hi = min(hi, pos[succ_idx[e]] - 1)
        dst = np.random.randint(lo, src) if kind == 6 and lo < src else -1
        dst = np.random.randint(src + 1, hi + 1) if kind == 7 and src < hi else dst
        if dst < 0:
            return -1, -1
        if kind == 6:  # earlier, with the consumers only it feeds
            return _carry(order, pos, src, dst, pred_ptr, pred_idx, mark, buffer)
        return _carry(order, pos, src, dst, succ_ptr, succ_idx, mark, buffer)  # later, with private producers
    if np.random.random() < LONG_DRAGS:  # a group carried across the graph
        reach = 2 + np.random.randint(n)
    else:
        reach = min(n - 1, 2 + int(np.random.exponential(16.0)))
    earlier = kind % 2 == 0
    dst = min(n - 1, max(0, src - reach if earlier else src + reach))
    if dst == src:
        return -1, -1
    if earlier:  # earlier: with the operators between that it depends on
        _drag(order, pos, src, dst, succ_ptr, succ_idx, mark, buffer)
    else:  # later: with those between that depend on it
        _drag(order, pos, src, dst, pred_ptr, pred_idx, mark, buffer)
    return min(src, dst), max(src, dst)


@njit(nogil=True)
def local_search(
    order: np.ndarray,
    moves: int,
    seed: int,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    model: tuple,  # type: ignore[type-arg]
) -> tuple[int, int]:
    """Improve ``order`` in place by moves kept when the score does not get worse.

    A quarter of the moves take one operator elsewhere within its legal window;
    half drag an operator earlier with the ones it depends on in between, or
    later with those depending on it, mostly nearby and now and then anywhere
    (``LONG_DRAGS``); a quarter carry an operator anywhere it may go with the
    operators only it needs or that only need it (``_carry``: a chain of
    gradient-free backward work moved out of the forward pass, or into it).
    Half take an operator running near the peak. Returns the final (peak,
    positions at peak).
    """
    np.random.seed(seed)
    n = len(order)
    pos = np.empty(n, np.int64)
    for p in range(n):
        pos[order[p]] = p
    load = np.empty(n + 1, np.int64)
    last = np.empty(len(model[0]), np.int64)
    mark = np.zeros(n, np.bool_)
    buffer = np.empty(n, np.int64)
    saved = order.copy()
    _live_bytes(pos, n, *model, load, last)
    peak, count = _peak_and_count(load)
    at_peak = int(np.argmax(load))
    for _ in range(moves):
        if np.random.random() < 0.5:
            src = min(n - 1, max(0, at_peak + np.random.randint(-8, 9)))
        else:
            src = np.random.randint(n)
        k = order[src]
        kind = np.random.randint(8)
        if kind < 2:
            lo, hi = 0, n - 1
            for e in range(pred_ptr[k], pred_ptr[k + 1]):
                lo = max(lo, pos[pred_idx[e]] + 1)
            for e in range(succ_ptr[k], succ_ptr[k + 1]):
                hi = min(hi, pos[succ_idx[e]] - 1)
            if hi <= lo:
                continue
            dst = np.random.randint(lo, hi)
            if dst >= src:
                dst += 1
            _move(order, pos, src, dst)
        else:
            saved[:] = order
            lo, hi = _group_move(kind, order, pos, src, pred_ptr, pred_idx, succ_ptr, succ_idx, mark, buffer)
            if lo < 0:
                continue
        _live_bytes(pos, n, *model, load, last)
        new_peak, new_count = _peak_and_count(load)
        if new_peak < peak or (new_peak == peak and new_count <= count):
            peak, count = new_peak, new_count
            at_peak = int(np.argmax(load))
        elif kind < 2:
            _move(order, pos, dst, src)
        else:
            for p in range(lo, hi + 1):
                order[p] = saved[p]
                pos[order[p]] = p
    return peak, count


def warm_up() -> None:
    """Load (or compile) the order search's kernels on a two-operator chain, before any clock starts."""
    from gaplanner.search.kernels import prepare

    prepare()  # a stale on-disk cache is dropped before any kernel loads
    ptr, idx = np.array([0, 0, 1], np.int64), np.array([0], np.int64)
    succ_ptr, succ_idx = np.array([0, 1, 1], np.int64), np.array([1], np.int64)
    sizes, flags = np.ones(1, np.int64), np.zeros(1, np.bool_)
    empty = np.zeros(0, np.int64)
    model = (
        sizes,
        np.array([0, 2]),
        np.array([0, 1]),
        flags,
        flags,
        empty,
        empty,
        np.zeros(1, np.int64),
        empty,
    )
    score_keys(np.zeros((1, 2)), ptr, succ_ptr, succ_idx, model)
    local_search(np.array([0, 1], np.int64), 2, 0, ptr, idx, succ_ptr, succ_idx, model)
    _live_bytes(np.array([0, 1], np.int64), 2, *model, np.zeros(3, np.int64), np.zeros(1, np.int64))
    one = np.zeros(1, np.int64)
    _part_dp(1, one, one, flags, flags, sizes, 0, empty, empty, one, empty, 4)
    _surely_live(
        np.array([0, 1], np.int64), ptr, idx, succ_ptr, succ_idx, *model[1:3], sizes, flags, flags, 1
    )
