"""Benchmark results files, their index and the README's headline table (experiments/report.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.report import HEADLINE_END, HEADLINE_START, copy_headline, table_of, write_results


def test_a_results_file_holds_the_table_the_command_and_the_date(tmp_path: Path) -> None:
    folder = tmp_path / "docs" / "results"
    path = write_results(
        "speed", "Speed", ["input", "rate"], [["K", "1,234"], ["J", 5]], "python -m bench", "Per second.",
        folder=folder,
    )  # fmt: skip
    text = path.read_text(encoding="utf-8")
    assert path == folder / "speed.md"
    assert text.startswith("# Speed\n")
    assert "| input | rate |\n|---:|---:|\n| K | 1,234 |\n| J | 5 |\n" in text
    assert "```bash\npython -m bench\n```" in text
    assert "Per second." in text
    assert "Measured 20" in text and "cores" in text


def test_carried_figures_say_where_they_come_from_instead_of_a_date(tmp_path: Path) -> None:
    path = write_results("old", "Old", ["a"], [[1]], "cmd", measured="Measured long ago.", folder=tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "Measured long ago." in text
    assert "Measured 20" not in text


def test_the_index_links_every_results_file_by_its_title_headline_first(tmp_path: Path) -> None:
    folder = tmp_path / "docs" / "results"
    write_results("b-second", "Second table", ["a"], [[1]], "cmd", folder=folder)
    write_results("a-first", "First table", ["a"], [[1]], "cmd", folder=folder)
    write_results("headline", "Headline", ["a"], [[1]], "cmd", folder=folder)
    index = (tmp_path / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    links = [line for line in index.splitlines() if line.startswith("- [")]
    assert links == [
        "- [Headline](results/headline.md)",
        "- [First table](results/a-first.md)",
        "- [Second table](results/b-second.md)",
    ]


def test_the_headline_table_is_copied_between_the_readme_markers(tmp_path: Path) -> None:
    folder = tmp_path / "docs" / "results"
    write_results("headline", "Headline", ["solver", "ratio"], [["ga", "1.05"]], "cmd", folder=folder)
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{HEADLINE_START}\n| old |\n|---|\n{HEADLINE_END}\nafter\n", encoding="utf-8")
    copy_headline(readme)
    table = "| solver | ratio |\n|---:|---:|\n| ga | 1.05 |"
    expected = f"intro\n{HEADLINE_START}\n{table}\n{HEADLINE_END}\nafter\n"
    assert readme.read_text(encoding="utf-8") == expected


def test_a_readme_without_markers_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="markers"):
        copy_headline(readme, headline=tmp_path / "unused.md")


def test_table_of_takes_the_first_table_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# T\n\ntext\n| a |\n|---|\n| 1 |\n\nmore\n| b |\n", encoding="utf-8")
    assert table_of(page) == "| a |\n|---|\n| 1 |"


def test_results_go_where_the_environment_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GAPLANNER_RESULTS", str(tmp_path / "elsewhere" / "results"))
    path = write_results("x", "X", ["a"], [[1]], "cmd")
    assert path == tmp_path / "elsewhere" / "results" / "x.md"
    assert (tmp_path / "elsewhere" / "benchmarks.md").is_file()
