"""The GA against the baselines and the best known peaks, on every shared benchmark.

    python -m experiments.bench_ga [--benchmarks ../shared/benchmarks]
        [--sections zoo minimalloc large decoder ablation]

Sections (each prints a Markdown table):
- zoo: the five Keras CNNs (shared buffer lists) and the packaged zoo split over 2 and 4
  cores; time until the GA reaches the lower bound (it stops there) or ``--zoo-time-limit``.
- minimalloc: challenging A-K at ``--time-limit`` seconds each, ``--seeds`` runs; peak / best known
  peak, its geometric mean over A-K per seed and the median of those. With the ``compare``
  extra, omnimalloc's genetic allocator and branch and bound run beside it at the same budget.
- large: the training graphs at ``--large-time-limit`` seconds; ratio to the lower bound and to greedy-size,
  for the GA alone and for the default ``ga`` (exact probes beside it where the exact search takes the input).
- decoder: first-fit decodes per second through the population call on K and pangu, on one thread
  (per wall-clock second and per CPU second, which leaves out hypervisor steal) and on every core;
  with the ``compare`` extra, omnimalloc's C++ first-fit placer in the same rounds.
- ablation: the ranking's tie-breaks (excess, contiguity) on and off, several seeds, challenging A-K
  at a short budget.
Every figure is measured in this process; nothing is copied from elsewhere except
the best known peaks of the challenging set (MiniMalloc's exact solutions).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

from experiments.bench_decoder import RATE_HEADER, random_orders, rate_cells
from experiments.common import benchmarks_root, markdown_table, timed
from experiments.comparators import omnimalloc_allocators, omnimalloc_first_fit
from experiments.report import write_results
from gaplanner import load_problem, solve
from gaplanner.documents.zoo import zoo_names
from gaplanner.plans.verify import verify
from gaplanner.search.baselines import BASELINES
from gaplanner.search.decoder import Decoder
from gaplanner.search.ga import GASettings, run_ga

#: Best known peaks of MiniMalloc's challenging set (its exact solver's optimum, or best found).
BEST_KNOWN = {
    "A": 1_048_576, "B": 1_048_576, "C": 1_039_360, "D": 1_025_024, "E": 1_048_576, "F": 1_048_576,
    "G": 1_048_576, "H": 1_048_576, "I": 1_048_576, "J": 1_039_360, "K": 1_048_576,
}  # fmt: skip


class Section(NamedTuple):
    """One results table: its file name in docs/results, title, header, rows and notes."""

    name: str
    title: str
    header: list[str]
    rows: list[list[object]]
    notes: str = ""


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def best_baseline(problem) -> tuple[str, int]:
    plans = {name: baseline(problem).peak for name, baseline in BASELINES.items()}
    name = min(plans, key=plans.__getitem__)
    return name, plans[name]


def zoo_section(root: Path, seed: int, time_limit: float) -> Section:
    rows, times = [], []
    inputs = [str(path) for path in sorted((root / "zoo").glob("*.csv"))]
    inputs += [f"zoo:{name}@{cores}" for cores in (2, 4) for name in zoo_names()]
    for source in inputs:
        problem = load_problem(source)
        name, base = best_baseline(problem)
        plan = run_ga(problem, GASettings(time_limit=time_limit, seed=seed, stall_generations=None))
        times.append(plan.elapsed)
        rows.append([
            problem.name, problem.n, problem.lower_bound, f"{base / problem.lower_bound:.4f} ({name})",
            f"{plan.ratio:.4f}", plan.search.generations, f"{plan.elapsed:.3f}",
        ])  # fmt: skip
    header = ["network", "blocks", "lower bound", "best baseline", "GA ratio", "generations", "GA s"]
    reached = sum(1 for row in rows if row[4] == "1.0000")
    median = statistics.median(times)
    summary = f"Lower bound reached on {reached} of {len(rows)}; median time {median:.3f} s."
    return Section("ga-zoo", "The GA on the model zoo", header, rows, summary)


def minimalloc_section(root: Path, seeds: int, time_limit: float) -> list[Section]:
    """Challenging A-K, ``seeds`` runs each: per instance the median; geometric means per seed.

    Two tables: per instance, and the headline (one row per solver: geometric
    mean, runs that end at the lower bound, which proves them optimal, and
    their times).
    """
    rows, base_ratios = [], []
    solved: dict[str, list[float]] = {"gaplanner GA": [], "best baseline": []}
    ga_ratios: dict[int, list[float]] = {seed: [] for seed in range(seeds)}
    references = omnimalloc_allocators(time_limit)
    reference_ratios: dict[str, list[float]] = {name: [] for name in references}
    solved |= {name: [] for name in references}
    for letter, best in BEST_KNOWN.items():
        problem = load_problem(root / "minimalloc" / f"{letter}.1048576.csv")
        name, base = best_baseline(problem)
        for reference, place in references.items():
            offsets, seconds = timed(lambda place=place, problem=problem: place(problem))
            verify(problem, offsets)
            peak = int((offsets + problem.sizes).max())
            reference_ratios[reference].append(peak / best)
            solved[reference] += [seconds] if peak == problem.lower_bound else []
        plans = [
            run_ga(problem, GASettings(time_limit=time_limit, seed=seed, stall_generations=None))
            for seed in range(seeds)
        ]
        for seed, plan in enumerate(plans):
            ga_ratios[seed].append(plan.peak / best)
            solved["gaplanner GA"] += [plan.elapsed] if plan.peak == problem.lower_bound else []
        base_ratios.append(base / best)
        solved["best baseline"] += [math.nan] if base == problem.lower_bound else []  # not timed
        rows.append([
            letter, problem.n, best, f"{base / best:.4f} ({name})",
            f"{statistics.median(plan.peak for plan in plans) / best:.4f}",
            " ".join(f"{plan.peak / best:.4f}" for plan in plans),
            f"{statistics.median(plan.search.evaluations / plan.elapsed for plan in plans):,.0f}",
            *(f"{ratios[-1]:.4f}" for ratios in reference_ratios.values()),
        ])  # fmt: skip
        print(f"done {letter}", file=sys.stderr)
    means = [geometric_mean(ratios) for ratios in ga_ratios.values()]
    rows.append([
        "geo-mean", "", "", f"{geometric_mean(base_ratios):.4f}", f"{statistics.median(means):.4f}",
        " ".join(f"{mean:.4f}" for mean in means), "",
        *(f"{geometric_mean(ratios):.4f}" for ratios in reference_ratios.values()),
    ])  # fmt: skip
    header = [
        "instance", "blocks", "best known", "best baseline / best", "GA / best (median)",
        "GA / best per seed", "evaluations/s", *(f"{name} / best" for name in references),
    ]  # fmt: skip
    per_instance = Section(
        "ga-minimalloc", f"MiniMalloc's challenging set, {time_limit:g} s per instance", header, rows,
        MINIMALLOC_NOTES,
    )  # fmt: skip
    means = {
        "gaplanner GA": statistics.median(means), "best baseline": geometric_mean(base_ratios),
        **{name: geometric_mean(ratios) for name, ratios in reference_ratios.items()},
    }  # fmt: skip
    return [per_instance, headline_section(means, solved, seeds, time_limit)]


def headline_section(
    means: dict[str, float], solved: dict[str, list[float]], seeds: int, time_limit: float
) -> Section:
    """One row per solver, best first: geometric mean, runs proved optimal and how long they took."""
    runs = {name: (seeds if name == "gaplanner GA" else 1) * len(BEST_KNOWN) for name in means}
    rows = [
        [name, f"{mean:.4f}", f"{len(solved[name])} of {runs[name]}", _seconds_range(solved[name])]
        for name, mean in sorted(means.items(), key=lambda item: item[1])
    ]
    header = ["solver", "A–K peak / best known", "runs proved optimal", "their time s"]
    notes = HEADLINE_NOTES.format(time_limit=time_limit, last_seed=seeds - 1)
    return Section("ga-minimalloc-summary", HEADLINE_TITLE, header, rows, notes)


def _seconds_range(seconds: list[float]) -> str:
    """``min–max`` of the times measured (NaN: not timed), ``–`` when there are none."""
    timed_runs = [s for s in seconds if not math.isnan(s)]
    return "–" if not timed_runs else f"{min(timed_runs):.2f}–{max(timed_runs):.2f}"


HEADLINE_TITLE = "The GA alone against the heuristics: MiniMalloc's challenging set A–K"
HEADLINE_NOTES = """\
Geometric mean over A–K of peak / best known peak (MiniMalloc's exact
solutions), {time_limit:g} s per instance and solver, side by side in one
process. The GA's figure is the median of the per-seed geometric means
(seeds 0 to {last_seed}). A run is proved optimal when its peak equals the lower bound
(max load), which holds for the best known peak of 9 of the 11 instances.
omnimalloc 1.0 (extra `compare`): its genetic allocator, and its branch and
bound (`SupermallocAllocator`) at its default thread count (the machine's
cores) and with `num_threads=6` (it tries threads // 3 bound targets at once).
MiniMalloc itself is not run by this script."""

MINIMALLOC_NOTES = """\
Peak over the best known peak (MiniMalloc's exact solutions). The GA runs once
per seed; omnimalloc's allocators once per instance at the same budget, each
plan checked by `gaplanner.plans.verify`."""


def large_section(root: Path, seed: int, time_limit: float) -> Section:
    rows = []
    for path in sorted((root / "large").glob("*.csv")):
        problem = load_problem(path)
        greedy = BASELINES["greedy-size"](problem).peak
        settings = GASettings(time_limit=time_limit, seed=seed, stall_generations=None)
        plan = run_ga(problem, settings)
        default = solve(problem, "ga", settings)
        rows.append([
            problem.name, problem.n, problem.conflicts.edge_count, f"{greedy / problem.lower_bound:.4f}",
            f"{plan.ratio:.4f}", plan.search.population, plan.search.generations,
            f"{plan.elapsed:.1f}", f"{default.ratio:.4f}", "yes" if default.optimal else "no",
            f"{default.elapsed:.1f}",
        ])  # fmt: skip
        print(f"done {path.name}", file=sys.stderr)
    header = [
        "input",
        "blocks",
        "conflicts",
        "greedy-size ratio",
        "GA ratio",
        "population",
        "generations",
        "GA s",
        "default ga ratio",
        "proved optimal",
        "default ga s",
    ]
    title = f"The GA on the large inputs, {time_limit:g} s"
    notes = (
        "Ratio: peak over the lower bound. GA: the GA alone (`--no-exact`); default ga: with exact probes\n"
        "beside it where the exact search takes the input (see docs/exact.md), same seed and limit, run\n"
        "after it. s: until the plan (the default ga stops once it is proved optimal)."
    )
    return Section("ga-large", title, header, rows, notes)


def decoder_section(root: Path) -> Section:
    """First-fit decodes per second of random orders of K and pangu (see ``experiments.bench_decoder``)."""
    rows = []
    for name in ("minimalloc/K.1048576.csv", "large/somas_tensors_pangu_2.6B.csv"):
        problem = load_problem(root / name)
        decoder = Decoder.for_problem(problem)
        cells = rate_cells(decoder, random_orders(problem), 3.0, reference=omnimalloc_first_fit(problem))
        rows.append([problem.name, problem.n, *cells[1:]])
    header = ["input", "blocks", *RATE_HEADER[1:]]
    notes = "Random orders; see `experiments/bench_decoder.py` for the columns."
    return Section("ga-decoder", "First-fit decodes per second (random orders)", header, rows, notes)


#: The ranking's two tie-breaks, each switched off in turn (see gaplanner.search.fitness).
ABLATIONS = {
    "peak, excess, contiguity": {},
    "no excess": {"use_excess": False},
    "no contiguity": {"use_contiguity": False},
    "peak only": {"use_excess": False, "use_contiguity": False},
}


def ablation_section(root: Path, seeds: int, time_limit: float) -> Section:
    """Challenging A-K at a short budget, ``seeds`` runs per variant: per instance the median."""
    rows = []
    results: dict[str, list[float]] = {name: [] for name in ABLATIONS}
    for letter, best in BEST_KNOWN.items():
        problem = load_problem(root / "minimalloc" / f"{letter}.1048576.csv")
        row = [letter]
        for name, switches in ABLATIONS.items():
            settings = [
                GASettings(time_limit=time_limit, seed=s, stall_generations=None, **switches)
                for s in range(seeds)
            ]
            ratios = [run_ga(problem, setting).peak / best for setting in settings]
            results[name] += ratios
            row.append(f"{statistics.median(ratios):.4f}")
        rows.append(row)
        print(f"done {letter}", file=sys.stderr)
    rows.append(["geo-mean", *(f"{geometric_mean(ratios):.4f}" for ratios in results.values())])
    header = ["instance", *(f"{name} (median)" for name in ABLATIONS)]
    title = f"Ablation of the ranking's tie-breaks, A–K, {seeds} seeds, {time_limit:g} s"
    notes = "Peak over the best known peak, median over the seeds; the last row is the geometric mean."
    return Section("ga-ablation", title, header, rows, notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--benchmarks")
    parser.add_argument(
        "--sections", nargs="+", default=["zoo", "minimalloc", "large", "decoder", "ablation"]
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=10.0, help="per challenging instance")
    parser.add_argument("--seeds", type=int, default=3, help="runs per challenging instance (seeds 0..N-1)")
    parser.add_argument("--large-time-limit", type=float, default=60.0)
    parser.add_argument("--zoo-time-limit", type=float, default=10.0)
    parser.add_argument("--ablation-seeds", type=int, default=3)
    parser.add_argument("--ablation-time-limit", type=float, default=3.0)
    args = parser.parse_args(argv)
    root = benchmarks_root(args.benchmarks)
    if root is None:
        print("benchmark data not found: pass --benchmarks or set GAPLANNER_BENCHMARKS", file=sys.stderr)
        return 0
    sections = {
        "zoo": lambda: zoo_section(root, args.seed, args.zoo_time_limit),
        "minimalloc": lambda: minimalloc_section(root, args.seeds, args.time_limit),
        "large": lambda: large_section(root, args.seed, args.large_time_limit),
        "decoder": lambda: decoder_section(root),
        "ablation": lambda: ablation_section(root, args.ablation_seeds, args.ablation_time_limit),
    }
    started = time.perf_counter()
    for name in args.sections:
        done = sections[name]()
        for section in done if isinstance(done, list) else [done]:
            print(f"\n### {section.title}\n\n{markdown_table(section.header, section.rows)}\n", flush=True)
            command = _command(name, argv)
            write_results(section.name, section.title, section.header, section.rows, command, section.notes)
    print(f"(total {time.perf_counter() - started:.0f} s)")
    return 0


def _command(section: str, argv: list[str] | None) -> str:
    """The command line that reruns one section with this run's other options."""
    options = list(sys.argv[1:] if argv is None else argv)
    if "--sections" in options:
        at = options.index("--sections")
        end = next((k for k in range(at + 1, len(options)) if options[k].startswith("--")), len(options))
        del options[at:end]
    drop = {"--benchmarks"}
    kept = [o for k, o in enumerate(options) if o not in drop and (k == 0 or options[k - 1] not in drop)]
    return " ".join(["python -m experiments.bench_ga --sections", section, *kept])


if __name__ == "__main__":
    sys.exit(main())
