"""The package's compiled kernels: C++ extension modules built by the package's own build.

Each ``_name`` module holds the kernels of one Python module (``_decoder`` those
of :mod:`gaplanner.search.decoder`); the Python module keeps the data classes and
calls them. The kernels take numpy arrays of the exact element type and layout
they name (a mismatch is a ``TypeError`` naming the argument, never a silent
copy), release the GIL while they compute, and run a parallel loop on
:func:`threads` threads.

The thread count is per Python thread, like numba's ``set_num_threads``: the
search beside the GA narrows its own thread's count without touching the GA's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _default_threads() -> int:
    configured = os.environ.get("GAPLANNER_THREADS", "")
    return max(1, int(configured)) if configured.isdigit() else usable_cores()


def threads() -> int:
    """How many threads this Python thread's parallel kernels use (``GAPLANNER_THREADS``, else every core)."""
    count = getattr(_local, "threads", None)
    return count if count is not None else _default_threads()


def set_threads(count: int) -> None:
    """Set how many threads this Python thread's parallel kernels use."""
    _local.threads = max(1, int(count))


@contextmanager
def limited_threads(count: int) -> Iterator[None]:
    """This Python thread's parallel kernels on ``count`` threads for the block, then as before."""
    before = getattr(_local, "threads", None)
    set_threads(count)
    try:
        yield
    finally:
        _local.threads = before
