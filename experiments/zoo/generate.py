"""Generate the model zoo: graph JSON for six CNNs, from Keras model definitions.

    pip install -e '.[zoo-build]'
    KERAS_BACKEND=numpy python -m experiments.zoo.generate        # writes gaplanner/documents/zoo/*.json

ResNet50, MobileNetV1, MobileNetV2, InceptionV3 and DenseNet121 come from
``keras.applications`` (``weights=None``: nothing is downloaded); GoogLeNet
(Inception v1) is not there, so :func:`googlenet` builds it from Table 1 of
Szegedy et al., "Going deeper with convolutions" (2014).

Conventions (those of ``benchmarks/zoo`` in the shared benchmark folder):

- batch 1, each tensor's dtype from Keras (float32 here);
- operators in the order Keras itself runs the functional graph
  (``Function._run_through_graph``: node depth descending, then
  ``_nodes_by_depth`` order), checked against the executor; ``InputLayer`` is
  not an operator; non-layer operations (``x + 1``) are operators;
- one tensor per operator output plus one per model input; views (Reshape,
  Flatten, Dropout) keep their own tensor; weights are not tensors;
- every operator on core 0 (``zoo:NAME@N`` splits them over N cores).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "numpy")

import keras
from keras import layers

from gaplanner.documents.writer import document_text

OUT = Path(__file__).resolve().parents[2] / "gaplanner" / "documents" / "zoo"
BATCH = 1


# --- GoogLeNet (Inception v1), Szegedy et al. 2014, Table 1 ---------------------------------------

#: name: (#1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool proj)
INCEPTION_V1 = {
    "3a": (64, 96, 128, 16, 32, 32),
    "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64),
    "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128),
    "5b": (384, 192, 384, 48, 128, 128),
}


def _conv(x: Any, filters: int, kernel: int, name: str, strides: int = 1) -> Any:
    # "All the convolutions, including those inside the Inception modules, use rectified linear activation."
    return layers.Conv2D(filters, kernel, strides=strides, padding="same", activation="relu", name=name)(x)


def _inception(x: Any, name: str) -> Any:
    n1, r3, n3, r5, n5, pool_proj = INCEPTION_V1[name]
    p = f"inception_{name}"
    b1 = _conv(x, n1, 1, f"{p}_1x1")
    b3 = _conv(_conv(x, r3, 1, f"{p}_3x3_reduce"), n3, 3, f"{p}_3x3")
    b5 = _conv(_conv(x, r5, 1, f"{p}_5x5_reduce"), n5, 5, f"{p}_5x5")
    bp = layers.MaxPooling2D(3, strides=1, padding="same", name=f"{p}_pool")(x)
    bp = _conv(bp, pool_proj, 1, f"{p}_pool_proj")
    return layers.Concatenate(axis=-1, name=f"{p}_output")([b1, b3, b5, bp])


def googlenet() -> keras.Model:
    """GoogLeNet at inference: Table 1 of the paper (no auxiliary classifiers, which only train).

    Table 1 has no local response normalisation rows, so none is built here.
    """
    inputs = keras.Input((224, 224, 3), name="input")
    x = _conv(inputs, 64, 7, "conv1_7x7_s2", strides=2)  # 112x112x64
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool1_3x3_s2")(x)  # 56x56x64
    x = _conv(x, 64, 1, "conv2_3x3_reduce")
    x = _conv(x, 192, 3, "conv2_3x3")  # 56x56x192
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool2_3x3_s2")(x)  # 28x28x192
    x = _inception(x, "3a")  # 28x28x256
    x = _inception(x, "3b")  # 28x28x480
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool3_3x3_s2")(x)  # 14x14x480
    for name in ("4a", "4b", "4c", "4d", "4e"):
        x = _inception(x, name)  # ... 14x14x832
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool4_3x3_s2")(x)  # 7x7x832
    x = _inception(x, "5a")
    x = _inception(x, "5b")  # 7x7x1024
    x = layers.AveragePooling2D(7, strides=1, name="pool5_7x7_s1")(x)  # 1x1x1024
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dropout(0.4, name="dropout")(x)
    outputs = layers.Dense(1000, activation="softmax", name="loss3_classifier")(x)
    return keras.Model(inputs, outputs, name="googlenet")


#: zoo name -> builder of the Keras model (weights=None: no download).
MODELS: dict[str, Callable[[], keras.Model]] = {
    "resnet50": lambda: keras.applications.ResNet50(weights=None),
    "mobilenetv1": lambda: keras.applications.MobileNet(weights=None),
    "mobilenetv2": lambda: keras.applications.MobileNetV2(weights=None),
    "inceptionv3": lambda: keras.applications.InceptionV3(weights=None),
    "googlenet": googlenet,
    "densenet121": lambda: keras.applications.DenseNet121(weights=None),
}


# --- from a Keras functional model to a graph document -------------------------------------------


def _execution_nodes(model: keras.Model) -> list[Any]:
    """The operation nodes in the order ``Function._run_through_graph`` runs them."""
    nodes = []
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            if not node.operation or node.is_input:
                continue
            if isinstance(node.operation, keras.Model):
                raise SystemExit(f"{model.name}: nested model {node.operation.name!r} is not supported")
            nodes.append(node)
    return nodes


def _executor_order(model: keras.Model) -> list[str]:
    """Operation names in the order Keras's own executor calls them (symbolically)."""
    called: list[str] = []

    def record(op: Any, *args: Any, **kwargs: Any) -> list[None]:
        called.append(op.name)
        return [None] * len(keras.tree.flatten(op.output))

    model._run_through_graph([None] * len(model.inputs), call_fn=record)
    return called


