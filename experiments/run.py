"""The batch experiment runner: a grid of inputs x algorithms x seeds x time budgets on Ray.

    python -m experiments.run CONFIG.toml [--results FILE.csv] [--summary FILE.md]
                                          [--benchmarks PATH] [--ray-address ADDR] [--num-cpus N]

Every cell (one input, one algorithm, one seed, one time budget) is one Ray
task on one CPU. A row is appended to the results CSV as each cell finishes;
re-running the same config skips the cells already in the file, so an
interrupted sweep resumes where it stopped. The run ends with a summary per
input (lower bound; per algorithm and budget the peak ratio's median and best
over seeds, and the median time), printed and written as Markdown.

The config (TOML)::

    results = "experiments/results/quick.csv"  # default experiments/results/<config name>.csv
    inputs = ["zoo:resnet50", "example:seed000_queue", "{benchmarks}/minimalloc/*.csv", "my/graph.json"]
    seeds = [0, 1, 2]               # for the GA; baselines are deterministic and run once per input
    time_budgets = [1.0, 10.0]      # seconds, the GA's time limit

    [[algorithms]]
    name = "best-fit-coalescing"    # any of gaplanner.solve.ALGORITHMS

    [[algorithms]]
    name = "ga"
    label = "ga-pop32"              # optional: the name in the results (default: name)
    population = 32                 # any GASettings field but seed and time_limit

``{benchmarks}`` is the shared benchmark folder (``--benchmarks``,
``GAPLANNER_BENCHMARKS`` or ``../shared/benchmarks``); inputs under it are
skipped, with a note, when it is absent. Globs are expanded. Files are read
here and shipped to the workers, so on a cluster only this machine needs them.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import os
import socket
import statistics
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from experiments.common import benchmarks_root, markdown_table
from experiments.grid import Algorithm, Cell, ConfigError, expand_inputs, load_config, make_cells
from gaplanner.search.distributed.session import sigterm_unwinds
from gaplanner.search.ga import GASettings

#: Columns of the results file, in order.
COLUMNS = [
    "cell",
    "input",
    "algorithm",
    "seed",
    "time_budget",
    "blocks",
    "lower_bound",
    "peak",
    "ratio",
    "seconds",
    "generations",
    "evaluations",
    "stop_reason",
    "load_seconds",
    "host",
    "finished_at",
]

# --------------------------------------------------------------------------------------------
# One cell (runs in a Ray worker)


def read_source(source: str) -> Any:
    """What a worker needs to build the problem: the name itself, or a file's name and text."""
    if source.startswith(("zoo:", "example:")):
        return source
    path = Path(source)
    return (path.name, path.read_text(encoding="utf-8"))


@lru_cache(maxsize=2)
def _problem(name: str, source: Any) -> Any:
    from gaplanner.problem.loading import load_problem

    return load_problem(source)


