"""Numba cache files are dropped when any source of the package changes, and only then."""

from __future__ import annotations

from pathlib import Path

from gaplanner.jit_cache import drop_stale_cache


def make_package(root: Path) -> Path:
    (root / "__pycache__").mkdir(parents=True)
    (root / "placement.py").write_text("def decode_row(): return 1\n")
    (root / "fitness.py").write_text("from placement import decode_row\n")
    return root


def write_cache_files(package: Path) -> list[str]:
    (package / "__pycache__" / "fitness.score-10.py311.nbi").write_text("index")
    (package / "__pycache__" / "fitness.score-10.py311.0.nbc").write_text("code")
    return sorted(p.name for p in (package / "__pycache__").glob("*.nb?"))


def test_cache_is_dropped_once_per_change_of_any_source(tmp_path: Path) -> None:
    package = make_package(tmp_path / "pkg")
    assert len(write_cache_files(package)) == 2
    assert drop_stale_cache(package)  # no stamp yet: the cache's sources are unknown
    assert not list((package / "__pycache__").glob("*.nb?"))
    write_cache_files(package)
    assert not drop_stale_cache(package)
    assert len(list((package / "__pycache__").glob("*.nb?"))) == 2
    (package / "placement.py").write_text("def decode_row(): return 2\n")  # a callee, not the cached file
    assert drop_stale_cache(package)
    assert not list((package / "__pycache__").glob("*.nb?"))


def test_a_fresh_install_is_stamped_before_numba_writes_a_cache(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "placement.py").write_text("x = 1\n")
    assert drop_stale_cache(package)
    assert len(write_cache_files(package)) == 2  # what numba writes afterwards
    assert not drop_stale_cache(package)