def _shape(tensor: Any) -> list[int]:
    dims = [BATCH if d is None and i == 0 else d for i, d in enumerate(tensor.shape)]
    if any(d is None for d in dims):
        raise SystemExit(f"tensor {tensor.name!r} has an unknown dimension: {tensor.shape}")
    return [int(d) for d in dims]


def graph_document(model: keras.Model, name: str) -> dict[str, Any]:
    """A gaplanner graph document for a Keras functional model (batch 1, every operator on core 0)."""
    nodes = _execution_nodes(model)
    order = [node.operation.name for node in nodes]
    if order != _executor_order(model):
        raise SystemExit(f"{name}: node order differs from the Keras executor's")
    tensor_id: dict[int, str] = {}
    tensors: list[dict[str, Any]] = []

    def add(tensor: Any, tid: str) -> None:
        if tid in tensor_id.values():
            raise SystemExit(f"{name}: duplicate tensor id {tid!r}")
        tensor_id[id(tensor)] = tid
        tensors.append({"id": tid, "shape": _shape(tensor), "dtype": str(tensor.dtype)})

    for tensor in model.inputs:  # named after its InputLayer
        add(tensor, tensor._keras_history.operation.name)
    operators = []
    for node in nodes:
        op_name = node.operation.name
        outputs = list(node.outputs)
        for m, tensor in enumerate(outputs):
            add(tensor, op_name if len(outputs) == 1 else f"{op_name}:{m}")
        operators.append(
            {
                "id": op_name,
                "inputs": [tensor_id[id(t)] for t in node.input_tensors],
                "outputs": [tensor_id[id(t)] for t in outputs],
                "core": 0,
            }
        )
    return {"name": name, "tensors": tensors, "operators": operators}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help=f"models among {', '.join(MODELS)} (default: all)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    args = parser.parse_args(argv)
    if unknown := [n for n in args.names if n not in MODELS]:
        parser.error(f"unknown model {unknown[0]!r}; known: {', '.join(MODELS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or MODELS:
        doc = graph_document(MODELS[name](), name)
        path = args.out / f"{name}.json"
        path.write_text(document_text(doc), encoding="utf-8")
        print(f"{path}: {len(doc['operators'])} operators, {len(doc['tensors'])} tensors", file=sys.stderr)
    print(f"keras {keras.__version__}, backend {keras.backend.backend()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
