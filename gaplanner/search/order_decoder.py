"""Decoding orders of multi-core problems without conflict pairs.

On a multi-core graph or a vector-clock problem a block's conflicts follow
from its happens-before vectors (:mod:`gaplanner.problem.order`): per group
of the :class:`~gaplanner.problem.order.OrderIndex` the blocks that may
conflict with it are one run of ranks, found by two binary searches. A decode
scans those runs, keeps the placed blocks that really conflict (tested
exactly, component by component), and places the block among them by the
pair-list decoder's rules (first-fit, or best-fit; the same functions as the
interval decoder), so it gives the pair-list decoder's offsets for the same
order, in memory O(n x components).
"""

from __future__ import annotations

from gaplanner.native import _order_decoder


def decode_order_population(
    orders, prefix, known, sizes, alignments, index, pinned, best_fit, offsets, chunks, threads
):  # fmt: skip
    """Decode every row of ``orders`` in parallel (rows ``c``, ``c + chunks``, ... per chunk, on
    ``threads`` threads): the ``pinned`` blocks and the first ``prefix[i]`` blocks at their offsets in
    ``known``, the rest by first-fit (or best-fit) among the placed blocks they conflict with; write
    ``offsets``, return the peaks. ``index``: an :class:`~gaplanner.problem.order.OrderIndex`'s arrays."""
    return _order_decoder.decode_order_population(
        orders, prefix, known, sizes, alignments, index, pinned, best_fit, offsets, chunks, threads
    )
