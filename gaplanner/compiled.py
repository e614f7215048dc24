"""The decorator every kernel is compiled with: numba's ``njit``, cached in the package first.

Numba caches a kernel in the ``__pycache__`` beside its source only when
that folder is writable, and otherwise in the user's own cache folder. So a
user who does not own the install (a system or container install, a shared
environment) would compile every kernel again at first use, minutes of CPU,
although the package's build compiled them into the package
(:mod:`gaplanner.search.warm_up`). Here a kernel is looked up in the
package's cache when it can be read, then in the user's; a kernel compiled
here (another CPU, an edited source) is saved to the first of the two that
can be written, and when neither can it is compiled once per process, never
an error. ``NUMBA_CACHE_DIR``, when set, is the only cache, as in numba.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any, ClassVar

import numba as nb
from numba.core.caching import (
    CompileResultCacheImpl,
    FunctionCache,
    InTreeCacheLocator,
    UserProvidedCacheLocator,
    UserWideCacheLocator,
)


class _ReadablePackageLocator(InTreeCacheLocator):
    """The ``__pycache__`` beside the kernel's source: made if it can be, used if it exists."""

    @classmethod
    def from_function(cls, py_func: Callable, py_file: str) -> _ReadablePackageLocator | None:
        if not os.path.exists(py_file):
            return None
        locator = cls(py_func, py_file)
        with contextlib.suppress(OSError):
            locator.ensure_cache_path()
        return locator if os.path.isdir(locator.get_cache_path()) else None


class _PackageCacheImpl(CompileResultCacheImpl):
    _locator_classes: ClassVar[list] = [UserProvidedCacheLocator, _ReadablePackageLocator]


class _UserCacheImpl(CompileResultCacheImpl):
    _locator_classes: ClassVar[list] = [UserWideCacheLocator]


class _PackageCache(FunctionCache):
    _impl_class = _PackageCacheImpl


class _UserCache(FunctionCache):
    _impl_class = _UserCacheImpl


class PackageFirstCache:
    """Numba's per-kernel cache interface over the package's cache, then the user's."""

    def __init__(self, py_func: Callable) -> None:
        kinds = [_PackageCache] if os.environ.get("NUMBA_CACHE_DIR") else [_PackageCache, _UserCache]
        self._caches = []
        for kind in kinds:
            with contextlib.suppress(RuntimeError):  # no such folder, or (the user's) none can be made
                self._caches.append(kind(py_func))

    @property
    def cache_path(self) -> str:
        return self._caches[0].cache_path if self._caches else ""

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        for cache in self._caches:
            try:
                found = cache.load_overload(sig, target_context)
            except OSError:
                continue
            if found is not None:
                return found
        return None

    def save_overload(self, sig: Any, data: Any) -> None:
        for cache in self._caches:
            try:
                cache.save_overload(sig, data)
                return
            except OSError:  # not writable: the next one
                continue

    def enable(self) -> None:
        for cache in self._caches:
            cache.enable()

    def disable(self) -> None:
        for cache in self._caches:
            cache.disable()

    def flush(self) -> None:
        for cache in self._caches:
            cache.flush()


def njit(function: Callable | None = None, **options: Any) -> Any:
    """``numba.njit(**options)``, cached as the module says; ``@njit`` or ``@njit(parallel=True)``."""

    def compile_lazily(py_func: Callable) -> Any:
        dispatcher = nb.njit(**options)(py_func)
        dispatcher._cache = PackageFirstCache(py_func)  # what numba's cache=True sets, found otherwise
        return dispatcher

    return compile_lazily if function is None else compile_lazily(function)
