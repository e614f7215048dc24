"""The examples of the README and of docs/: Python runs and prints what its comments say, input
documents plan."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import re
from pathlib import Path

import pytest

import gaplanner
from gaplanner.search.baselines import greedy_size

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("**/*.md"))]
# A line ``print(...)  # expected output`` states what it prints.
PRINTED = re.compile(r"^print\(.*\)\s+#\s*(.+)$", re.MULTILINE)


def fenced(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)


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


def missing_imports(block: str) -> list[str]:
    """The top-level packages an example imports that are not installed here."""
    roots = set()
    for node in ast.walk(ast.parse(block)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return sorted(root for root in roots if importlib.util.find_spec(root) is None)


def test_an_example_needing_a_missing_package_is_skipped_naming_it() -> None:
    block = "import json\nimport surely_not_installed_pkg.sub\nfrom gaplanner import solve\n"
    assert missing_imports(block) == ["surely_not_installed_pkg"]


@pytest.mark.parametrize(
    "page, block",
    [(page, block) for page, _, block in EXAMPLES],
    ids=[f"{page.relative_to(ROOT).as_posix()}-block{k}" for page, k, _ in EXAMPLES],
)
def test_an_example_prints_what_it_says(page: Path, block: str, tmp_path: Path, monkeypatch) -> None:
    for module in missing_imports(block):  # the optional installs a page's example needs (torch, ...)
        pytest.skip(f"needs {module}, which is not installed (see the README's 'Set-up' for the full suite)")
    monkeypatch.chdir(tmp_path)  # an example may write a file (docs/executorch.md writes a program)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(block, str(page), "exec"), {})
    assert output.getvalue().splitlines() == PRINTED.findall(block)


DOCUMENTS = [
    (page, k, data)
    for page in PAGES
    for k, data in enumerate(json.loads(block) for block in fenced(page, "json"))
    if isinstance(data, dict) and ("operators" in data or "buffers" in data)
]


def test_the_readme_shows_an_input_document() -> None:
    assert any(page == README for page, _, _ in DOCUMENTS)


@pytest.mark.parametrize(
    "data",
    [data for _, _, data in DOCUMENTS],
    ids=[f"{page.relative_to(ROOT).as_posix()}-json{k}" for page, k, _ in DOCUMENTS],
)
def test_an_input_document_example_plans(data: dict) -> None:
    plan = greedy_size(
        gaplanner.load_problem(data)
    )  # one arena (memories aside), verified by the model's rules
    assert plan.peak >= plan.lower_bound > 0


def test_the_torch_install_line_is_the_same_wherever_it_is_given() -> None:
    """README, docs/executorch.md and pyproject's comment give one command: torch from the CPU index."""
    command = re.compile(r"pip install torch==\S+ --index-url \S+ && pip install -e '\.\[executorch\]'")
    sources = [README, ROOT / "docs" / "executorch.md", ROOT / "pyproject.toml"]
    found = {path.name: command.findall(path.read_text(encoding="utf-8")) for path in sources}
    assert all(found.values()), found
    assert len({line for lines in found.values() for line in lines}) == 1, found
    for path in sources:  # and no other torch install line that drops the index
        text = path.read_text(encoding="utf-8")
        assert len(re.findall(r"pip install (?:--\S+ )*torch==", text)) == len(found[path.name]), path
