"""The ExecuTorch route of the order search: lowered programs in ExecuTorch's order and in the searched one.

    python -m experiments.bench_executorch_schedule [--models nasnet randwire] [--time-limit 10]
        [--out docs/results/executorch_schedule.md]

Each model of the training-graph set's irregular nets (built by
:mod:`experiments.training.models`, random weights, evaluation mode) is
exported, lowered with ``to_edge`` and ``to_executorch`` three ways: in the
exported order with ExecuTorch's greedy planner (its default), in the
exported order with :func:`gaplanner.integrations.executorch.plan_memory`, and
reordered by :func:`gaplanner.integrations.executorch_schedule.schedule_for_memory`
then planned with ``plan_memory``. The reordered program is run in
``executorch.runtime`` and its output compared with the eager model's.
Needs ``torch`` and ``executorch``.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.report import results_folder, write_results

MODELS = ("nasnet", "randwire")


@dataclass(frozen=True)
class Row:
    model: str
    operators: int
    greedy: int
    planned: int
    reordered: int
    given_bound: int
    chosen_bound: int
    max_difference: float
    search_seconds: float


def _lower(model: Any, inputs: tuple[Any, ...], algorithm: Any, time_limit: float | None) -> tuple[Any, Any]:
    """The model lowered to an ExecuTorch program, reordered first when ``time_limit`` is given."""
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass

    from gaplanner.integrations.executorch_schedule import schedule_for_memory
    from gaplanner.schedule import ScheduleSettings

    edge = to_edge(torch.export.export(model, inputs))
    result = None
    if time_limit is not None:
        result = schedule_for_memory(edge, settings=ScheduleSettings(time_limit=time_limit, seed=0))
    suite = MemoryPlanningAlgorithmSuite(algo_list=[algorithm])
    config = ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(memory_planning_algo=suite))
    return edge.to_executorch(config), result


def _arena(program: Any) -> int:
    return int(program.exported_program().graph_module.meta["non_const_buffer_sizes"][1])


def measure(name: str, time_limit: float) -> Row:
    import torch
    from executorch.exir.memory_planning import greedy
    from executorch.runtime import Runtime

    from experiments.training import models
    from gaplanner.integrations.executorch import plan_memory

    model, inputs = getattr(models, name)()
    planner = functools.partial(plan_memory, time_limit=5.0, seed=0)
    default, _ = _lower(model, inputs, greedy, None)
    planned, _ = _lower(model, inputs, planner, None)
    reordered, result = _lower(model, inputs, planner, time_limit)
    method = Runtime.get().load_program(reordered.buffer).load_method("forward")
    (output,) = method.execute(list(inputs))
    with torch.no_grad():
        expected = model(*inputs)
    return Row(
        model=name,
        operators=len(result.order),
        greedy=_arena(default),
        planned=_arena(planned),
        reordered=_arena(reordered),
        given_bound=result.given_bound,
        chosen_bound=result.chosen_bound,
        max_difference=float((output - expected).abs().max()),
        search_seconds=result.seconds,
    )


HEADER = [
    "model",
    "operators",
    "ExecuTorch (its order, greedy)",
    "its order, gaplanner",
    "searched order, gaplanner",
    "searched / ExecuTorch",
    "bound: given -> chosen",
    "largest difference from eager",
    "search s",
]


def cells(row: Row) -> list[object]:
    return [
        row.model,
        row.operators,
        f"{row.greedy:,}",
        f"{row.planned:,}",
        f"{row.reordered:,}",
        f"{row.reordered / row.greedy:.3f}",
        f"{row.given_bound:,} -> {row.chosen_bound:,}",
        f"{row.max_difference:.1e}",
        f"{row.search_seconds:.1f}",
    ]


NOTES = """
Arenas in bytes (ExecuTorch's memory id 1, its alignment and padding included).
*ExecuTorch*: the exported order planned by ExecuTorch's greedy, its default;
*its order, gaplanner*: the same order planned by `plan_memory` (the planner
alone cannot go below the order's bound); *searched order*: the edge program
reordered by `schedule_for_memory` before `to_executorch`, planned by
`plan_memory`, run in `executorch.runtime`. The bounds are the edge program's
tensors' before alignment. Models: experiments/training/models.py (`nasnet`:
six NASNet-style cells; `randwire`: a randomly wired net), batch 4, 64x64,
in the order their torch code calls the layers.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = []
    for name in args.models:
        started = time.perf_counter()
        rows.append(row := measure(name, args.time_limit))
        print("  ".join(str(c) for c in cells(row)), f"({time.perf_counter() - started:.0f} s)", flush=True)
    out = args.out or results_folder() / "executorch_schedule.md"
    argv_text = shlex.join(argv if argv is not None else sys.argv[1:])
    write_results(
        out.stem,
        "ExecuTorch: the searched order against ExecuTorch's own",
        HEADER,
        [cells(row) for row in rows],
        f"python -m experiments.bench_executorch_schedule {argv_text}".strip(),
        notes=NOTES,
        folder=out.parent,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
