"""Milliseconds at the bound: the default search against greedy-size where a starting plan meets the bound.

    python -m experiments.bench_at_bound [--inputs zoo:googlenet ...] [--models resnet ...] [--calls 21]
        [--out docs/results/at-bound.md]

In one process, warm (every kernel loaded, each call made once before the
timed ones), each input is planned ``--calls`` times by each planner in turn,
and the medians are compared: greedy-size (``solve(problem, "greedy-size")``)
against the default search, ``solve(problem, "ga")`` (the GA alone) and
``solve(problem, "ga", GASettings())`` (the front doors' default: a 10 s time
limit, the GA and the exact probes side by side). An input counts as at its
bound when a starting plan meets its lower bound (the search returns that
plan); the others are listed, not timed. The default inputs: the zoo networks
(1, 2 and 4 cores) and the bundled examples of one arena.

ExecuTorch: each model of :mod:`experiments.training.models` is exported and
lowered once; the arguments ExecuTorch's memory planning pass hands its
algorithms are kept, and ExecuTorch's ``greedy`` and
:func:`gaplanner.integrations.executorch.plan_memory` (which runs that greedy
too, and keeps the smaller plan) plan them in turn, ``--calls`` times each.
``plan_memory``'s time is split into the greedy it runs, gaplanner's planning
(building each arena's problem and solving it) and the rest (the
integration's own: spec names from the graph, grouping, the allocation
returned). Needs ``torch`` and ``executorch`` (that part is skipped without).
"""

from __future__ import annotations

import argparse
import logging
import shlex
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.common import markdown_table
from experiments.report import results_folder, write_results

ZOO = ("densenet121", "googlenet", "inceptionv3", "mobilenetv1", "mobilenetv2", "resnet50")
INPUTS = (
    *(f"zoo:{net}{cores}" for net in ZOO for cores in ("", "@2", "@4")),
    "example:buffers_input12",
    "example:multicore_fig1b",
    "example:runtime_rules",
    "example:seed000_queue",
)
MODELS = ("resnet", "mobilenet_v2", "unet", "inception", "densenet")
#: Planning within this many times ExecuTorch's greedy, plus this many milliseconds, is the target where
#: that greedy is at the bound (issue 41).
GREEDY_TIMES, GREEDY_PLUS_MS = 2.0, 20.0


def medians(calls: int, planners: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Each planner's median milliseconds over ``calls`` calls, taken in turn after one untimed call each."""
    for plan in planners.values():
        plan()
    times: dict[str, list[float]] = {name: [] for name in planners}
    for _ in range(calls):
        for name, plan in planners.items():
            started = time.perf_counter()
            plan()
            times[name].append(time.perf_counter() - started)
    return {name: 1e3 * statistics.median(seconds) for name, seconds in times.items()}


@dataclass(frozen=True)
class InputRow:
    source: str
    blocks: int
    kept: str
    greedy_ms: float
    ga_ms: float
    default_ms: float


def at_bound(source: str) -> tuple[Any, str | None]:
    """The problem, and the starting plan the default search keeps at its bound (None: not at it)."""
    from gaplanner import load_problem, solve
    from gaplanner.search.starting_plans import starting_plans

    problem = load_problem(source)
    if problem.memories is not None:
        return problem, None
    if min(plan.peak for plan in starting_plans(problem).values()) > problem.lower_bound:
        return problem, None
    plan = solve(problem, "ga")
    assert plan.optimal and plan.search is not None and plan.search.generations == 0, source
    return problem, plan.stop_reason.removeprefix("lower bound reached; ").removesuffix("'s plan kept")


def measure_input(source: str, calls: int) -> InputRow | str:
    """The row of an input at its bound, else why it is not timed."""
    from gaplanner import GASettings, solve

    problem, kept = at_bound(source)
    if kept is None:
        return f"{source}: no starting plan meets the bound" + (" (memories)" if problem.memories else "")
    times = medians(
        calls,
        {
            "greedy": lambda: solve(problem, "greedy-size"),
            "ga": lambda: solve(problem, "ga"),
            "default": lambda: solve(problem, "ga", GASettings()),
        },
    )
    return InputRow(source, problem.n, kept, times["greedy"], times["ga"], times["default"])


@dataclass(frozen=True)
class ModelRow:
    model: str
    specs: int
    greedy_at_bound: bool
    greedy_ms: float
    plan_memory_ms: float
    inner_greedy_ms: float
    planning_ms: float


def captured(name: str) -> list[tuple[Any, ...]]:
    """The arguments ExecuTorch's memory planning pass gives its algorithms, for model ``name``."""
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
    from executorch.exir.passes import MemoryPlanningPass

    from experiments.training import models

    calls: list[tuple[Any, ...]] = []
    given: list[tuple[Any, Any, Any, Any]] = []

    def recording(alignment, specs, graph_module, graph_signature, extra_padding):
        calls.append((alignment, list(specs), graph_module, graph_signature, extra_padding))
        given.extend((s, s.mem_id, s.mem_offset, s.mem_obj_id) for s in specs)
        return greedy(alignment, specs, graph_module, graph_signature, extra_padding)

    model, inputs = getattr(models, name)()
    suite = MemoryPlanningAlgorithmSuite(algo_list=[recording])
    config = ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(memory_planning_algo=suite))
    to_edge(torch.export.export(model.eval(), inputs)).to_executorch(config)
    for spec, mem_id, offset, obj in given:  # the pass writes the chosen allocation into the specs
        spec.mem_id, spec.mem_offset, spec.mem_obj_id = mem_id, offset, obj
    return calls


