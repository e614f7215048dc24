"""ExecuTorch's memory planning: its greedy against gaplanner on Hugging Face models, per memory id.

    python -m experiments.bench_executorch [--models bert gpt2 ...] [--time-limit 3] [--output PATH]

Each model is built from its transformers configuration (random weights,
nothing downloaded), exported with ``torch.export.export``, lowered with
``to_edge(...).to_executorch(...)`` with and without ExecuTorch's constant
propagation (``do_quant_fusion_and_const_prop``), and planned by
:func:`gaplanner.integrations.executorch.plan_memory`, which plans each memory id with the
GA, runs ExecuTorch's greedy on the same specs and keeps the smaller plan. The
table gives, per memory id, both arenas, the lower bound of the specs and each
planner's time; every lowered program passes ExecuTorch's storage-overlap
check (``Verifier.verify_storage_reuse``). Writes ``docs/results/executorch.md``.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import markdown_table

#: Times each program's specs are planned, for median planning times.
REPEATS = 3
DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "executorch.md"


def _text(vocab: int = 1000, length: int = 128) -> Callable[[Any], dict[str, Any]]:
    def inputs(torch: Any) -> dict[str, Any]:
        return {"input_ids": torch.randint(0, vocab, (1, length))}

    return inputs


def _image(size: int) -> Callable[[Any], dict[str, Any]]:
    def inputs(torch: Any) -> dict[str, Any]:
        return {"pixel_values": torch.randn(1, 3, size, size)}

    return inputs


@dataclass(frozen=True)
class ModelCase:
    """A transformers model class and config, with the inputs it is exported for."""

    label: str
    config: str  # transformers configuration class
    model: str  # transformers model class
    inputs: Callable[[Any], dict[str, Any]]
    shape: str  # the inputs, in words, for the table
    encoder_only: bool = False  # export model.get_encoder()
    settings: tuple[tuple[str, Any], ...] = ()  # configuration fields changed from their defaults


CASES = {
    "bert": ModelCase("BERT-base", "BertConfig", "BertModel", _text(), "1x128 tokens"),
    "distilbert": ModelCase("DistilBERT", "DistilBertConfig", "DistilBertModel", _text(), "1x128 tokens"),
    "gpt2": ModelCase(
        "GPT-2", "GPT2Config", "GPT2Model", _text(), "1x128 tokens", settings=(("use_cache", False),)
    ),
    "t5": ModelCase("T5-small encoder", "T5Config", "T5EncoderModel", _text(), "1x128 tokens"),
    "vit": ModelCase("ViT-B/16", "ViTConfig", "ViTModel", _image(224), "1x3x224x224"),
    "clip": ModelCase(
        "CLIP ViT-B/32 vision", "CLIPVisionConfig", "CLIPVisionModel", _image(224), "1x3x224x224"
    ),
    "swin": ModelCase("Swin-T", "SwinConfig", "SwinModel", _image(224), "1x3x224x224"),
    "convnext": ModelCase("ConvNeXt-T", "ConvNextConfig", "ConvNextModel", _image(224), "1x3x224x224"),
    "resnet50": ModelCase("ResNet-50", "ResNetConfig", "ResNetModel", _image(224), "1x3x224x224"),
    "mobilevit": ModelCase("MobileViT-S", "MobileViTConfig", "MobileViTModel", _image(256), "1x3x256x256"),
    "whisper": ModelCase(
        "Whisper-tiny encoder",
        "WhisperConfig",
        "WhisperModel",
        lambda torch: {"input_features": torch.randn(1, 80, 3000)},
        "1x80x3000 mel",
        encoder_only=True,
    ),
}


@dataclass
class Row:
    """One memory id of one lowered program."""

    model: str
    const_prop: bool
    mem_id: int
    specs: int
    greedy: int
    bound: int
    gaplanner: int
    kept: str
    greedy_seconds: float
    gaplanner_seconds: float


def build(case: ModelCase) -> tuple[Any, dict[str, Any]]:
    import torch
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, case.config)(**dict(case.settings))
    model = getattr(transformers, case.model)(config)
    model = model.get_encoder() if case.encoder_only else model
    return model.eval(), case.inputs(torch)


def lower(exported: Any, const_prop: bool, time_limit: float) -> tuple[list[Any], float]:
    """The program lowered with gaplanner's planner; the reports of every planned graph, lowering time."""
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, Verifier
    from executorch.exir.passes import MemoryPlanningPass

    from gaplanner.integrations.executorch import algo_result, plan_specs

    reports: list[Any] = []

    def recorded(alignment, specs, graph_module, graph_signature, extra_padding):
        # Planned REPEATS times (the same plan each time, for one seed) for median times on a busy machine.
        programs = [
            plan_specs(alignment, specs, graph_module, graph_signature, extra_padding, time_limit=time_limit)
            for _ in range(REPEATS)
        ]
        reports.append(_with_median_times(programs))
        return algo_result(programs[0])

    suite = MemoryPlanningAlgorithmSuite(algo_list=[recorded])
    config = ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(memory_planning_algo=suite),
        do_quant_fusion_and_const_prop=const_prop,
    )
    started = time.perf_counter()
    program = to_edge(exported).to_executorch(config)
    seconds = time.perf_counter() - started
    ep = program.exported_program()
    Verifier(ep.graph_module, True, True, True, ep.graph_signature).verify_storage_reuse()
    return reports, seconds


