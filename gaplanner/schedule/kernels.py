"""The order search's kernels (C++, :mod:`gaplanner.native`): random keys to an order, an order's score,
one-operator moves.

An order is scored by (peak, positions at the peak): the second number lets a
local search walk across orders of one peak towards one that lowers it.

:func:`local_search` improves an order in place by moves kept when the score
does not get worse. A quarter of the moves take one operator elsewhere within
its legal window; half drag an operator earlier with the ones it depends on in
between, or later with those depending on it, mostly nearby and now and then
anywhere (a quarter of the drags); a quarter carry an operator anywhere it may
go with the operators near it that only it needs or that only need it (a chain
of gradient-free backward work moved out of the forward pass, or into it). Half
take an operator running near the peak. Its moves are drawn from a Mersenne
twister seeded with ``seed``: the same seed gives the same moves.
"""

from __future__ import annotations

from gaplanner.native._schedule import decode_keys, local_search, score_keys

__all__ = ["decode_keys", "local_search", "score_keys"]
