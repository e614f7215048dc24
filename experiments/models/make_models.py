"""Build the real-model set: Hugging Face models from their configuration objects, exported to ONNX, stripped.

    python -m experiments.models.make_models [--out experiments/models/onnx] [--only bert gpt2]
        [--exporter dynamo|torchscript|both]

Every model is built from a ``transformers`` configuration object with random
weights: nothing is downloaded (``from_pretrained`` is never called). Inputs
have fixed shapes (batch 1, 128 tokens for text, 224x224 images). Each export
is then stripped so that only what memory planning needs is left:

- every initializer keeps its name, dims and data type but loses its data,
  except tensors under 1 KB (shape inference and constant folding read
  scalars and small vectors);
- large ``Constant`` node values are emptied the same way;
- gaplanner's importer must make the same graph document of the stripped
  file as of the full export (or fail on both with the same error), else the
  model is reported as failed and not written;
- the exporter's metadata is dropped (doc strings, metadata properties, which
  record source file paths of the machine that exported).

Files are written as ``<out>/<name>.onnx`` (dynamo exporter) and
``<out>/<name>.ts.onnx`` (TorchScript exporter, opset 17). A summary of what
exported and how large each file is goes to stdout. Needs ``torch``,
``transformers`` and ``onnxscript`` (the dynamo exporter); the stripped files
need only ``onnx``.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "onnx"
#: Tensors up to this many bytes keep their data: shape inference and the importer's constant
#: folding read scalars and small vectors (shapes, and the float arithmetic some exports do on them).
KEEP_BYTES = 1024
TEXT_LENGTH = 128
IMAGE_SIZE = 224
TEXT_INPUTS = ("input_ids", "attention_mask")


@dataclass(frozen=True)
class ModelSpec:
    """One model of the set: how to build it and its example inputs."""

    name: str
    build: Callable[[], tuple[Any, tuple[Any, ...], list[str], list[str]]]
    what: str


def _text_inputs(vocab: int = 1000) -> tuple[Any, Any]:
    import torch

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (1, TEXT_LENGTH), generator=generator)
    return ids, torch.ones(1, TEXT_LENGTH, dtype=torch.int64)


def _image(size: int = IMAGE_SIZE, channels: int = 3) -> Any:
    import torch

    return torch.randn(1, channels, size, size, generator=torch.Generator().manual_seed(0))


class _Outputs:
    """Wraps a transformers model so that it returns a plain tuple of the named output fields."""

    @staticmethod
    def wrap(
        model: Any, fields: list[str], hidden_layer: int | None = None, inputs: tuple[str, ...] = ()
    ) -> Any:
        import torch

        class Wrapper(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = model

            def forward(self, *args: Any) -> tuple[Any, ...]:
                named = dict(zip(inputs or TEXT_INPUTS, args, strict=False))
                out = self.inner(**named, output_hidden_states=hidden_layer is not None, return_dict=True)
                values = [out[f] for f in fields]
                if hidden_layer is not None:
                    values.append(out.hidden_states[hidden_layer])
                return tuple(values)

        return Wrapper().eval()


def _bert() -> tuple[Any, ...]:
    from transformers import BertConfig, BertModel

    model = _Outputs.wrap(BertModel(BertConfig()), ["last_hidden_state", "pooler_output"])
    return model, _text_inputs(), ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"]


def _bert_early_output() -> tuple[Any, ...]:
    from transformers import BertConfig, BertModel

    model = _Outputs.wrap(BertModel(BertConfig()), ["last_hidden_state", "pooler_output"], hidden_layer=2)
    names = ["last_hidden_state", "pooler_output", "hidden_state_2"]
    return model, _text_inputs(), ["input_ids", "attention_mask"], names


def _distilbert() -> tuple[Any, ...]:
    from transformers import DistilBertConfig, DistilBertModel

    model = _Outputs.wrap(DistilBertModel(DistilBertConfig()), ["last_hidden_state"])
    return model, _text_inputs(), ["input_ids", "attention_mask"], ["last_hidden_state"]


def _roberta() -> tuple[Any, ...]:
    from transformers import RobertaConfig, RobertaModel

    model = _Outputs.wrap(RobertaModel(RobertaConfig()), ["last_hidden_state", "pooler_output"])
    return model, _text_inputs(), ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"]


def _gpt2() -> tuple[Any, ...]:
    from transformers import GPT2Config, GPT2Model

    model = _Outputs.wrap(GPT2Model(GPT2Config(use_cache=False)), ["last_hidden_state"])
    return model, _text_inputs(), ["input_ids", "attention_mask"], ["last_hidden_state"]


def _t5_encoder() -> tuple[Any, ...]:
    from transformers import T5Config, T5EncoderModel

    model = _Outputs.wrap(T5EncoderModel(T5Config(use_cache=False)), ["last_hidden_state"])
    return model, _text_inputs(), ["input_ids", "attention_mask"], ["last_hidden_state"]


def _llama_small() -> tuple[Any, ...]:
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        vocab_size=32000,
        use_cache=False,
    )
    model = _Outputs.wrap(LlamaModel(config), ["last_hidden_state"])
    return model, _text_inputs(), ["input_ids", "attention_mask"], ["last_hidden_state"]


def _whisper_encoder() -> tuple[Any, ...]:
    import torch
    from transformers import WhisperConfig, WhisperModel

    config = WhisperConfig()  # the tiny model's dimensions: 4 layers, width 384
    encoder = WhisperModel(config).get_encoder()
    model = _Outputs.wrap(encoder, ["last_hidden_state"], inputs=("input_features",))
    frames = 2 * config.max_source_positions
    features = torch.randn(1, config.num_mel_bins, frames, generator=torch.Generator().manual_seed(0))
    return model, (features,), ["input_features"], ["last_hidden_state"]


def _image_model(config_name: str, model_name: str, fields: list[str]) -> Callable[[], tuple[Any, ...]]:
    def build() -> tuple[Any, ...]:
        import transformers

        config = getattr(transformers, config_name)()
        model = _Outputs.wrap(getattr(transformers, model_name)(config), fields, inputs=("pixel_values",))
        return model, (_image(getattr(config, "image_size", IMAGE_SIZE)),), ["pixel_values"], fields

    return build


POOLED = ["last_hidden_state", "pooler_output"]
SPECS: tuple[ModelSpec, ...] = (
    ModelSpec("bert", _bert, "BertModel(BertConfig()): BERT-base, 128 tokens"),
    ModelSpec(
        "bert_early_output",
        _bert_early_output,
        "BERT-base that also returns layer 2's hidden state (outputs written at different times)",
    ),
    ModelSpec("distilbert", _distilbert, "DistilBertModel(DistilBertConfig()), 128 tokens"),
    ModelSpec("roberta", _roberta, "RobertaModel(RobertaConfig()), 128 tokens"),
    ModelSpec("gpt2", _gpt2, "GPT2Model(GPT2Config()): GPT-2 small, 128 tokens, no cache"),
    ModelSpec("t5_encoder", _t5_encoder, "T5EncoderModel(T5Config()): T5-small encoder, 128 tokens"),
    ModelSpec("llama_small", _llama_small, "LlamaModel, 4 layers of width 512 with grouped KV heads"),
    ModelSpec("whisper_encoder", _whisper_encoder, "Whisper encoder, WhisperConfig() (tiny), 3000 frames"),
    ModelSpec("vit", _image_model("ViTConfig", "ViTModel", POOLED), "ViTModel(ViTConfig()): ViT-B/16"),
    ModelSpec("deit", _image_model("DeiTConfig", "DeiTModel", POOLED), "DeiTModel(DeiTConfig())"),
    ModelSpec("swin", _image_model("SwinConfig", "SwinModel", POOLED), "SwinModel(SwinConfig()): Swin-T"),
    ModelSpec(
        "convnext", _image_model("ConvNextConfig", "ConvNextModel", POOLED), "ConvNextModel: ConvNeXt-T"
    ),
    ModelSpec("resnet50", _image_model("ResNetConfig", "ResNetModel", POOLED), "ResNetModel(ResNetConfig())"),
    ModelSpec(
        "mobilevit",
        _image_model("MobileViTConfig", "MobileViTModel", POOLED),
        "MobileViTModel(MobileViTConfig()), 256x256",
    ),
    ModelSpec(
        "mobilenet_v2",
        _image_model("MobileNetV2Config", "MobileNetV2Model", POOLED),
        "MobileNetV2Model(MobileNetV2Config())",
    ),
    ModelSpec(
        "efficientnet",
        _image_model("EfficientNetConfig", "EfficientNetModel", POOLED),
        "EfficientNetModel(EfficientNetConfig()): B7 dimensions at 600x600",
    ),
    ModelSpec("regnet", _image_model("RegNetConfig", "RegNetModel", POOLED), "RegNetModel(RegNetConfig())"),
    ModelSpec(
        "segformer",
        _image_model("SegformerConfig", "SegformerModel", ["last_hidden_state"]),
        "SegformerModel(SegformerConfig()): MiT-b0 encoder, 512x512",
    ),
)


def _export(spec: ModelSpec, dynamo: bool) -> Any:
    """The exported ``ModelProto`` (weights included)."""
    import onnx
    import torch

    model, inputs, input_names, output_names = spec.build()
    buffer = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            program = torch.onnx.export(
                model, inputs, dynamo=True, input_names=input_names, output_names=output_names, verbose=False
            )
            program.optimize()
            return program.model_proto
        torch.onnx.export(
            model,
            inputs,
            buffer,
            dynamo=False,
            opset_version=17,
            input_names=input_names,
            output_names=output_names,
        )
    return onnx.load_from_string(buffer.getvalue())


def _strip_tensor(onnx: Any, tensor: Any) -> None:
    """Empty a tensor's data, keeping its name, dims and type (small tensors stay whole)."""
    if len(tensor.SerializeToString()) <= KEEP_BYTES:
        tensor.doc_string = ""
        return
    kept = onnx.TensorProto(name=tensor.name, data_type=tensor.data_type, dims=list(tensor.dims))
    tensor.CopyFrom(kept)


