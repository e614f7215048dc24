"""The Python examples of the README and of docs/ run and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("**/*.md"))]
# A line ``print(...)  # expected output`` states what it prints.
PRINTED = re.compile(r"^print\(.*\)\s+#\s*(.+)$", re.MULTILINE)


def python_blocks(page: Path) -> list[str]:
    """The page's fenced Python examples, each preceded by blank lines up to where it starts.

    The padding makes a traceback point at the example's line in the page.
    """
    text = page.read_text(encoding="utf-8")
    return [
        "\n" * text.count("\n", 0, found.start(1)) + found.group(1)
        for found in re.finditer(r"```python\n(.*?)```", text, re.DOTALL)
    ]


EXAMPLES = [(page, k, block) for page in PAGES for k, block in enumerate(python_blocks(page))]


def test_the_readme_has_python_examples() -> None:
    assert len(python_blocks(README)) >= 2


def test_blocks_are_found_in_every_fenced_python_example(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n```python\nprint(1)  # 1\n```\n```bash\nls\n```\n```python\nx = 2\n```\n")
    assert python_blocks(page) == ["\n\nprint(1)  # 1\n", "\n" * 8 + "x = 2\n"]


@pytest.mark.parametrize(
    "page, block",
    [(page, block) for page, _, block in EXAMPLES],
    ids=[f"{page.relative_to(ROOT).as_posix()}-block{k}" for page, k, _ in EXAMPLES],
)
def test_an_example_prints_what_it_says(page: Path, block: str) -> None:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(block, str(page), "exec"), {})
    assert output.getvalue().splitlines() == PRINTED.findall(block)