def run_cell(cell: Cell, source: Any) -> dict[str, Any]:
    """Plan one cell; the results row."""
    from gaplanner import native
    from gaplanner.solve import solve

    native.set_threads(1)  # one CPU per cell
    started = time.perf_counter()
    problem = _problem(cell.input, source)
    load_seconds = time.perf_counter() - started
    settings = None
    if cell.algorithm.seeded:
        settings = GASettings(**{**cell.algorithm.params, "seed": cell.seed, "time_limit": cell.time_budget})
    plan = solve(problem, cell.algorithm.name, settings)
    search = plan.search
    return {
        "cell": cell.key,
        "input": cell.input,
        "algorithm": cell.algorithm.label,
        "seed": "" if cell.seed is None else cell.seed,
        "time_budget": "" if cell.time_budget is None else cell.time_budget,
        "blocks": problem.n,
        "lower_bound": plan.lower_bound,
        "peak": plan.peak,
        "ratio": round(plan.ratio, 6),
        "seconds": round(plan.elapsed, 4),
        "generations": "" if search is None else search.generations,
        "evaluations": "" if search is None else search.evaluations,
        "stop_reason": plan.stop_reason or "",
        "load_seconds": round(load_seconds, 4),
        "host": _where(),
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _where() -> str:
    """This machine's name, with the Ray node's address when the cell runs on Ray (the nodes of one
    machine, network namespaces for instance, share its name)."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return f"{socket.gethostname()}/{ray.util.get_node_ip_address()}"
    return socket.gethostname()


# --------------------------------------------------------------------------------------------
# The results file


def read_results(path: Path) -> list[dict[str, str]]:
    """The complete rows of a results file (a line cut short by a kill is dropped)."""
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    rows = list(csv.DictReader(io.StringIO(text)))
    return [row for row in rows if row.get("cell") and row.get("finished_at")]


class ResultsWriter:
    """Appends rows to the results CSV, one flushed line per finished cell."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size:
            text = path.read_text(encoding="utf-8")
            header = text.splitlines()[0].split(",")
            if header != COLUMNS:
                raise ConfigError(f"{path}: not a results file of this runner (columns {header})")
            if not text.endswith("\n"):  # a row cut short by a kill: drop it
                with path.open("r+", encoding="utf-8") as f:
                    f.truncate(len(text[: text.rfind("\n") + 1].encode()))
            self.file = path.open("a", encoding="utf-8", newline="")
        else:
            self.file = path.open("w", encoding="utf-8", newline="")
            self._write(COLUMNS)

    def _write(self, values: list[Any]) -> None:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow(values)
        self.file.write(out.getvalue())
        self.file.flush()
        os.fsync(self.file.fileno())

    def append(self, row: dict[str, Any]) -> None:
        self._write([row[c] for c in COLUMNS])

    def close(self) -> None:
        self.file.close()


# --------------------------------------------------------------------------------------------
# Running the grid


def run_cells(
    cells: list[Cell],
    results: Path,
    *,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    progress_total: int | None = None,
) -> list[tuple[Cell, str]]:
    """Run ``cells`` as Ray tasks, appending each row as it arrives; the failures."""
    from tqdm import tqdm

    from gaplanner.search.distributed import ray_session

    failures: list[tuple[Cell, str]] = []
    writer = ResultsWriter(results)
    total = progress_total or len(cells)
    try:
        with (
            ray_session(ray_address, num_cpus=num_cpus) as ray,
            tqdm(total=total, initial=total - len(cells), unit="cell", file=sys.stderr) as bar,
        ):
            task = ray.remote(num_cpus=1, max_retries=2)(run_cell)
            sources: dict[str, Any] = {}
            pending = {}
            for cell in cells:
                if cell.source not in sources:
                    sources[cell.source] = ray.put(read_source(cell.source))
                pending[task.remote(cell, sources[cell.source])] = cell
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    cell = pending.pop(ref)
                    try:
                        writer.append(ray.get(ref))
                    except Exception as exc:  # the cell failed; the others go on
                        failures.append((cell, f"{type(exc).__name__}: {exc}"))
                    bar.set_postfix_str(f"{cell.input.rsplit('/', 1)[-1]} {cell.algorithm.label}", False)
                    bar.update(1)
    finally:
        writer.close()
    return failures


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(rows: list[dict[str, str]], algorithms: list[Algorithm]) -> str:
    """Markdown: one table per input, a row per algorithm and budget."""
    order = {a.label: k for k, a in enumerate(algorithms)}
    by_input: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_input.setdefault(row["input"], []).append(row)
    parts = []
    for name, group in by_input.items():
        first = group[0]
        parts.append(f"### {name}\n\n{first['blocks']} blocks, lower bound {int(first['lower_bound']):,}")
        cells: dict[tuple[str, str], list[dict[str, str]]] = {}
        for row in group:
            cells.setdefault((row["algorithm"], row["time_budget"]), []).append(row)
        table = []
        for (label, budget), runs in sorted(
            cells.items(), key=lambda item: (order.get(item[0][0], 99), float(item[0][1] or 0))
        ):
            ratios = [float(r["ratio"]) for r in runs]
            table.append(
                [
                    label,
                    budget or "-",
                    len(runs),
                    f"{_median(ratios):.4f}",
                    f"{min(ratios):.4f}",
                    f"{_median([float(r['seconds']) for r in runs]):.3f}",
                ]
            )
        parts.append(
            markdown_table(
                ["algorithm", "budget s", "runs", "peak ratio median", "peak ratio best", "time median s"],
                table,
            )
        )
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.run",
        description=__doc__.split("\n\n", 1)[0],
    )
    parser.add_argument("config", help="a TOML config (see experiments/configs/)")
    parser.add_argument("--results", help="the results CSV (default: the config's 'results')")
    parser.add_argument("--summary", help="the Markdown summary (default: the results file with .md)")
    parser.add_argument("--benchmarks", help="the shared benchmark folder for {benchmarks} inputs")
    parser.add_argument("--ray-address", default=os.environ.get("RAY_ADDRESS"), help="an existing cluster")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: all)")
    args = parser.parse_args(argv)
    with sigterm_unwinds():  # SIGTERM unwinds through ray.shutdown: no stray Ray processes
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except (OSError, ConfigError) as exc:
        print(f"experiments.run: error: {exc}", file=sys.stderr)
        return 2
    inputs, notes = expand_inputs(config.inputs, benchmarks_root(args.benchmarks))
    for note in notes:
        print(note, file=sys.stderr)
    cells = make_cells(config, inputs)
    results = Path(args.results) if args.results else config.results
    summary_path = Path(args.summary) if args.summary else results.with_suffix(".md")
    done = {row["cell"] for row in read_results(results)}
    todo = [cell for cell in cells if cell.key not in done]
    already = len(cells) - len(todo)
    print(f"{len(cells)} cells: {already} already in {results}, {len(todo)} to run", flush=True)
    failures = []
    if todo:
        try:
            failures = run_cells(
                todo, results, ray_address=args.ray_address, num_cpus=args.num_cpus, progress_total=len(cells)
            )
        except ConfigError as exc:
            print(f"experiments.run: error: {exc}", file=sys.stderr)
            return 2
    keys = {cell.key for cell in cells}
    rows = [row for row in read_results(results) if row["cell"] in keys]
    if rows:
        text = summarize(rows, config.algorithms)
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(f"# {config.path.name}\n\n{text}", encoding="utf-8")
        print(text)
        print(f"results: {results}; summary: {summary_path}")
    for cell, message in failures:
        print(f"failed: {cell.input} {cell.algorithm.label} seed {cell.seed}: {message}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    # Run the importable copy (experiments.run, not __main__): Ray pickles its functions by reference.
    from experiments.run import main as _main

    sys.exit(_main())
