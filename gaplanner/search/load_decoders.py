"""Load (or compile) the population decoders once, on one-block problems, before a search times them."""

from __future__ import annotations

import numpy as np

from gaplanner.problem.order import HappensBefore, OrderIndex
from gaplanner.search import kernels
from gaplanner.search.decoder import INT32_SENTINEL, INT64_SENTINEL, decode_population_into
from gaplanner.search.interval_decoder import IntervalIndex, decode_interval_population
from gaplanner.search.order_decoder import decode_order_population


def load_decoder() -> None:
    """Load (or compile) every population decoder: the pair list's at both integer widths, the lifetimes',
    the happens-before vectors'."""
    kernels.prepare()
    for dtype, sentinel in ((np.int32, INT32_SENTINEL), (np.int64, INT64_SENTINEL)):
        one = np.ones(1, dtype)
        decode_population_into(
            np.zeros((1, 1), np.int64), np.zeros(1, np.int64), np.zeros((1, 1), np.int64), one, one,
            np.zeros(2, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.int64), False, 1, sentinel,
            np.empty((1, 1), np.int64), 1, 1,
        )  # fmt: skip
    one, index = np.ones(1, np.int64), IntervalIndex.of(np.zeros(1), np.ones(1))
    decode_interval_population(
        np.zeros((1, 1), np.int64), np.zeros(1, np.int64), np.zeros((1, 1), np.int64), one, one,
        index.arrays(), np.zeros(0, np.int64), False, np.empty((1, 1), np.int64), 1, 1,
    )  # fmt: skip
    order = OrderIndex.of(HappensBefore(np.zeros((1, 2), np.int64), np.ones((1, 2), np.int64)))
    decode_order_population(
        np.zeros((1, 1), np.int64), np.zeros(1, np.int64), np.zeros((1, 1), np.int64), one, one,
        order.arrays(), np.zeros(0, np.int64), False, np.empty((1, 1), np.int64), 1, 1,
    )  # fmt: skip
