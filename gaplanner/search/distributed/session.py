"""A Ray session: connect to a cluster, or start a local Ray that listens on loopback only.

Ray is imported lazily: the core library never needs it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Set for a local Ray so that every listener stays on 127.0.0.1.
LOCAL_RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
}


def ray_available() -> bool:
    """Whether Ray can be imported (the ``ray`` extra)."""
    return importlib.util.find_spec("ray") is not None


def cluster_address(address: str | None = None) -> str | None:
    """The cluster to connect to: ``address``, else ``RAY_ADDRESS``, else None (a local Ray)."""
    return address or os.environ.get("RAY_ADDRESS") or None


def ray_running() -> bool:
    """Whether this process is already connected to a Ray (never imports Ray itself)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


@contextmanager
def _loopback_environment() -> Iterator[None]:
    """:data:`LOCAL_RAY_ENV` (where unset) for the processes a local Ray starts, undone afterwards.

    Ray reads ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` when it is imported; if this
    process imported it before, its copy of the flag is set to match.
    """
    saved = {key: os.environ.get(key) for key in [*LOCAL_RAY_ENV, "RAY_ADDRESS"]}
    for key, value in LOCAL_RAY_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.pop("RAY_ADDRESS", None)  # a local Ray, not whatever RAY_ADDRESS names
    from ray._private import ray_constants

    cluster_flag = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] not in ("0", "false")
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster_flag
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def local_ray(num_cpus: int | None = None) -> Iterator[Any]:
    """A local Ray listening on loopback only (no dashboard, no usage stats); shut down on exit."""
    with _loopback_environment():
        import ray

        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
        try:
            yield ray
        finally:
            ray.shutdown()


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While inside, SIGTERM raises SystemExit, so that ``finally`` blocks (``ray.shutdown``) still run.

    Only in the main thread and only when nobody else handles SIGTERM already.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, ready to use; yields the ``ray`` module.

    Uses a Ray already initialised in this process as it is; otherwise connects
    to ``address`` / ``RAY_ADDRESS`` or starts a local Ray (``num_cpus``), and
    shuts down on exit what it started or connected here (never a cluster:
    ``ray.shutdown`` only disconnects from one).
    """
    if ray_running():
        yield sys.modules["ray"]
        return
    address = cluster_address(address)
    with sigterm_unwinds():
        if not address:
            with local_ray(num_cpus) as ray:
                yield ray
            return
        import ray

        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        try:
            yield ray
        finally:
            ray.shutdown()
