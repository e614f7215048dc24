"""The package's build: pyproject.toml says everything, but for one step after the sources are copied.

The numba kernels are compiled once into the built package's cache
(``python -m gaplanner.search.warm_up``), so an installed wheel plans at once
instead of compiling for minutes on its first run (docs/decisions.md). An
editable install compiles into the source tree's cache instead. A failed
compile only warns: the kernels then compile at first use, as they would
without this step. ``GAPLANNER_BUILD_KERNELS=0`` skips it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

NATIVE = Path("gaplanner") / "native"


def native_extensions() -> list[Extension]:
    """One extension module per ``gaplanner/native/_*.cpp``: the C++ kernels (gaplanner/native/__init__.py).

    ``-march`` is the building machine's, as numba's was: a wheel for other
    machines is built with ``GAPLANNER_NATIVE_ARCH`` set (``x86-64-v2``, say).
    """
    arch = os.environ.get("GAPLANNER_NATIVE_ARCH", "native")
    flags = ["-O3", "-std=c++17", "-fvisibility=hidden", "-pthread", f"-march={arch}"]
    headers = sorted(str(path) for path in NATIVE.glob("*.hpp"))
    return [
        Extension(f"gaplanner.native.{source.stem}", [str(source)], depends=headers, language="c++",
                  extra_compile_args=flags, extra_link_args=["-pthread"])
        for source in sorted(NATIVE.glob("_*.cpp"))
    ]  # fmt: skip


class BuildWithKernels(build_py):
    """``build_py``, then the kernels compiled into the built package's cache."""

    def run(self) -> None:
        super().run()
        if os.environ.get("GAPLANNER_BUILD_KERNELS", "1") == "0":
            return
        root = Path(__file__).resolve().parent if self.editable_mode else Path(self.build_lib).resolve()
        env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
        # Prepended, not replaced: pip's isolated build finds its build requirements through PYTHONPATH.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "gaplanner.search.warm_up"]
        if subprocess.run(command, env=env, cwd=root, check=False).returncode != 0:
            print("warning: gaplanner's kernels not compiled; they compile at first use", file=sys.stderr)


setup(cmdclass={"build_py": BuildWithKernels}, ext_modules=native_extensions())
