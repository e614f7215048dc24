"""Multi-stream programs: the GA against omnimalloc's tabu search and simulated annealing.

The instances come from omnimalloc's own generator of multi-stream programs
(``SyncPatternSource``): ``threads`` workers tick their own clock component,
and every sync pattern (independent, pairs, ring, barrier, fork-join, ...)
merges their clocks at its own events, so each buffer lives from one vector
clock to a later one. Two buffers may share memory only when one ends before
the other starts in the vector-clock order.

Each instance is planned by the gaplanner GA, and by omnimalloc's tabu search
and simulated annealing (C++, first-fit over orders, a swap of a block at the
peak with an earlier conflicting one per step) at the same wall-clock budget,
with their iteration caps raised so that the budget is what stops them;
omnimalloc's default greedy portfolio (``omni``) and best-fit are anchors.
Every plan is checked by :func:`gaplanner.find_violation` against our problem.
The table goes to ``docs/results/streams.md``.

    python -m experiments.bench_streams                 # the full run, a few minutes
    python -m experiments.bench_streams --blocks 60 --seeds 0 --patterns ring --time-limit 0.2

Without omnimalloc (``pip install -e '.[compare]'``) it says so and exits.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import version

import numpy as np

import gaplanner
from experiments.common import markdown_table, timed
from experiments.report import write_results
from gaplanner import GASettings, InputError, Problem, native
from gaplanner.problem.problem import problem_from_clocks

try:
    from omnimalloc.allocators import (
        BestFitAllocator,
        OmniAllocator,
        SimulatedAnnealingAllocator,
        TabuSearchAllocator,
    )
    from omnimalloc.benchmark.sources.sync_patterns import SYNC_PATTERNS, SyncPatternSource
except ImportError:  # the compare extra is not installed
    SyncPatternSource = None
    SYNC_PATTERNS = ()

#: The iteration counters of omnimalloc's searches are C++ ints: the largest is "no cap".
NO_ITERATION_CAP = 2**31 - 1
GA = "ga"
#: The GA without the exact probes the default ``ga`` runs beside it (gaplanner.search.side_by_side).
GA_ALONE = "GA alone"
TABU, ANNEALING = "tabu", "SA"
SEARCHES = (GA, GA_ALONE, TABU, ANNEALING)
ANCHORS = ("omni", "best-fit")
SOLVERS = (*SEARCHES, *ANCHORS)
#: The wins/ties/losses columns: (ours, theirs).
CONTESTS = ((GA, TABU), (GA, ANNEALING), (GA_ALONE, TABU), (GA_ALONE, ANNEALING))


def problem_from_allocations(allocations: Sequence, name: str = "streams") -> Problem:
    """Our problem for omnimalloc allocations with vector-clock lifetimes; block ids are their ids."""
    return problem_from_clocks(
        np.array([a.size for a in allocations], np.int64),
        np.array([a.start for a in allocations], np.int64),
        np.array([a.end for a in allocations], np.int64),
        ids=tuple(str(a.id) for a in allocations),
        name=name,
    )


def offsets_by_id(problem: Problem, placed: Sequence) -> np.ndarray:
    """omnimalloc's placed allocations as offsets in our block order (matched by id, not position)."""
    where = {block: k for k, block in enumerate(problem.ids)}
    offsets = np.full(problem.n, -1, np.int64)
    for allocation in placed:
        offsets[where[str(allocation.id)]] = allocation.offset
    return offsets


def generate(pattern: str, threads: int, blocks: int, seed: int) -> tuple:
    """omnimalloc's allocations for one sync pattern, everything else at the generator's defaults."""
    source = SyncPatternSource(num_allocations=blocks, num_threads=threads, pattern=pattern, seed=seed)
    return source.get_allocations()


def omnimalloc_solvers(time_limit: float) -> dict[str, Callable[[], object]]:
    """omnimalloc's allocators by table name: the searches at ``time_limit`` seconds, no iteration cap."""
    return {
        TABU: lambda: TabuSearchAllocator(max_iterations=NO_ITERATION_CAP, timeout=time_limit),
        ANNEALING: lambda: SimulatedAnnealingAllocator(max_iterations=NO_ITERATION_CAP, timeout=time_limit),
        ANCHORS[0]: OmniAllocator,
        ANCHORS[1]: BestFitAllocator,
    }


def max_clique(problem: Problem) -> int | None:
    """The heaviest set of pairwise conflicting blocks, exactly (networkx), or None without networkx."""
    try:
        import networkx as nx
    except ImportError:
        return None
    graph = nx.Graph()
    graph.add_nodes_from((b, {"size": int(size)}) for b, size in enumerate(problem.sizes))
    graph.add_edges_from(zip(*(side.tolist() for side in problem.conflicts.edges()), strict=True))
    return int(nx.max_weight_clique(graph, weight="size")[1])


