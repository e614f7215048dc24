"""The README's Python examples run and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
# A line ``print(...)  # expected output`` states what it prints.
PRINTED = re.compile(r"^print\(.*\)\s+#\s*(.+)$", re.MULTILINE)


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{k}" for k in range(len(BLOCKS))])
def test_a_readme_example_prints_what_it_says(block: str) -> None:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(block, str(README), "exec"), {})
    assert output.getvalue().splitlines() == PRINTED.findall(block)
