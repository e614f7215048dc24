"""Small versions of the training graphs, where the order found and the order-free bound meet or nearly.

    python -m experiments.small_orders [--time-limit 10] [--build] [--only vit_1 ...]
        [--out docs/results/schedule-small.md]

The transformers with one and two layers (same widths, batch and sequence as
the training set's four-layer ones) and MobileNetV2 with its first one or two
stages: the same operators per layer as the full graphs, few enough layers to
see where the gap between the order found and the order-free bound comes from.
For each graph, under the default rules and with no in-place writes: the
given order's bound, the order :func:`gaplanner.schedule.search_schedule`
chooses, the order-free lower bound (its origin), and their ratio. Where the
two meet, the chosen order is proved optimal over every order. The graphs
are in ``experiments/training/small`` (``--build`` exports them again; needs
torch and transformers).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from experiments.report import results_folder, write_results
from experiments.training import graph_names, load_graph
from experiments.training.make_graphs import GraphSpec, make
from gaplanner.documents.rules import Rules
from gaplanner.schedule import ScheduleResult, ScheduleSettings, search_schedule

FOLDER = Path(__file__).resolve().parent / "training" / "small"
SPECS: tuple[GraphSpec, ...] = tuple(
    GraphSpec(f"{model}_{depth}", model, True, f"{model}, {depth} {unit}", ((unit, depth),))
    for model, unit in (("bert", "layers"), ("gpt2", "layers"), ("vit", "layers"), ("mobilenet_v2", "stages"))
    for depth in (1, 2)
)
RULES = {"default": Rules(), "no in-place": Rules(inplace="never")}
HEADER = [
    "graph", "rules", "operators", "given (MB)", "chosen / given", "order-free / given",
    "chosen / order-free", "proved optimal", "bound's origin",
]  # fmt: skip


def cells(name: str, rules: str, operators: int, result: ScheduleResult) -> list[object]:
    given = result.given_bound
    return [
        name,
        rules,
        operators,
        f"{given / 1e6:.2f}",
        f"{result.chosen_bound / given:.4f}",
        f"{result.order_free_bound / given:.4f}",
        f"{result.chosen_bound / result.order_free_bound:.4f}",
        "yes" if result.optimal else "no",
        result.bound_origin.split(" (")[0],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--build", action="store_true", help="export the small graphs again first")
    parser.add_argument("--only", nargs="+", help="these graphs alone")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.build:
        FOLDER.mkdir(parents=True, exist_ok=True)
        for spec in SPECS:
            if args.only and spec.name not in args.only:
                continue
            print(make(spec, FOLDER), flush=True)
    rows = []
    for name in [n for n in graph_names(FOLDER) if not args.only or n in args.only]:
        document = load_graph(name, FOLDER)
        for label, rules in RULES.items():
            settings = ScheduleSettings(time_limit=args.time_limit, seed=0)
            rows.append(
                cells(name, label, len(document.operators or []), search_schedule(document, rules, settings))
            )
            print("  ".join(str(c) for c in rows[-1]), flush=True)
    if not rows:
        print(f"no graphs in {FOLDER}: run with --build", file=sys.stderr)
        return 2
    out = args.out or results_folder() / "schedule-small.md"
    command = "python -m experiments.small_orders " + shlex.join(argv if argv is not None else sys.argv[1:])
    write_results(
        out.stem,
        "Operator order on small training graphs: the order found against the order-free bound",
        HEADER,
        rows,
        command.strip(),
        notes=__doc__.split("\n\n", 2)[2].split("The graphs")[0].strip(),
        folder=out.parent,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