@dataclass
class Outcome:
    """One instance: the bound, each solver's peak and wall time."""

    bound: int
    clique: int | None
    peaks: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def checked_peak(problem: Problem, offsets: np.ndarray, solver: str) -> int:
    """The plan's peak once the verifier passes it; a wrong plan stops the benchmark."""
    if (violation := gaplanner.find_violation(problem, offsets)) is not None:
        raise SystemExit(f"{solver} returned an invalid plan for {problem.name}: {violation}")
    return int((offsets + problem.sizes).max())


def run_instance(allocations: Sequence, problem: Problem, settings: GASettings) -> Outcome:
    """Every solver on one instance, one after the other in this process, at the GA's time limit."""
    outcome = Outcome(problem.lower_bound, max_clique(problem))
    for name, ga_settings in ((GA, settings), (GA_ALONE, replace(settings, exact_share=0.0))):
        plan, outcome.seconds[name] = timed(
            lambda ga_settings=ga_settings: gaplanner.solve(problem, "ga", ga_settings)
        )
        outcome.peaks[name] = checked_peak(problem, plan.offsets, name)
    for name, make in omnimalloc_solvers(settings.time_limit).items():
        placed, outcome.seconds[name] = timed(lambda make=make: make().allocate(tuple(allocations)))
        outcome.peaks[name] = checked_peak(problem, offsets_by_id(problem, placed), name)
    return outcome


