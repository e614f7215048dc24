"""The package's compiled (numba) kernels: a consistent on-disk cache, calm threads, loaded up front.

Nothing here runs at import time. :func:`prepare` runs once per process, at
the first use of the decoder (or from :func:`gaplanner.search.warm.warm_up`):

* **A consistent cache.** Numba caches a compiled function together with the
  callees compiled into it (``fitness._score_pairs`` carries its own copy
  of ``decoder.decode_row``) and the module constants it read, but invalidates
  the entry only when the function's own file changes: after an edit to
  ``decoder.py`` a search would keep running the old decoder from the cache.
  So the package's cache files are dropped whenever a file that defines a
  kernel, or a package module such a file imports (directly or not), has
  changed since they were written. Other edits (the GA's loop, the service)
  keep the cache: a kernel can read nothing else.
* **Threads that wait passively.** Numba's OpenMP threads spin while they
  wait; on a machine with other work that spinning makes several threads
  slower than one. ``OMP_WAIT_POLICY=PASSIVE`` is set (unless the user set it)
  before the first parallel decode loads the OpenMP runtime.

:mod:`gaplanner.search.warm_up`, above the kernels, loads (or compiles) every
kernel a search runs, so that a search's time limit is spent searching.
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
STAMP = "gaplanner-sources.sha256"

_prepared = False


def _kernel_files(package: Path) -> set[Path]:
    """The package's source files that define a numba kernel."""
    return {path for path in package.rglob("*.py") if b"njit" in path.read_bytes()}


def _imported_files(path: Path, package: Path) -> set[Path]:
    """The package's source files that ``path`` imports (a module, or a module's member that is one)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    files = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != package.name:
            continue
        base = package.joinpath(*parts[1:])
        files.update(p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file())
    return files


def kernel_sources(package: Path = PACKAGE) -> list[Path]:
    """Every file whose change can change a compiled kernel: the kernels' files and all they import."""
    seen = _kernel_files(package)
    todo = list(seen)
    while todo:
        for imported in _imported_files(todo.pop(), package) - seen:
            seen.add(imported)
            todo.append(imported)
    return sorted(seen)


def sources_digest(paths: list[Path], package: Path = PACKAGE) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _recorded(stamp: Path, package: Path) -> tuple[str, list[Path]] | None:
    """The digest and the files a stamp names, or None when it is missing or unreadable."""
    try:
        digest, *names = stamp.read_text().splitlines()
    except (OSError, ValueError):
        return None
    return digest, [package / name for name in names]


def drop_stale_cache(package: Path = PACKAGE) -> bool:
    """Delete the package's numba cache files if a kernel's sources changed since; True if it did.

    The stamp names the files it hashed, so a process checks by reading them
    (milliseconds); the import graph is walked again only when they changed,
    or when a file that defines a kernel is not among them. Best effort: a
    read-only install (whose cache numba keeps elsewhere) or a concurrent
    process deleting the same files is not an error.
    """
    cache = package / "__pycache__"
    stamp = cache / STAMP
    recorded = _recorded(stamp, package)
    try:
        if recorded is not None:
            digest, files = recorded
            if _kernel_files(package) <= set(files) and sources_digest(files, package) == digest:
                return False
    except OSError:
        pass
    try:
        files = kernel_sources(package)
        cache.mkdir(exist_ok=True)
        for path in (*package.rglob("__pycache__/*.nbi"), *package.rglob("__pycache__/*.nbc")):
            path.unlink(missing_ok=True)
        names = [path.relative_to(package).as_posix() for path in files]
        stamp.write_text("\n".join([sources_digest(files, package), *names]) + "\n")
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
