"""Numba cache files are dropped when a source a kernel can read changes, and only then: at the
first use of the kernels, never at import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from gaplanner.search.kernels import PACKAGE, drop_stale_cache, kernel_sources


def make_package(root: Path) -> Path:
    """A kernel's file importing a module of constants, and a module no kernel imports."""
    (root / "__pycache__").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "lanes.py").write_text("LANES = 8\n")
    (root / "fitness.py").write_text("from pkg.lanes import LANES\n# @nb.njit\ndef score(): return LANES\n")
    (root / "loop.py").write_text("from pkg import fitness\n")
    return root


def write_cache_files(package: Path) -> list[str]:
    (package / "__pycache__" / "fitness.score-10.py311.nbi").write_text("index")
    (package / "__pycache__" / "fitness.score-10.py311.0.nbc").write_text("code")
    return sorted(p.name for p in (package / "__pycache__").glob("*.nb?"))


def test_cache_is_dropped_once_per_change_of_a_kernel_s_sources(tmp_path: Path) -> None:
    package = make_package(tmp_path / "pkg")
    assert len(write_cache_files(package)) == 2
    assert drop_stale_cache(package)  # no stamp yet: the cache's sources are unknown
    assert not list((package / "__pycache__").glob("*.nb?"))
    write_cache_files(package)
    assert not drop_stale_cache(package)
    assert len(list((package / "__pycache__").glob("*.nb?"))) == 2
    (package / "lanes.py").write_text("LANES = 16\n")  # read by the kernel, not the cached file itself
    assert drop_stale_cache(package)
    assert not list((package / "__pycache__").glob("*.nb?"))


def test_an_edit_no_kernel_can_read_keeps_the_cache(tmp_path: Path) -> None:
    package = make_package(tmp_path / "pkg")
    assert drop_stale_cache(package)
    write_cache_files(package)
    (package / "loop.py").write_text("from pkg import fitness\nGENERATIONS = 3\n")
    assert not drop_stale_cache(package)
    assert len(list((package / "__pycache__").glob("*.nb?"))) == 2
    (package / "swap.py").write_text("# @nb.njit\ndef swap(): pass\n")  # a new kernel's file
    assert drop_stale_cache(package)


def test_the_package_s_kernel_sources_hold_the_decoder_and_its_constants_not_the_loop() -> None:
    names = {path.relative_to(PACKAGE).as_posix() for path in kernel_sources()}
    assert {"search/decoder.py", "search/fitness.py", "problem/order.py"} <= names
    assert "search/ga/loop.py" not in names and "cli.py" not in names


def test_a_fresh_install_is_stamped_before_numba_writes_a_cache(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "placement.py").write_text("x = 1\n")
    assert drop_stale_cache(package)
    assert len(write_cache_files(package)) == 2  # what numba writes afterwards
    assert not drop_stale_cache(package)


def _stale_copy(root: Path) -> tuple[Path, list[Path]]:
    """A copy of the package whose numba cache is stale (no stamp) and holds two cache files."""
    package = root / "gaplanner"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "__pycache__").mkdir()
    files = [
        package / "__pycache__" / "fitness.score-10.py311.nbi",
        package / "search" / "ga" / "__pycache__" / "x.nbc",
    ]
    for path in files:
        path.parent.mkdir(exist_ok=True)
        path.write_text("cache")
    return package, files


def _run(root: Path, code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(root)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


IMPORT_EVERYTHING = """
import json, os
before = dict(os.environ)
import gaplanner, gaplanner.cli, gaplanner.search.distributed, gaplanner.search.ga
import gaplanner.search.decoder, gaplanner.solve
changed = sorted(set(os.environ.items()) ^ set(before.items()))
print(json.dumps({"file": gaplanner.__file__, "changed": changed}))
"""


def test_importing_the_package_changes_no_environment_variable_and_deletes_no_file(tmp_path: Path) -> None:
    package, files = _stale_copy(tmp_path)
    result = _run(tmp_path, IMPORT_EVERYTHING)
    assert Path(result["file"]).parent == package  # the copy was imported, not the worktree
    assert result["changed"] == []
    assert all(path.exists() for path in files)


def test_first_use_drops_the_stale_cache_and_makes_threads_wait_passively(tmp_path: Path) -> None:
    _, files = _stale_copy(tmp_path)
    code = "import json, os; from gaplanner.search import kernels; kernels.prepare(); kernels.prepare(); "
    code += "print(json.dumps(os.environ.get('OMP_WAIT_POLICY')))"
    assert _run(tmp_path, code) == "PASSIVE"
    assert not any(path.exists() for path in files)
