"""The package's build: pyproject.toml says everything, but for the compiled kernels.

Each ``gaplanner/native/_*.cpp`` is an extension module holding one Python
module's kernels (gaplanner/native/__init__.py). They are compiled here, once,
by the C++ compiler of the machine that builds the package: nothing is compiled
when a plan runs (docs/decisions.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = Path("gaplanner") / "native"


def native_extensions() -> list[Extension]:
    """One extension module per ``gaplanner/native/_*.cpp``, rebuilt when any kernel header changes.

    ``-march`` is the building machine's, as a JIT's would be: a wheel for other
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


class ParallelBuildExt(build_ext):
    """``build_ext`` compiling the modules on every core (they are independent)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


setup(cmdclass={"build_ext": ParallelBuildExt}, ext_modules=native_extensions())
