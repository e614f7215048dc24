"""The exact search on MiniMalloc's challenging set (A-K), beside omnimalloc's branch and bound.

Each instance is planned by our exact search and by omnimalloc's
``SupermallocAllocator`` at its default thread count and at 6 threads (its
search tries bound targets in parallel threads, a third as many targets as
threads), one after the other in this process, with the same time limit.
Every plan is verified. Peaks are compared with the best known peak of each
instance (the benchmark folder's README); "proved optimal" means the peak
meets a proved lower bound (omnimalloc: the max-load bound). The table goes to
``docs/results/exact.md``.

    python -m experiments.bench_exact [--time-limit 10] [--benchmarks PATH] [--only A,B] [--seeds 1,2,3]

``--seeds``: the exact search and the default ``ga`` run once per seed (their
searches trade plans as they go, so runs differ); the GA alone runs with seed
1, the exact search on one thread (its portfolio alone, no draws) once.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from experiments.common import benchmarks_root, markdown_table
from experiments.comparators import omnimalloc_allocators
from experiments.report import write_results
from experiments.side_by_side import SolverRun, geometric_mean, run_placer, run_solver
from gaplanner import Problem, load_problem
from gaplanner.search.exact import ExactSettings
from gaplanner.search.ga import GASettings

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results" / "exact.md"
#: Our label for each of omnimalloc's allocators run here (experiments.comparators' names).
OMNIMALLOC = {
    "omnimalloc B&B, default threads (2)": "omnimalloc B&B",
    "omnimalloc B&B, 6 threads": "omnimalloc B&B, 6 threads",
}


HEADLINE_NOTES = """Geometric mean over A–K of peak / best known peak (MiniMalloc's exact
solutions), {time_limit:g} s per instance and solver, one run each, side by side in one
process on the same machine (per instance: [exact.md](exact.md)). A run is proved optimal
when its peak meets a proved lower bound. `gaplanner exact` runs a thread per core (here
two): its portfolio of probes and, beside it, probes at random targets, trading plans
(one row per seed: runs differ); `one thread` is the portfolio alone. `gaplanner ga` is
the default algorithm: exact probes (the portfolio) on a thread of their own beside the
GA, trading plans once a generation (one row per seed); `GA alone` is
`--no-exact`, the patent's method. omnimalloc 1.0 (extra `compare`): its branch and
bound (`SupermallocAllocator`) at its default thread count (the machine's cores) and with
`num_threads=6` (it tries threads // 3 bound targets at once, so more threads than cores
help it). MiniMalloc itself is not run by this script."""


def best_known(readme: Path) -> dict[str, int]:
    """Best known peak per instance, from the README's per-instance table."""
    best = {}
    for line in readme.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 4 and cells[0].endswith(".csv") and re.fullmatch(r"\d+", cells[4]):
            best[cells[0].split(".")[0]] = int(cells[4])
    return best


def ours(
    algorithm: str,
    time_limit: float,
    exact_share: float | None = None,
    seed: int = 1,
    threads: int | None = None,
) -> Callable[[Problem], SolverRun]:
    """Our solver on a problem: the exact search, or the GA with or without exact probes."""
    if algorithm == "exact":
        settings: ExactSettings | GASettings
        settings = ExactSettings(time_limit=time_limit, seed=seed, threads=threads)
    else:
        settings = GASettings(time_limit=time_limit, seed=seed, exact_share=exact_share)
    return partial(run_solver, algorithm=algorithm, settings=settings)


def summary(name: str, names: list[str], runs: list[SolverRun], best: dict[str, int]) -> list[object]:
    geomean = geometric_mean(run.peak / best[instance] for instance, run in zip(names, runs, strict=True))
    optimal = [run for run in runs if run.optimal]
    median = f"{statistics.median(run.found for run in optimal):.2f}" if optimal else "–"
    return [name, f"{geomean:.4f}", f"{len(optimal)} of {len(runs)}", median]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance and solver")
    parser.add_argument("--benchmarks", help="the shared benchmark folder (default $GAPLANNER_BENCHMARKS)")
    parser.add_argument("--only", help="instances to run, e.g. A,B (default all of A-K)")
    parser.add_argument(
        "--seeds", default="1", help="seeds of the exact search and the default ga, e.g. 1,2,3 (default 1)"
    )
    parser.add_argument("--output", default=str(RESULTS), help="markdown file to write (default %(default)s)")
    args = parser.parse_args(argv)
    root = benchmarks_root(args.benchmarks)
    if root is None or not (root / "minimalloc").is_dir():
        print("benchmark folder not found: give --benchmarks or set GAPLANNER_BENCHMARKS", file=sys.stderr)
        return 0
    best = best_known(root / "minimalloc" / "README.md")
    names = args.only.split(",") if args.only else sorted(n for n in best if len(n) == 1)
    seeds = [int(seed) for seed in args.seeds.split(",")]
    solvers = {
        **{f"gaplanner exact (seed {seed})": ours("exact", args.time_limit, seed=seed) for seed in seeds},
        "gaplanner exact, one thread": ours("exact", args.time_limit, threads=1),
        **{f"gaplanner ga (default, seed {seed})": ours("ga", args.time_limit, seed=seed) for seed in seeds},
        "gaplanner GA alone (seed 1)": ours("ga", args.time_limit, exact_share=0),
    }
    others = omnimalloc_allocators(args.time_limit)
    for label, name in OMNIMALLOC.items():
        if name in others:
            solvers[label] = partial(run_placer, others[name], label=label)
    results: dict[str, list[SolverRun]] = {label: [] for label in solvers}
    for name in names:
        problem = load_problem(root / "minimalloc" / f"{name}.1048576.csv")
        for label, solver in solvers.items():
            run = solver(problem)
            results[label].append(run)
            mark = " optimal" if run.optimal else ""
            print(f"{name} {label:<34} peak {run.peak:>9} ({run.peak / best[name]:.4f}) "
                  f"{run.seconds:6.2f} s{mark}", flush=True)  # fmt: skip
    write_report(Path(args.output), args, names, best, results)
    return 0


def write_report(
    path: Path, args, names: list[str], best: dict[str, int], results: dict[str, list[SolverRun]]
) -> None:
    labels = list(results)
    header = ["instance", "best known", *(f"{label}: peak / best (s)" for label in labels)]
    rows = []
    for k, name in enumerate(names):
        cells = [name, f"{best[name]:,}"]
        for label in labels:
            run = results[label][k]
            star = " ✓" if run.optimal else ""
            cells.append(f"{run.peak / best[name]:.4f}{star} ({run.found:.2f})")
        rows.append(cells)
    totals = [summary(label, names, results[label], best) for label in labels]
    command = (
        "python -m experiments.bench_exact"
        + (f" --time-limit {args.time_limit:g}" if args.time_limit != 10 else "")
        + (f" --seeds {args.seeds}" if args.seeds != "1" else "")
    )
    text = "\n".join(
        [
            "# Exact search on MiniMalloc's challenging set",
            "",
            f"Generated by `{command}` on {datetime.date.today().isoformat()} "
            f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}); "
            f"{args.time_limit:g} s per instance and solver, run one after the other in one process.",
            "",
            f"Load average when written: {', '.join(f'{x:.1f}' for x in os.getloadavg())}. "
            "Times on this shared machine move with its load; the solvers ran side by side, so their "
            "ratios are comparable. A ratio below 1 is a verified plan below the best known peak.",
            "",
            markdown_table(
                [
                    "solver",
                    "peak / best known (geometric mean)",
                    "proved optimal",
                    "median seconds to the optimum (proved ones)",
                ],
                totals,
            ),
            "",
            "Per instance: peak / best known peak, ✓ when proved optimal, and in brackets the seconds "
            "until that plan was found (ours: from the search's own trace; omnimalloc: the whole call).",
            "",
            markdown_table(header, rows),
            "",
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")
    headline = write_results(
        "headline", "Against the anchors: MiniMalloc's challenging set A–K",
        ["solver", "A–K peak / best known", "proved optimal", "median s to the optimum"],
        sorted(totals, key=lambda row: float(row[1])), command,
        HEADLINE_NOTES.format(time_limit=args.time_limit), folder=path.parent,
    )  # fmt: skip
    print(f"wrote {headline}")


if __name__ == "__main__":
    raise SystemExit(main())
