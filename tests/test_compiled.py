"""A kernel loads from the package's cache even where the user cannot write it (a system or container
install run by another user), and a kernel compiled there goes to the user's cache, never an error.

Tests run as root, for whom every folder is writable, so "cannot write" is made by making numba's
writes into the package's folder fail as they would for another user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

KERNELS = """
import numba
from gaplanner.compiled import njit

@njit
def ours(x):
    return x + 1

@numba.njit(cache=True)
def numba_s(x):
    return x + 1
"""

READ_ONLY = """
import numba.core.caching as caching
package_cache = {package_cache!r}

def refuse(path):
    if str(path).startswith(package_cache):
        raise PermissionError(13, "Permission denied", str(path))

ensure = caching._CacheLocator.ensure_cache_path
def ensure_cache_path(self):
    refuse(self.get_cache_path())
    return ensure(self)
caching._CacheLocator.ensure_cache_path = ensure_cache_path

open_for_write = caching.IndexDataCacheFile._open_for_write
def open_for_write_unless_refused(self, filepath):
    refuse(filepath)
    return open_for_write(self, filepath)
caching.IndexDataCacheFile._open_for_write = open_for_write_unless_refused
"""

RUN = """
import json, sys
from numba.core import event
compiled = []

class Compiles(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass

with event.install_listener("numba:compile", Compiles()):
    import kernels
    for name, argument in {calls}:
        getattr(kernels, name)(argument)
print(json.dumps(compiled))
"""


def run(folder: Path, home: Path, calls: list, read_only: bool) -> list[str]:
    """The kernels a fresh process compiled (the others it loaded from a cache)."""
    code = (READ_ONLY.format(package_cache=str(folder / "__pycache__")) if read_only else "") + RUN.format(
        calls=calls
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_package_cache_the_user_cannot_write_is_read_and_new_kernels_go_to_the_users(
    tmp_path: Path,
) -> None:
    folder, home = tmp_path / "install", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    (folder / "kernels.py").write_text(KERNELS)
    both = [("ours", 1), ("numba_s", 1)]
    assert run(folder, home, both, read_only=False) == ["ours", "numba_s"]  # the build compiles both
    assert len(list((folder / "__pycache__").glob("kernels.*.nbi"))) == 2
    # Another user: numba's own cache skips the folder it cannot write and compiles again; ours loads.
    assert run(folder, home, both, read_only=True) == ["numba_s"]
    # A signature the build did not compile: compiled once, kept in the user's cache, not an error.
    assert run(folder, home, [("ours", 1.5)], read_only=True) == ["ours"]
    assert list((home / ".cache").rglob("kernels.ours-*.nbi"))
    assert run(folder, home, [("ours", 1.5)], read_only=True) == []
