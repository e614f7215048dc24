"""Several models in one pool: the pooled arena against the models' own arenas.

For sets of two or three models (zoo networks, and the real models in
``experiments/models/onnx/`` when present), run one after another
(``sequential``) and at the same time (``concurrent``): the pooled arena the GA
finds (:func:`gaplanner.plans.pool_report.pool_inputs`, what ``gaplanner plan A B
--together`` plans), its lower bound, and the baseline: each model planned
alone by the same GA with the same time limit, their arenas summed (one arena
per model, side by side) and their largest (what one model alone needs). Every
plan is verified (:func:`gaplanner.solve.solve` verifies).

Writes ``docs/results/pools.md``. Run::

    PYTHONPATH=. python -m experiments.bench_pools --time-limit 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments.report import write_results
from gaplanner.plans.pool_report import Pool, compare_alone, pool_inputs
from gaplanner.problem.pools import MODEL_SEP
from gaplanner.search.ga import GASettings
from gaplanner.solve import solve

ROOT = Path(__file__).resolve().parents[1]
ZOO_SETS: tuple[tuple[str, ...], ...] = (
    ("zoo:mobilenetv1", "zoo:googlenet"),
    ("zoo:resnet50", "zoo:mobilenetv2", "zoo:inceptionv3"),
    ("zoo:densenet121", "zoo:mobilenetv2"),
)
#: Real models, as a vision pair, a language pair and a mixed triple.
MODEL_SETS: tuple[tuple[str, ...], ...] = (
    ("resnet50", "mobilenet_v2"),
    ("bert", "gpt2"),
    ("vit", "distilbert", "efficientnet"),
)


def model_sets(models: Path | None) -> list[tuple[str, ...]]:
    """The zoo sets, then the real-model sets whose files are all present."""
    sets = list(ZOO_SETS)
    if models is None or not models.is_dir():
        print(f"no models folder {models}: only the zoo sets", file=sys.stderr)
        return sets
    for names in MODEL_SETS:
        paths = [models / f"{name}.onnx" for name in names]
        if all(p.is_file() for p in paths):
            sets.append(tuple(str(p) for p in paths))
    return sets


def kv_pair(folder: Path) -> tuple[str, str, list[str]] | None:
    """A prefill and a decode model sharing their KV cache (:mod:`experiments.models.kv_pair`), or None
    without torch."""
    try:
        from experiments.models.kv_pair import export_pair
    except ImportError:
        return None
    try:
        prefill, decode, shared = export_pair(folder)
    except ImportError as exc:
        print(f"no prefill/decode pair: {exc}", file=sys.stderr)
        return None
    return str(prefill), str(decode), shared


def joined_bound(pool: Pool) -> int | None:
    """The sum of the models' own lower bounds where it holds, else None.

    It holds when every block of each model conflicts with every block of the
    others in the pooled problem (checked here; models at the same time,
    nothing shared): any plan then holds a heaviest clique of every model at once.
    """
    if pool.shared:
        return None
    problem = pool.problem
    model = np.array([bid.split(MODEL_SEP, 1)[0] for bid in problem.ids])
    for i in range(problem.n):
        others = np.flatnonzero(model != model[i])
        if not np.isin(others, problem.conflicts.neighbors(i)).all():
            return None
    return sum(int(p.lower_bound) for _, p in pool.models)


def measure(
    sources: tuple[str, ...], together: str, settings: GASettings, shared: Sequence[str] = ()
) -> list[object]:
    """One table row: the pooled GA plan, its bound, and each model's own GA plan (same settings)."""
    pool = pool_inputs(sources, together, shared)
    pooled = solve(pool.problem, "ga", settings, workers=1)
    c = compare_alone(pool, pooled, lambda p, _: solve(p, "ga", settings, workers=1))
    joined = joined_bound(pool) if together == "concurrent" else None
    bound = max(c.pooled_lower_bound, joined or 0)
    mark = " \\*" if joined is not None and joined > c.pooled_lower_bound else ""
    names = " + ".join(m.id for m in c.alone) + (" (KV cache shared)" if shared else "")
    return [
        names, together, pool.problem.n, f"{bound:,}{mark}",
        f"{c.pooled_peak:,}", f"{c.pooled_peak / bound:.4f}", f"{c.sum_alone:,}", f"{c.max_alone:,}",
        f"{c.pooled_peak / c.sum_alone:.4f}", f"{c.pooled_peak / c.max_alone:.4f}",
    ]  # fmt: skip


def notes(ratios: dict[str, list[tuple[float, float]]], time_limit: float) -> str:
    lines = [
        f"GA with a {time_limit:g} s limit per plan, one process, seed 0: the pooled plan gets one limit, "
        "and so does each model alone. *Bound*: no plan of the pool is smaller: the pooled problem's "
        "lower bound (the most bytes live at once on one execution order of the pool), or, marked \\*, "
        "for models at the same time, the sum of the models' own lower bounds, higher there, which holds "
        "because every block of one model conflicts with every block of the others (checked on the "
        "pooled problem). *Sum alone*: every model in its own arena, planned alone by the same GA (the "
        "baseline: nothing shared between models). *Largest alone*: the arena of the model that needs the "
        "most when planned alone. *prefill + decode*: a two-layer GPT-style decoder written for this "
        "benchmark (`experiments/models/kv_pair.py`: hidden 256, 4 heads, a 128-token prompt, exported "
        "to ONNX); prefill writes each layer's keys and values and decode, one token, reads them: "
        "pooled, they are one shared buffer (`--shared`) that persists across both; alone, each model "
        "holds its own copy. Every plan is verified.",
    ]
    for together, pairs in ratios.items():
        if pairs:
            to_sum = [a for a, _ in pairs]
            to_max = [b for _, b in pairs]
            lines.append(
                f"{together.capitalize()} ({len(pairs)} sets): pooled / sum alone median "
                f"{statistics.median(to_sum):.4f} (from {min(to_sum):.4f} to {max(to_sum):.4f}); pooled / "
                f"largest alone median {statistics.median(to_max):.4f} (from {min(to_max):.4f} to "
                f"{max(to_max):.4f})."
            )
    return "\n\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=3.0, help="GA seconds per plan")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", type=Path, default=ROOT / "experiments" / "models" / "onnx")
    args = parser.parse_args(argv)
    settings = GASettings(time_limit=args.time_limit, seed=args.seed)
    rows: list[list[object]] = []
    ratios: dict[str, list[tuple[float, float]]] = {"sequential": [], "concurrent": []}
    for sources in model_sets(args.models):
        for together in ("sequential", "concurrent"):
            rows.append(measure(sources, together, settings))
            ratios[together].append((float(rows[-1][-2]), float(rows[-1][-1])))
            print(*rows[-1], sep="  ", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as folder:
        kv = kv_pair(Path(folder))
        if kv is not None:  # decode runs after prefill: one after another only
            rows.append(measure(kv[:2], "sequential", settings, kv[2]))
            print(*rows[-1], sep="  ", file=sys.stderr, flush=True)
    command = "PYTHONPATH=. python -m experiments.bench_pools " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    path = write_results(
        "pools",
        "Several models in one pool: pooled arena against each model alone",
        ["models", "run", "blocks", "bound", "pooled", "pooled / bound", "sum alone", "largest alone",
         "pooled / sum", "pooled / largest"],
        rows,
        command.strip(),
        notes=notes(ratios, args.time_limit),
    )  # fmt: skip
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