def _strip_graph(onnx: Any, graph: Any) -> None:
    graph.doc_string = ""
    del graph.metadata_props[:]
    for tensor in graph.initializer:
        _strip_tensor(onnx, tensor)
    for value in [*graph.input, *graph.output, *graph.value_info]:
        value.doc_string = ""
        del value.metadata_props[:]
    for node in graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
        for attr in node.attribute:
            attr.doc_string = ""
            if attr.HasField("t"):
                _strip_tensor(onnx, attr.t)
            for tensor in attr.tensors:
                _strip_tensor(onnx, tensor)
            if attr.HasField("g"):
                _strip_graph(onnx, attr.g)
            for sub in attr.graphs:
                _strip_graph(onnx, sub)


def strip(model: Any) -> Any:
    """``model`` without weight data or exporter metadata (modified in place and returned)."""
    import onnx

    model.doc_string = ""
    del model.metadata_props[:]
    model.producer_version = ""
    _strip_graph(onnx, model.graph)
    for function in model.functions:
        function.doc_string = ""
        del function.metadata_props[:]
        for node in function.node:
            node.doc_string = ""
            del node.metadata_props[:]
    return model


def _planning_document(model: Any) -> dict[str, Any] | str:
    """What gaplanner's importer makes of ``model``: the document's data, or its one-line error."""
    from gaplanner.documents.onnx_import import import_onnx
    from gaplanner.errors import InputError

    try:
        return import_onnx(model).model_dump(exclude={"name"})
    except InputError as exc:
        return str(exc)


