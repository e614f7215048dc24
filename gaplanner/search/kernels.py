"""The package's compiled (numba) kernels: a consistent on-disk cache, calm threads, loaded up front.

Nothing here runs at import time. :func:`prepare` runs once per process, at
the first use of the decoder (or from :func:`warm_up`):

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

:func:`warm_up` loads (or compiles) every kernel a search runs, so that a
search's time limit is spent searching.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
STAMP = "gaplanner-sources.sha256"

_prepared = False
_warm = False


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


def warm_up() -> None:
    """Load (or compile) every kernel a search runs, for narrow and wide offsets and for graph problems.

    Numba compiles a kernel on its first call in a process unless its on-disk
    cache holds it already (a fresh install, or a changed source): seconds that
    would otherwise come out of the first search's time limit. The searches
    call this themselves before their clock starts.
    """
    global _warm
    if _warm:  # loaded in this process already: a plan at the bound costs milliseconds
        return
    prepare()
    from gaplanner.problem.loading import load_problem
    from gaplanner.problem.problem import problem_from_arrays
    from gaplanner.search.ga import GASettings, make_island  # the GA runs every kernel there is

    sizes, lower, upper = [2, 1, 1], [0, 0, 1], [2, 1, 2]
    problems = [problem_from_arrays([s << shift for s in sizes], lower, upper) for shift in (0, 40)]
    problems.append(load_problem("example:multicore_fig1b"))
    settings = GASettings(population=4, elite=1, islands=1, generations=1, time_limit=None)
    for problem in problems:
        make_island(problem, settings, 0).step()
    _warm = True
