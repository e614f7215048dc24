"""Memories benchmark: an SRAM in front of DRAM, and the does-it-fit question.

1. The zoo networks (``zoo:NAME``) and the real models in
   ``experiments/models/onnx/*.onnx`` (when present; the TorchScript exports
   ``*.ts.onnx`` of the same models are left out) with an SRAM of 256 KiB,
   1 MiB and 4 MiB in front of DRAM (1 and 10 per byte read or written): the
   total access cost of everything in DRAM, of the spill baseline
   (``spill-greedy``) and of the GA, and a lower bound on the cost of any
   plan. The bound is exact for the relaxation that ignores fragmentation
   (at every moment the SRAM holds at most its capacity in live bytes),
   solved as an integer program by SciPy's HiGHS when SciPy is installed; a GA
   plan at the bound is optimal.
2. ``--capacity 1048576`` on MiniMalloc A–K: fits found on how many, and how
   fast.

Writes ``docs/results/memories.md`` (:func:`experiments.report.write_results`). Run::

    python -m experiments.bench_memories --time-limit 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from experiments.common import benchmarks_root, markdown_table
from experiments.report import write_results
from gaplanner.documents.schema import Document, parse_document
from gaplanner.documents.zoo import zoo_document, zoo_names
from gaplanner.plans.capacity import decide_fit
from gaplanner.problem.loading import load_problem
from gaplanner.problem.problem import Problem, build_problem
from gaplanner.search.ga import GASettings
from gaplanner.solve import solve

KIB = 1024
SRAM_SIZES = (256 * KIB, 1024 * KIB, 4096 * KIB)
MINIMALLOC_CAPACITY = 1_048_576
ROOT = Path(__file__).resolve().parents[1]


def with_memories(doc: Document, sram: int) -> Problem:
    """The document with an SRAM of ``sram`` bytes (1 per byte) in front of DRAM (10 per byte)."""
    data = doc.model_dump(exclude_none=True)
    data["memories"] = [
        {"id": "sram", "capacity": sram, "read_cost": 1, "write_cost": 1},
        {"id": "dram", "read_cost": 10, "write_cost": 10},
    ]
    return build_problem(parse_document(data))


def cost_bound(problem: Problem) -> float | None:
    """The least cost when the SRAM only has to hold its capacity in live bytes at every moment.

    An integer program (SciPy's HiGHS); None without SciPy, for multi-core
    graphs (lifetimes on one axis are not conflicts there) or when it is not
    solved to optimality in its time.
    """
    try:
        import scipy.sparse as sparse
        from scipy.optimize import Bounds, LinearConstraint, milp
    except ImportError:
        return None
    if not problem.interval_conflicts or problem.memories is None:
        return None
    table = problem.memories.cost_table()
    capacity = int(problem.memories.capacities[0])
    times = np.unique(problem.lower)
    rows, cols = [], []
    for i, t in enumerate(times):
        live = np.flatnonzero((problem.lower <= t) & (problem.upper > t))
        rows += [i] * len(live)
        cols += live.tolist()
    live_at = sparse.csr_matrix(
        (problem.sizes[cols].astype(float), (rows, cols)), shape=(len(times), problem.n)
    )
    fits = (problem.sizes <= capacity).astype(float)
    result = milp(
        -(table[:, 1] - table[:, 0]),
        constraints=LinearConstraint(live_at, -np.inf, capacity),
        bounds=Bounds(0, fits),
        integrality=np.ones(problem.n),
        options={"time_limit": 60},
    )
    if result.status != 0:
        return None
    return float(table[:, 1].sum() + result.fun)


def networks(models: Path | None) -> list[tuple[str, Document]]:
    found = [(f"zoo:{name}", zoo_document(f"zoo:{name}")) for name in zoo_names()]
    if models is not None and models.is_dir():
        from gaplanner.documents.onnx_import import import_onnx

        for path in sorted(p for p in models.glob("*.onnx") if not p.name.endswith(".ts.onnx")):
            try:
                found.append((path.name, import_onnx(path)))
            except Exception as exc:  # one model the importer cannot read must not stop the table
                print(f"skipped {path.name}: {exc}", file=sys.stderr)
    return found


def memory_rows(args: argparse.Namespace) -> tuple[list[list[object]], dict[str, list[float]], int]:
    """The access-cost table; GA / spill and bound / spill per case (all, and where SRAM constrains)."""
    rows: list[list[object]] = []
    ratios: dict[str, list[float]] = {"all": [], "constrained": [], "bound": []}
    at_bound = 0
    settings = GASettings(time_limit=args.time_limit, seed=args.seed)
    for name, doc in networks(args.models):
        for sram in SRAM_SIZES:
            problem = with_memories(doc, sram)
            dram = float(problem.memories.cost_table()[:, 1].sum())  # type: ignore[union-attr]
            spill = solve(problem, "spill-greedy")
            started = time.perf_counter()
            ga = solve(problem, "ga", settings)
            seconds = time.perf_counter() - started
            bound = cost_bound(problem)
            constrained = problem.lower_bound > sram
            ratio = ga.cost / spill.cost
            ratios["all"].append(ratio)
            if constrained:
                ratios["constrained"].append(ratio)
                if bound is not None:
                    ratios["bound"].append(bound / spill.cost)
            optimal = bound is not None and ga.cost <= bound * (1 + 1e-9)
            at_bound += optimal
            rows.append(
                [
                    name, f"{sram // KIB} KiB", problem.n, "yes" if constrained else "no",
                    f"{dram:.4g}", f"{spill.cost / dram:.4f}", f"{ga.cost / dram:.4f}",
                    "—" if bound is None else f"{bound / dram:.4f}", f"{ratio:.4f}",
                    "yes" if optimal else "", f"{seconds:.1f}",
                ]
            )  # fmt: skip
            print(*rows[-1], sep="  ", file=sys.stderr, flush=True)
    return rows, ratios, at_bound


def capacity_rows(args: argparse.Namespace) -> list[list[object]]:
    root = benchmarks_root(args.benchmarks)
    if root is None or not (root / "minimalloc").is_dir():
        print("MiniMalloc benchmarks not found: the --capacity section is skipped", file=sys.stderr)
        return []
    rows = []
    settings = GASettings(time_limit=args.time_limit, seed=args.seed)
    for path in sorted((root / "minimalloc").glob("[A-K].*.csv")):
        problem = load_problem(path)
        answer = decide_fit(
            problem,
            MINIMALLOC_CAPACITY,
            lambda p, s, **callbacks: solve(p, "ga", s, workers=1, **callbacks),
            settings,
        )
        rows.append(
            [
                path.name.split(".")[0], problem.n, problem.lower_bound, "yes" if answer.fits else "no",
                answer.best_peak, f"{answer.elapsed:.2f}",
            ]
        )  # fmt: skip
        print(*rows[-1], sep="  ", file=sys.stderr, flush=True)
    return rows


def summary(rows: list[list[object]], ratios: dict[str, list[float]], at_bound: int) -> list[str]:
    """The paragraphs under the access-cost table."""
    constrained, every = ratios["constrained"], ratios["all"]
    lines = [
        "SRAM 1 and DRAM 10 per byte read or written; costs as a fraction of everything in DRAM. "
        "*Bound*: no plan costs less (the SRAM holding at most its capacity in live bytes at every "
        "moment, solved exactly as an integer program; — without SciPy or for multi-core graphs). "
        "*Constrained*: the model's arena lower bound exceeds the SRAM, so not everything can sit in it. "
        "Real models: `experiments/models/onnx/*.onnx` (the `.ts.onnx` exports of the same models left out).",
    ]
    if constrained:
        mean = statistics.mean(constrained)
        lines.append(
            f"Where the SRAM is a real constraint ({len(constrained)} cases): GA / spill mean {mean:.4f} "
            f"(the GA {100 * (1 - mean):.1f} % below the spill baseline on average), best "
            f"{min(constrained):.4f}, worst {max(constrained):.4f}. The GA is above the spill baseline in "
            f"{sum(r > 1 for r in every)} of all {len(every)} cases, and meets the bound (proven optimal) in "
            f"{at_bound} of {len(rows)}."
        )
    if ratios["bound"]:
        mean = statistics.mean(ratios["bound"])
        lines.append(
            f"No plan can do much better: bound / spill averages {mean:.4f} over the {len(ratios['bound'])} "
            f"constrained cases with a bound, so no planner is more than {100 * (1 - mean):.1f} % below the "
            "spill baseline on average on these inputs."
        )
    return lines


def fit_section(fit_rows: list[list[object]]) -> list[str]:
    """The --capacity table on MiniMalloc A–K and its summary."""
    if not fit_rows:
        return []
    fits = sum(row[3] == "yes" for row in fit_rows)
    seconds = [float(row[5]) for row in fit_rows]
    found = [float(row[5]) for row in fit_rows if row[3] == "yes"]
    speed = (
        f"; those in a median {statistics.median(found):.2f} s, at most {max(found):.2f} s" if found else ""
    )
    return [
        "## Does it fit: MiniMalloc A–K at capacity 1,048,576",
        "`gaplanner plan X.csv --capacity 1048576` (the default `ga`: exact probes and the GA, one "
        "process): it stops at the first plan that fits, else at its time limit.",
        markdown_table(["instance", "blocks", "lower bound", "fits", "best peak", "seconds"], fit_rows),
        f"Fits found on {fits} of {len(fit_rows)}{speed}; all answers in a median "
        f"{statistics.median(seconds):.2f} s.",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=10.0, help="GA seconds per case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--benchmarks", help="the benchmark folder (default: ../shared/benchmarks)")
    parser.add_argument("--models", type=Path, default=ROOT / "experiments" / "models" / "onnx")
    args = parser.parse_args(argv)
    rows, ratios, at_bound = memory_rows(args)
    fit_rows = capacity_rows(args)
    command = "python -m experiments.bench_memories " + " ".join(sys.argv[1:] if argv is None else argv)
    path = write_results(
        "memories",
        "Memories: an SRAM in front of DRAM, and does it fit",
        ["input", "SRAM", "blocks", "constrained", "all in DRAM", "spill", "GA", "bound", "GA / spill",
         "GA at bound", "GA s"],
        rows,
        command.strip(),
        notes="\n\n".join(summary(rows, ratios, at_bound) + fit_section(fit_rows)),
    )  # fmt: skip
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