def measure_model(name: str, calls: int) -> list[ModelRow]:
    from executorch.exir.memory_planning import greedy

    from gaplanner.integrations.executorch import algo_result, plan_specs

    rows = []
    for alignment, specs, graph_module, signature, padding in captured(name):
        arguments = (alignment, specs, graph_module, signature, padding)
        programs: list[Any] = []

        def plan_memory(arguments: tuple[Any, ...] = arguments, programs: list[Any] = programs) -> Any:
            programs.append(plan_specs(*arguments))
            return algo_result(programs[-1])

        times = medians(calls, {"greedy": lambda a=arguments: greedy(*a), "plan_memory": plan_memory})
        arenas = [program.arenas for program in programs]
        at = all(a.greedy_size is not None and a.greedy_size <= a.lower_bound for a in arenas[-1])
        inner = statistics.median(program[0].greedy_seconds for program in arenas) if arenas[0] else 0.0
        planning = statistics.median(sum(a.gaplanner_seconds for a in program) for program in arenas)
        rows.append(
            ModelRow(name, len(specs), at, times["greedy"], times["plan_memory"], 1e3 * inner, 1e3 * planning)
        )
    return rows


INPUT_HEADER = [
    "input", "blocks", "plan kept", "greedy-size ms", "ga ms", "ga / greedy-size",
    "ga, 10 s limit ms", "ga, 10 s limit / greedy-size",
]  # fmt: skip
MODEL_HEADER = [
    "model", "specs", "greedy at the bound", "ExecuTorch greedy ms", "plan_memory ms",
    "plan_memory / greedy", f"target ({GREEDY_TIMES:g}x greedy + {GREEDY_PLUS_MS:g} ms)",
    "of which: its greedy ms", "gaplanner's planning ms", "integration ms",
]  # fmt: skip


def input_cells(row: InputRow) -> list[object]:
    return [
        f"`{row.source}`", row.blocks, row.kept, f"{row.greedy_ms:.2f}", f"{row.ga_ms:.2f}",
        f"{row.ga_ms / row.greedy_ms:.2f}", f"{row.default_ms:.2f}", f"{row.default_ms / row.greedy_ms:.2f}",
    ]  # fmt: skip


def model_cells(row: ModelRow) -> list[object]:
    target = GREEDY_TIMES * row.greedy_ms + GREEDY_PLUS_MS
    rest = row.plan_memory_ms - row.inner_greedy_ms - row.planning_ms
    return [
        row.model, row.specs, "yes" if row.greedy_at_bound else "no", f"{row.greedy_ms:.2f}",
        f"{row.plan_memory_ms:.2f}", f"{row.plan_memory_ms / row.greedy_ms:.2f}",
        f"{target:.1f} ({'met' if row.plan_memory_ms <= target else 'missed'})",
        f"{row.inner_greedy_ms:.2f}", f"{row.planning_ms:.2f}", f"{rest:.2f}",
    ]  # fmt: skip


NOTES = """\
Medians of {calls} calls per planner in one process, the planners taking turns, after one untimed
call each (kernels loaded, nothing compiled during the timings). *ga*: `solve(problem, "ga")`;
*ga, 10 s limit*: `solve(problem, "ga", GASettings())`, what the command line and the service run
by default. Both return the starting plan kept (named) with `optimal` true, and start no GA
generation, no exact probe and no thread. The target of issue 41 is at most 2x greedy-size.
{skipped}
"""

MODEL_NOTES = """\
## ExecuTorch

ExecuTorch's `greedy` against `plan_memory` on the specs its memory planning pass hands them, per
planned graph; models from `experiments/training/models.py` (random weights), lowered with
`to_edge(...).to_executorch(...)`. `plan_memory` runs ExecuTorch's greedy too and keeps the smaller
plan; its time is split into that greedy, gaplanner's planning (each arena's problem built and
solved) and the integration's own work (spec names from the graph, grouping by memory id, the
allocation returned). The target applies where the greedy is at the bound.

{table}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", nargs="*", default=list(INPUTS))
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    parser.add_argument("--calls", type=int, default=21, help="timed calls per planner (median)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)

    rows: list[InputRow] = []
    skipped: list[str] = []
    for source in args.inputs:
        row = measure_input(source, args.calls)
        if isinstance(row, str):
            skipped.append(row)
        else:
            rows.append(row)
        print(row if isinstance(row, str) else "  ".join(str(c) for c in input_cells(row)), flush=True)
    model_rows: list[ModelRow] = []
    try:
        if args.models:
            import executorch.exir  # noqa: F401
    except ImportError as exc:
        skipped.append(f"ExecuTorch: not measured ({exc.name} is not installed)")
    else:
        for name in args.models:
            for model_row in measure_model(name, args.calls):
                model_rows.append(model_row)
                print("  ".join(str(c) for c in model_cells(model_row)), flush=True)
    listed = "".join(f"\n- {reason}" for reason in skipped)
    notes = NOTES.format(calls=args.calls, skipped=f"\nNot timed:\n{listed}" if skipped else "")
    if model_rows:
        notes += "\n" + MODEL_NOTES.format(
            table=markdown_table(MODEL_HEADER, [model_cells(r) for r in model_rows])
        )
    out = args.out or results_folder() / "at-bound.md"
    argv_text = shlex.join(argv if argv is not None else sys.argv[1:])
    write_results(
        out.stem,
        "Milliseconds at the bound: the default search against greedy-size, and plan_memory against "
        "ExecuTorch's greedy",
        INPUT_HEADER,
        [input_cells(row) for row in rows],
        f"python -m experiments.bench_at_bound {argv_text}".strip(),
        notes=notes,
        folder=out.parent,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