def make(spec: ModelSpec, out: Path, dynamo: bool) -> tuple[Path, str]:
    """Export one model, strip it, check it plans as the full export does, write it.

    Returns the file and what the importer made of it ("imports" or its error).
    """
    import onnx

    full = _export(spec, dynamo)
    model = strip(onnx.load_from_string(full.SerializeToString()))
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    before, after = _planning_document(full), _planning_document(model)
    if before != after:
        raise ValueError("the stripped file imports differently from the full export")
    path = out / f"{spec.name}{'' if dynamo else '.ts'}.onnx"
    onnx.save(model, str(path))
    return path, "imports" if isinstance(after, dict) else f"does not import: {after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="+", help="model names (default: all)")
    parser.add_argument("--exporter", choices=["dynamo", "torchscript", "both"], default="both")
    args = parser.parse_args(argv)
    known = {spec.name: spec for spec in SPECS}
    unknown = [name for name in args.only or [] if name not in known]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; known: {', '.join(known)}")
    args.out.mkdir(parents=True, exist_ok=True)
    exporters = {"dynamo": [True], "torchscript": [False], "both": [True, False]}[args.exporter]
    for spec in [known[n] for n in args.only] if args.only else SPECS:
        for dynamo in exporters:
            label = "dynamo" if dynamo else "torchscript"
            started = time.perf_counter()
            try:
                path, imported = make(spec, args.out, dynamo)
            except Exception as exc:  # record and go on: one model's export failure is a finding
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                print(f"{spec.name}\t{label}\tFAILED\t{type(exc).__name__}: {first}", flush=True)
                continue
            kib = path.stat().st_size / 1024
            seconds = time.perf_counter() - started
            print(f"{spec.name}\t{label}\t{kib:.0f} KiB\t{seconds:.0f} s\t{imported[:160]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
