"""Keep numba's on-disk cache of the package's compiled functions consistent with its sources.

Numba caches a compiled function together with the callees compiled into it
(``fitness._score_population`` carries its own copy of ``placement.decode_row``)
but invalidates the entry only when the function's own file changes. After an
edit to ``placement.py`` the GA kept running the old decoder from the cache:
scoring was 2-4x slower than the decoder it calls. So the cache files in the
package's ``__pycache__`` are dropped whenever any source file of the package
has changed since they were written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
STAMP = "gaplanner-sources.sha256"


def sources_digest(package: Path = PACKAGE) -> str:
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def drop_stale_cache(package: Path = PACKAGE) -> bool:
    """Delete the package's numba cache files if its sources changed since; True if it did.

    Best effort: a read-only install (whose cache numba keeps elsewhere) or a
    concurrent import deleting the same files is not an error.
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
        for path in (*cache.glob("*.nbi"), *cache.glob("*.nbc")):
            path.unlink(missing_ok=True)
        stamp.write_text(digest)
    except OSError:
        return False
    return True
