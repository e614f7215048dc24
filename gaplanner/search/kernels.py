"""The package's compiled (numba) kernels: a consistent on-disk cache, calm threads, loaded up front.

Nothing here runs at import time. :func:`prepare` runs once per process, at
the first use of the decoder (or from :func:`gaplanner.search.warm.warm_up`):

* **A consistent cache.** Numba caches a compiled function together with the
  callees compiled into it (``fitness._score_population`` carries its own copy
  of ``placement.decode_row``) but invalidates the entry only when the
  function's own file changes: after an edit to ``placement.py`` a search
  would keep running the old decoder from the cache. So the package's cache
  files are dropped whenever any of its source files has changed since they
  were written.
* **Threads that wait passively.** Numba's OpenMP threads spin while they
  wait; on a machine with other work that spinning makes several threads
  slower than one. ``OMP_WAIT_POLICY=PASSIVE`` is set (unless the user set it)
  before the first parallel decode loads the OpenMP runtime.

:mod:`gaplanner.search.warm_up`, above the kernels, loads (or compiles) every
kernel a search runs, so that a search's time limit is spent searching.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
STAMP = "gaplanner-sources.sha256"

_prepared = False


def sources_digest(package: Path = PACKAGE) -> str:
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def drop_stale_cache(package: Path = PACKAGE) -> bool:
    """Delete the package's numba cache files if its sources changed since; True if it did.

    Best effort: a read-only install (whose cache numba keeps elsewhere) or a
    concurrent process deleting the same files is not an error.
    """
    cache = package / "__pycache__"
    stamp = cache / STAMP
    digest = sources_digest(package)
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    try:
        cache.mkdir(exist_ok=True)
        for path in (*package.rglob("__pycache__/*.nbi"), *package.rglob("__pycache__/*.nbc")):
            path.unlink(missing_ok=True)
        stamp.write_text(digest)
    except OSError:
        return False
    return True


def prepare() -> None:
    """Once per process, before the first kernel runs: drop a stale cache, make threads wait passively."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when the OpenMP runtime loads
    drop_stale_cache()