def _with_median_times(programs: list[Any]) -> Any:
    """The first program, its arenas' planning times replaced by their medians over all."""
    first = programs[0]
    first.arenas = [
        replace(
            arena,
            gaplanner_seconds=statistics.median(p.arenas[k].gaplanner_seconds for p in programs),
            greedy_seconds=statistics.median(p.arenas[k].greedy_seconds for p in programs),
        )
        for k, arena in enumerate(first.arenas)
    ]
    return first


def measure(name: str, time_limit: float) -> tuple[list[Row], str]:
    """Rows for one model (both constant-propagation settings) and a note on its export."""
    import torch

    case = CASES[name]
    started = time.perf_counter()
    model, inputs = build(case)
    with torch.no_grad():
        exported = torch.export.export(model, (), inputs)
    note = f"export {time.perf_counter() - started:.0f} s"
    rows = []
    for const_prop in (False, True):
        reports, seconds = lower(exported, const_prop, time_limit)
        note += f", lowering{' (const-prop)' if const_prop else ''} {seconds:.0f} s"
        for program in reports:
            for arena in program.arenas:
                rows.append(
                    Row(
                        case.label,
                        const_prop,
                        arena.mem_id,
                        arena.blocks,
                        arena.greedy_size or 0,
                        arena.lower_bound,
                        arena.gaplanner_size or 0,
                        arena.algorithm,
                        arena.greedy_seconds,
                        arena.gaplanner_seconds,
                    )
                )
    return rows, note


def warm_up() -> None:
    """Load (or compile) the search's kernels outside the timings."""
    from gaplanner.problem.problem import problem_from_arrays
    from gaplanner.search.ga import GASettings
    from gaplanner.solve import solve

    problem = problem_from_arrays(np.array([16, 32, 16]), np.array([0, 1, 2]), np.array([2, 3, 4]))
    solve(problem, "ga", GASettings(time_limit=1.0, generations=2))


def report(rows: list[Row], notes: dict[str, str], failures: dict[str, str], command: str) -> str:
    header = [
        "model", "const-prop", "memory id", "specs", "ExecuTorch greedy", "bound", "gaplanner",
        "vs greedy", "kept", "greedy s", "gaplanner s",
    ]  # fmt: skip
    body = [
        [
            r.model, "yes" if r.const_prop else "no", r.mem_id, r.specs, f"{r.greedy:,}", f"{r.bound:,}",
            f"{r.gaplanner:,}" + (" (bound)" if r.gaplanner <= r.bound else ""),
            f"{100 * (r.gaplanner - r.greedy) / r.greedy:+.1f} %" if r.greedy else "",
            r.kept, f"{r.greedy_seconds:.3f}", f"{r.gaplanner_seconds:.3f}",
        ]
        for r in rows
    ]  # fmt: skip
    above = [r for r in rows if r.greedy > r.bound]
    at_bound = sum(r.gaplanner <= r.bound for r in rows)
    lines = [
        "# ExecuTorch memory planning: greedy vs gaplanner",
        "",
        f"Generated by `{command}` on {datetime.date.today().isoformat()} "
        "(2 shared cores; torch 2.13.0, executorch 1.5.1). Random weights from each model's default "
        "transformers configuration; sizes in bytes, padding included; planning times per memory id "
        f"after the search's kernels are loaded, medians of {REPEATS} plannings of the same specs.",
        "",
        markdown_table(header, body),
        "",
        f"- gaplanner at the lower bound: {at_bound} of {len(rows)} arenas.",
    ]
    if above:
        savings = [100 * (r.greedy - r.gaplanner) / r.greedy for r in above]
        spread = f"{min(savings):.1f}–{max(savings):.1f} %"
        lines.append(
            f"- Where ExecuTorch's greedy is above the bound ({len(above)} arenas): gaplanner "
            f"{statistics.mean(savings):.1f} % smaller on average (range {spread})."
        )
    if rows:
        lines.append(f"- Slowest gaplanner planning: {max(r.gaplanner_seconds for r in rows):.3f} s.")
    lines += ["", "Inputs and export/lowering times:", ""]
    lines += [f"- {CASES[n].label} ({_inputs(CASES[n])}): {note}" for n, note in notes.items()]
    lines += [f"- {CASES[n].label}: not measured: {reason}" for n, reason in failures.items()]
    return "\n".join(lines) + "\n"


def _inputs(case: ModelCase) -> str:
    changed = ", ".join(f"{key}={value}" for key, value in case.settings)
    return f"{case.shape}; {case.model}" + (f", {changed}" if changed else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--time-limit", type=float, default=3.0, help="gaplanner's budget per program (s)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    try:
        import executorch.exir  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        print(f"skipped: {exc.name} is not installed (pip install 'gaplanner[executorch]' transformers)")
        return 0
    warm_up()
    rows: list[Row] = []
    notes: dict[str, str] = {}
    failures: dict[str, str] = {}
    for name in args.models:
        try:
            model_rows, notes[name] = measure(name, args.time_limit)
        except Exception as exc:  # a model that does not export or lower is reported, not fatal
            failures[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
            print(f"{name}: {failures[name]}", file=sys.stderr)
            continue
        rows += model_rows
        print(f"{name}: {notes[name]}", file=sys.stderr)
    command = "python -m experiments.bench_executorch" + (
        f" --models {' '.join(args.models)}" if args.models != list(CASES) else ""
    )
    text = report(rows, notes, failures, command)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