def geometric_mean(values: Sequence[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def wins(outcomes: Sequence[Outcome], rival: str, ours: str = GA) -> str:
    """``wins/ties/losses`` of ``ours``'s peak against ``rival``'s, instance by instance."""
    better = sum(o.peaks[ours] < o.peaks[rival] for o in outcomes)
    worse = sum(o.peaks[ours] > o.peaks[rival] for o in outcomes)
    return f"{better}/{len(outcomes) - better - worse}/{worse}"


def row(label: Sequence[object], outcomes: Sequence[Outcome], solvers: Sequence[str]) -> list[object]:
    ratios = [f"{geometric_mean([o.peaks[s] / o.bound for o in outcomes]):.4f}" for s in solvers]
    cliques = [o.clique / o.bound for o in outcomes if o.clique is not None]
    slack = f"{geometric_mean(cliques):.4f}" if len(cliques) == len(outcomes) else "-"
    contests = [wins(outcomes, rival, ours) for ours, rival in CONTESTS]
    return [*label, len(outcomes), slack, *ratios, *contests]


def summary_table(outcomes: Sequence[Outcome], solvers: Sequence[str]) -> str:
    """Per solver over every instance: geometric mean, the GA's wins/ties/losses, median wall time."""
    rows = [
        [
            solver,
            f"{geometric_mean([o.peaks[solver] / o.bound for o in outcomes]):.4f}",
            "" if solver == GA else wins(outcomes, solver),
            f"{statistics.median(o.seconds[solver] for o in outcomes):.3f}",
        ]
        for solver in solvers
    ]
    return markdown_table(["solver", "peak / bound, geo-mean", f"{GA} wins/ties/losses", "median s"], rows)


NOTES = """\
Instances: omnimalloc {version}'s `SyncPatternSource` (`omnimalloc.benchmark.sources.sync_patterns`),
{blocks} buffers, generator seeds {seeds}, its defaults otherwise (sync period 8,
sizes uniform 1 KiB-1 MiB, buffers living up to a quarter of the steps): {count} instances.
Bound: gaplanner's lower bound for vector-clock problems (`problem.lower_bound`: the
heaviest clique grown from the buffers live at each instant of the clocks' sum, then
searched for by branch and bound within a work budget).
*Clique / bound* is the exact heaviest set of pairwise conflicting buffers (networkx's
`max_weight_clique`) over that bound: where it is above 1, that much of every solver's
ratio is the bound's slack, not the plan's.

Solvers, {time_limit:g} s wall-clock each per instance, one after the other in one process:
- gaplanner ga: `gaplanner.solve(problem, "ga", GASettings({ga_settings}))` (other
  settings at their defaults; the search also stops at the bound), its decoder on
  {ga_threads} thread(s) (`gaplanner.native.set_threads`). By default (`exact_share=None`) that
  is the GA with exact probes beside it (`gaplanner.search.side_by_side`: on two cores or more the
  probes run on a thread of their own and the GA on one core fewer, trading plans once a
  generation; on one core they take turns), on problems the exact search takes whole;
  *GA alone* is the same with `exact_share=0`.
- tabu (omnimalloc): `TabuSearchAllocator(max_iterations=2**31-1, timeout={time_limit:g})`
  (neighbourhood 20, tenure 15, seed 42: its defaults); SA (omnimalloc):
  `SimulatedAnnealingAllocator(max_iterations=2**31-1, timeout={time_limit:g})` (initial
  temperature 3, cooling 0.998 per step, seed 42: its defaults). Both run single-threaded
  in C++ and stop at the first of the timeout and the iteration cap, so the timeout binds.
- Anchors: omnimalloc's default allocator `omni` (a greedy portfolio) and its `best_fit`.

Every plan (omnimalloc's offsets matched back by buffer id) passed
`gaplanner.find_violation` on our problem. *X vs Y*: instances where X's peak is below,
equal to, above Y's (wins/ties/losses). Ratios are geometric means over the instances of a
row. The searches stop on the clock, so on a busy machine a rerun gives other peaks:
compare figures from one run, and read small differences within a row of a few
instances as ties.

Over every instance:

{summary}
"""


def ga_option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` as a GA setting; the value is a Python literal (``0.5``, ``None``, ``False``)."""
    key, sep, value = text.partition("=")
    if not sep:
        raise SystemExit(f"--ga-option {text!r}: expected KEY=VALUE")
    try:
        return key.strip(), ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        raise SystemExit(f"--ga-option {text!r}: the value must be a number, True, False or None") from None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, nargs="+", default=[4, 8], help="threads of the programs")
    parser.add_argument("--patterns", nargs="+", default=None, help="sync patterns (default: every one)")
    parser.add_argument("--blocks", type=int, nargs="+", default=[100, 250], help="buffers per instance")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="generator seeds")
    parser.add_argument("--time-limit", type=float, default=1.0, help="seconds per instance and search")
    parser.add_argument("--ga-seed", type=int, default=0)
    parser.add_argument(
        "--ga-option", action="append", default=[], metavar="KEY=VALUE",
        help="another GA setting (a GASettings field, e.g. hole_move_rate=0), repeatable",
    )  # fmt: skip
    parser.add_argument("--ga-threads", type=int, default=1, help="decoder threads of the GA")
    parser.add_argument("--no-write", action="store_true", help="print the table, do not write docs/results")
    return parser.parse_args(argv)


def run_grid(
    args: argparse.Namespace, patterns: Sequence[str], settings: GASettings
) -> tuple[list[list[object]], list[Outcome]]:
    """The table's rows (a pattern per row, totals per thread count and overall) and every outcome."""
    rows, everything = [], []
    for threads in args.threads:
        per_threads: list[Outcome] = []
        for pattern in patterns:
            outcomes = []
            for blocks in args.blocks:
                for seed in args.seeds:
                    allocations = generate(pattern, threads, blocks, seed)
                    problem = problem_from_allocations(allocations, f"{pattern} t{threads} n{blocks} s{seed}")
                    outcomes.append(run_instance(allocations, problem, settings))
            rows.append(row([threads, pattern], outcomes, SOLVERS))
            print(" | ".join(str(cell) for cell in rows[-1]), file=sys.stderr, flush=True)
            per_threads += outcomes
        rows.append(row([threads, "**all**"], per_threads, SOLVERS))
        everything += per_threads
    rows.append(row(["all", "**all**"], everything, SOLVERS))
    return rows, everything


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if SyncPatternSource is None:
        print("omnimalloc is not installed (pip install -e '.[compare]'): nothing to run", file=sys.stderr)
        return 0
    ga_options = {"time_limit": args.time_limit, "stall_generations": None, "seed": args.ga_seed}
    ga_options |= dict(ga_option(text) for text in args.ga_option)
    try:
        settings = GASettings(**ga_options)
    except (InputError, TypeError) as error:
        raise SystemExit(f"--ga-option: {error}") from None
    native.set_threads(args.ga_threads)
    patterns = args.patterns or [str(p) for p in SYNC_PATTERNS]
    rows, everything = run_grid(args, patterns, settings)
    header = [
        "threads", "pattern", "instances", "clique / bound", *(f"{s} / bound" for s in SOLVERS),
        *(f"{ours} vs {rival}" for ours, rival in CONTESTS),
    ]  # fmt: skip
    notes = NOTES.format(
        version=version("omnimalloc"), blocks=", ".join(map(str, args.blocks)),
        seeds=", ".join(map(str, args.seeds)), count=len(everything), time_limit=args.time_limit,
        ga_settings=", ".join(f"{key}={value!r}" for key, value in ga_options.items()),
        ga_threads=args.ga_threads, summary=summary_table(everything, SOLVERS),
    )  # fmt: skip
    title = (
        f"Multi-stream programs ({' and '.join(map(str, args.threads))} threads, "
        f"{'every sync pattern' if args.patterns is None else ', '.join(patterns)}): "
        f"the GA against omnimalloc's tabu search and simulated annealing, {args.time_limit:g} s each "
        "(their iteration caps lifted)"
    )
    if args.no_write:
        print(markdown_table(header, rows) + "\n\n" + notes)
        return 0
    command = "python -m experiments.bench_streams " + " ".join(argv if argv is not None else sys.argv[1:])
    print(write_results("streams", title, header, rows, command.strip(), notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
