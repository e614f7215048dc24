"""Benchmark results as Markdown files in ``docs/results/``, an index of them, and the README's headline.

A benchmark script ends with :func:`write_results`: its table, the command that
regenerates it, the date and a note on the machine go to
``docs/results/<name>.md``, and ``docs/benchmarks.md`` (the index) is rewritten.
Nobody types these figures: rerunning the benchmark rewrites its file.

    python -m experiments.report --index     # rewrite docs/benchmarks.md from docs/results/*.md
    python -m experiments.report --readme    # copy docs/results/headline.md's table into README.md

``GAPLANNER_RESULTS`` names another folder for the results files (the tests
set it, so that a benchmark run by a test does not rewrite the docs).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from experiments.common import markdown_table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
INDEX = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
#: The README's generated table sits between these two lines.
HEADLINE_START, HEADLINE_END = "<!-- results:headline -->", "<!-- /results:headline -->"

INDEX_INTRO = """\
# Benchmarks

Every table here is written by the benchmark script that measured it
(`experiments/report.py`): rerunning the command given in a file rewrites that
file and this index (`python -m experiments.report --index` rebuilds the index
alone). The benchmark data is not part of this repository: it comes from
public repositories (google/minimalloc's `benchmarks/challenging/`,
cappadokes/idealloc's `benchmarks/`, five Keras CNNs as buffer lists). The
scripts take the folder as `--benchmarks PATH` (or `GAPLANNER_BENCHMARKS`),
default `../shared/benchmarks`, and skip cleanly without it. With the
`compare` extra, omnimalloc 1.0 (PyPI) runs beside the GA in the same process.

The machine these were measured on has 2 cores shared with other work: rates
(evaluations or decodes per second) move by up to 2x from one hour to the
next, ratios of peaks much less. Compare figures measured in the same run.
"""


def results_folder() -> Path:
    """``$GAPLANNER_RESULTS``, else ``docs/results`` of this checkout."""
    return Path(os.environ.get("GAPLANNER_RESULTS", RESULTS))


def machine_note() -> str:
    """The processor, its core count and the load average, for reading the figures' speed."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(errors="replace"), re.MULTILINE)
        model = found.group(1).strip() if found else model
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return f"{model}, {os.cpu_count()} cores, load average {load} when written"


def write_results(
    name: str,
    title: str,
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    command: str,
    notes: str = "",
    measured: str | None = None,
    folder: Path | None = None,
) -> Path:
    """Write ``<folder>/<name>.md``: title, table, notes, the command that regenerates it, date, machine.

    ``measured``: when and where the figures come from, if not from this run
    on this machine (then the date and machine note are left out). The index
    of the folder is rewritten too. ``folder``: default :func:`results_folder`.
    """
    folder = folder or results_folder()
    folder.mkdir(parents=True, exist_ok=True)
    provenance = measured or (
        f"Measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on {machine_note()}."
    )
    parts = [f"# {title}", provenance, markdown_table(header, rows)]
    if notes:
        parts.append(notes.strip())
    parts.append(f"Regenerate with:\n\n```bash\n{command}\n```")
    path = folder / f"{name}.md"
    path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    write_index(folder, folder.parent / "benchmarks.md")
    return path


def _title(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[:1]
    return first[0].removeprefix("# ").strip() if first and first[0].startswith("# ") else path.stem


def write_index(folder: Path = RESULTS, index: Path = INDEX) -> Path:
    """``index``: the intro and one link per results file, the headline first, then in name order."""
    files = sorted(folder.glob("*.md"), key=lambda path: (path.stem != "headline", path.stem))
    links = [f"- [{_title(path)}]({path.relative_to(index.parent).as_posix()})" for path in files]
    index.write_text(INDEX_INTRO + "\n## Results\n\n" + "\n".join(links) + "\n", encoding="utf-8")
    return index


def table_of(path: Path) -> str:
    """The first Markdown table in ``path`` (its consecutive ``|`` lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((k for k, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        raise ValueError(f"{path}: no table")
    end = next((k for k in range(start, len(lines)) if not lines[k].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


def copy_headline(readme: Path = README, headline: Path | None = None) -> Path:
    """Put the headline results file's table between the README's headline markers."""
    headline = headline or readme.parent / "docs" / "results" / "headline.md"
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(HEADLINE_START) + r"\n.*?" + re.escape(HEADLINE_END), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{readme}: no {HEADLINE_START} ... {HEADLINE_END} markers")
    block = f"{HEADLINE_START}\n{table_of(headline)}\n{HEADLINE_END}"
    readme.write_text(pattern.sub(lambda _: block, text, count=1), encoding="utf-8")
    return readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", action="store_true", help="rewrite docs/benchmarks.md")
    parser.add_argument("--readme", action="store_true", help="copy the headline table into README.md")
    args = parser.parse_args(argv)
    if not (args.index or args.readme):
        parser.error("give --index, --readme or both")
    if args.index:
        print(write_index())
    if args.readme:
        print(copy_headline())
    return 0


if __name__ == "__main__":
    sys.exit(main())
