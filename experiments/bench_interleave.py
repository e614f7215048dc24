"""A pool's interleaving searched: round robin and one model after the other against the searched one.

    python -m experiments.bench_interleave [--time-limit 10] [--plan-seconds 3] [--out DIR]

For pairs of models run interleaved on one device (a runtime time-slicing
them; each model's own order kept): training graphs of
:mod:`experiments.training` and zoo networks. Per pair: the bound of the
round-robin interleaving (one operator of each model in turn, the
certificate's given order), of the models one after the other (the first
whole, then the second), of the interleaving
:func:`gaplanner.schedule.interleave.search_interleaving` chooses in
``--time-limit`` seconds, the bound over every interleaving with its origin,
and the arena of a verified GA plan of the chosen interleaving; with torch,
also a prefill and a decode model sharing their KV cache. Writes
``docs/results/interleave.md``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments.bench_pools import kv_pair
from experiments.report import results_folder, write_results
from experiments.training import GRAPHS, load_graph
from gaplanner import GASettings, solve
from gaplanner.documents.schema import Document
from gaplanner.documents.zoo import ZOO_PREFIX, zoo_document
from gaplanner.problem.loading import load_document
from gaplanner.problem.pools import pool_problem
from gaplanner.schedule import ScheduleResult, ScheduleSettings
from gaplanner.schedule.interleave import model_operators, search_interleaving

PAIRS: tuple[tuple[str, str], ...] = (
    ("resnet_train", "unet_train"),
    ("bert_train", "gpt2_train"),
    ("nasnet_infer", "xception_infer"),
    ("zoo:mobilenetv1", "zoo:googlenet"),
)


@dataclass(frozen=True)
class Row:
    """One pair's figures."""

    pair: tuple[str, str]
    operators: int
    one_after_other: int
    result: ScheduleResult
    arena: int
    seconds: float


def model(name: str, folder: Path) -> tuple[str, Document]:
    if name.startswith(ZOO_PREFIX):
        return name.removeprefix(ZOO_PREFIX), zoo_document(name)
    return name, load_graph(name, folder)


def measure(pair: tuple[str, str], folder: Path, time_limit: float, plan_seconds: float) -> Row:
    """Search the pair's interleaving, bound the one-after-the-other run, plan the chosen one."""
    return measure_models(pair, [model(name, folder) for name in pair], (), time_limit, plan_seconds)


def measure_models(
    pair: tuple[str, str], models: list[tuple[str, Document]], shared: Sequence[str], time_limit: float,
    plan_seconds: float,
) -> Row:  # fmt: skip
    whole = [op_id for own in model_operators(models) for op_id in own]
    one_after_other = pool_problem(models, "interleaved", shared, schedule=whole).lower_bound
    started = time.perf_counter()
    settings = ScheduleSettings(time_limit=time_limit, seed=0)
    problem, result = search_interleaving(models, shared, settings=settings, name="+".join(pair))
    seconds = time.perf_counter() - started
    plan = solve(problem, "ga", GASettings(time_limit=plan_seconds, seed=0))  # verified
    return Row(pair, len(whole), int(one_after_other), result, plan.peak, seconds)


def kv_row(time_limit: float, plan_seconds: float) -> Row | None:
    """The prefill and decode pair sharing its KV cache (:func:`experiments.bench_pools.kv_pair`, exported
    here), or None without torch."""
    with tempfile.TemporaryDirectory() as folder:
        found = kv_pair(Path(folder))
        if found is None:
            return None
        prefill, decode, shared = found
        models = [("prefill", load_document(prefill)), ("decode", load_document(decode))]
    pair = ("prefill", f"decode (sharing {len(shared)} cache tensors)")
    return measure_models(pair, models, shared, time_limit, plan_seconds)


HEADER = [
    "pool (interleaved)",
    "operators",
    "round robin (given)",
    "one after the other",
    "searched",
    "searched / round robin",
    "order-free bound",
    "searched / order-free",
    "optimal",
    "search s",
    "arena (GA)",
    "order-free bound from",
]


def cells(row: Row) -> list[object]:
    r = row.result
    return [
        " + ".join(row.pair),
        row.operators,
        r.given_bound,
        row.one_after_other,
        r.chosen_bound,
        f"{r.chosen_bound / r.given_bound:.3f}",
        r.order_free_bound,
        f"{r.chosen_bound / r.order_free_bound:.3f}",
        "yes" if r.optimal else "no",
        f"{row.seconds:.1f}",
        row.arena,
        r.bound_origin,
    ]


NOTES = """
Bounds in bytes: the most bytes live at once when the pooled models run in that
interleaving (each model's inputs written when it starts, its outputs read when
it ends); the order-free bound holds for every interleaving that keeps each
model's own order. The arena is a verified plan of the searched interleaving.
Without shared tensors a model not yet started or already ended holds no bytes,
so one model after the other meets the larger model's own bound, which no
interleaving can beat: the search finds it and the certificate proves it, and
the round-robin column is what a time-slicing runtime's default costs. With a
shared tensor (a cache one model writes and another reads, kept to the end) the
order of the models' parts around its writer matters too; in the last row
(`experiments/models/kv_pair.py`, as in [pools.md](pools.md), without torch
the row is left out) decode reads the cache prefill writes, and the
certificate proves no interleaving beats prefill whole, then decode.
`gaplanner plan A B --together interleaved --schedule search` (or a pool
document with `--schedule search`) returns the searched interleaving as
`schedule`; given back with `--schedule FILE` it is the same problem and bound.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--time-limit", type=float, default=10.0, help="seconds of interleaving search per pair"
    )
    parser.add_argument("--plan-seconds", type=float, default=3.0, help="seconds of GA layout per pair")
    parser.add_argument("--graphs", type=Path, default=GRAPHS, help="the training-graph folder")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default docs/results)")
    args = parser.parse_args(argv)
    rows = []
    for pair in PAIRS:
        rows.append(measure(pair, args.graphs, args.time_limit, args.plan_seconds))
        print(" | ".join(str(c) for c in cells(rows[-1])), file=sys.stderr)
    if (kv := kv_row(args.time_limit, args.plan_seconds)) is not None:
        rows.append(kv)
        print(" | ".join(str(c) for c in cells(kv)), file=sys.stderr)
    command = "python -m experiments.bench_interleave " + shlex.join(
        ["--time-limit", f"{args.time_limit:g}", "--plan-seconds", f"{args.plan_seconds:g}"]
    )
    path = write_results(
        "interleave",
        "A pool's interleaving searched: two models time-sliced on one device",
        HEADER,
        [cells(row) for row in rows],
        command,
        NOTES,
        folder=args.out or results_folder(),
    )
    print(path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
