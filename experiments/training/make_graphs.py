"""Build the training-graph set: models with random weights, exported, their activations as graph documents.

    python -m experiments.training.make_graphs [--out experiments/training/graphs] [--only resnet unet]

Training graphs are the joint forward + backward programs PyTorch exports:
``torch.export.export`` of the model in training mode (its module returns the
loss), then ``torch.export.experimental._export_forward_backward``, which
appends the backward pass and returns the loss, the parameters' gradients and
the batch-norm statistics' new values. Inference graphs are the plain export
in evaluation mode. Each program goes through gaplanner's importer
(:func:`gaplanner.documents.torch_import.from_exported_program`): parameters and
buffers are not planned, so the documents hold no weights, only the
activations' shapes, the operators in the exported order, views and in-place
chances. Each is written gzipped as ``<out>/<name>.json.gz``
(:func:`experiments.training.load_graph` reads it back) and a line per graph
goes to stdout. Needs ``torch`` and ``transformers``; reading the files
needs neither.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.training import GRAPHS, graph_path
from gaplanner.documents.schema import Document, parse_document
from gaplanner.documents.writer import document_data, document_text


@dataclass(frozen=True)
class GraphSpec:
    """One graph of the set: the model's builder, and whether its training graph is exported."""

    name: str
    build: str  # a function of experiments.training.models
    training: bool
    what: str
    options: tuple[tuple[str, int], ...] = ()  # the builder's keyword arguments


SPECS: tuple[GraphSpec, ...] = (
    GraphSpec("resnet_train", "resnet", True, "ResNet-18 layout, widths 32-256, batch 8, 64x64, 100 classes"),
    GraphSpec("mobilenet_v2_train", "mobilenet_v2", True, "MobileNetV2 blocks at half width, batch 8, 64x64"),
    GraphSpec("unet_train", "unet", True, "U-Net, 4 levels (16-128 channels), batch 4, 64x64, 4 classes"),
    GraphSpec("gpt2_train", "gpt2", True, "GPT-2, 4 layers of width 128, batch 4 x 128 tokens, LM loss"),
    GraphSpec("bert_train", "bert", True, "BERT, 4 layers of width 128, batch 8 x 128 tokens, 4 labels"),
    GraphSpec("vit_train", "vit", True, "ViT, 4 layers of width 128, batch 8, 64x64 in 8x8 patches"),
    GraphSpec(
        "randwire_train", "randwire_training", True, "randomly wired net (3 x 24 nodes), batch 4, 32x32"
    ),
    GraphSpec("nasnet_infer", "nasnet", False, "six NASNet-style normal cells, batch 4, 64x64 (inference)"),
    GraphSpec(
        "randwire_infer", "randwire", False, "randomly wired net (3 x 24 nodes), batch 4, 64x64 (inference)"
    ),
    GraphSpec(
        "densenet_train", "densenet", True, "DenseNet-BC, 3 blocks of 4 layers, growth 12, batch 8, 32x32"
    ),
    GraphSpec(
        "xception_infer", "xception", False, "Xception's flows at its widths, batch 2, 128x128 (inference)"
    ),
    GraphSpec(
        "inception_infer", "inception", False, "six Inception-style blocks, batch 4, 64x64 (inference)"
    ),
)


def by_depth(document: Document) -> Document:
    """The operators in the order Keras runs a functional model: by depth from the inputs, then as given.

    The irregular inference nets stand for models users bring from Keras
    (NASNet, randomly wired nets), so their given order is Keras's, not the
    order the torch code happened to call the layers in.
    """
    ops = document.operators or []
    writer = {t: k for k, op in enumerate(ops) for t in op.outputs}
    position = {op.id: k for k, op in enumerate(ops)}
    depth: list[int] = []
    for op in ops:  # the exported order is topological: every producer has its depth already
        producers = [writer[t] for t in op.inputs if t in writer] + [position[a] for a in op.after]
        depth.append(1 + max((depth[k] for k in producers), default=-1))
    order = sorted(range(len(ops)), key=lambda k: (depth[k], k))
    data = document_data(document)
    data["operators"] = [data["operators"][k] for k in order]
    return parse_document(data)


def export(spec: GraphSpec) -> Any:
    """The spec's ExportedProgram: the joint forward + backward one for a training graph."""
    import torch
    from torch.export.experimental import _export_forward_backward

    from experiments.training import models

    build: Callable[..., tuple[Any, tuple[Any, ...]]] = getattr(models, spec.build)
    module, inputs = build(**dict(spec.options))
    program = torch.export.export(module, inputs)
    return _export_forward_backward(program) if spec.training else program


def make(spec: GraphSpec, out: Path) -> str:
    """Export, import and write one graph; its summary line."""
    from gaplanner.documents.torch_import import from_exported_program

    started = time.perf_counter()
    document = from_exported_program(export(spec), name=spec.name)
    if not spec.training:
        document = by_depth(document)
    text = document_text(document).encode()
    path = graph_path(spec.name, out)
    path.write_bytes(gzip.compress(text, mtime=0))
    seconds = time.perf_counter() - started
    return (
        f"{spec.name}: {len(document.operators or [])} operators, {len(document.tensors or [])} tensors, "
        f"{path.stat().st_size / 1024:.0f} KB gzipped, {seconds:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=GRAPHS)
    parser.add_argument("--only", nargs="+", choices=[s.name for s in SPECS])
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore")  # transformers' and torch's deprecation notices, per model
    failed = 0
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        try:
            print(make(spec, args.out), flush=True)
        except Exception as exc:  # one model failing to export must not stop the others
            failed += 1
            print(f"{spec.name}: FAILED: {type(exc).__name__}: {str(exc).splitlines()[0]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
