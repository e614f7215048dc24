"""A prefill and a decode model that share a KV cache, exported to ONNX for pooling.

A small GPT-style decoder written here (random weights; nothing is
downloaded): ``layers`` pre-norm blocks of attention and a feed-forward
network, ``hidden`` wide, ``heads`` heads. *Prefill* reads a prompt of
``tokens`` embeddings and returns the last hidden state and each layer's keys
and values (``past_L_key``, ``past_L_value``). *Decode* reads one token's
embedding and those same tensors, by the same names, and returns the hidden
state and the keys and values extended by that token (``present_L_...``), as
ONNX Runtime's GPT-2 with past does. Pooled one after another with the
``past_*`` tensors shared, the cache is one buffer written by prefill and read
by decode. Needs ``torch`` and ``onnx`` (the TorchScript exporter).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any


def _modules(layers: int, hidden: int, heads: int) -> tuple[Any, Any]:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.up, self.down = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
            self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)

        def forward(self, x: Any, past_k: Any = None, past_v: Any = None) -> tuple[Any, Any, Any]:
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(d, -1)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            if past_k is not None:
                k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
            attention = torch.softmax(q @ k.transpose(-1, -2) / (d // heads) ** 0.5, -1) @ v
            x = x + self.out(attention.transpose(1, 2).reshape(b, t, d))
            return x + self.down(torch.relu(self.up(self.norm2(x)))), k, v

    class Prefill(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(layers))

        def forward(self, x: Any) -> tuple[Any, ...]:
            cache = []
            for block in self.blocks:
                x, k, v = block(x)
                cache += [k, v]
            return (x, *cache)

    class Decode(Prefill):
        def forward(self, x: Any, *past: Any) -> tuple[Any, ...]:  # type: ignore[override]
            cache = []
            for i, block in enumerate(self.blocks):
                x, k, v = block(x, past[2 * i], past[2 * i + 1])
                cache += [k, v]
            return (x, *cache)

    prefill = Prefill().eval()
    decode = Decode().eval()
    decode.load_state_dict(prefill.state_dict())
    return prefill, decode


def export_pair(
    folder: Path, layers: int = 2, hidden: int = 256, heads: int = 4, tokens: int = 128
) -> tuple[Path, Path, list[str]]:
    """Write ``prefill.onnx`` and ``decode.onnx`` into ``folder``; their paths and the shared tensor names."""
    import torch

    prefill, decode = _modules(layers, hidden, heads)
    shared = [f"past_{i}_{kind}" for i in range(layers) for kind in ("key", "value")]
    present = [name.replace("past_", "present_") for name in shared]
    past = tuple(torch.randn(1, heads, tokens, hidden // heads) for _ in shared)
    paths = folder / "prefill.onnx", folder / "decode.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            prefill, (torch.randn(1, tokens, hidden),), str(paths[0]), input_names=["x"],
            output_names=["hidden", *shared], dynamo=False,
        )  # fmt: skip
        torch.onnx.export(
            decode, (torch.randn(1, 1, hidden), *past), str(paths[1]), input_names=["x", *shared],
            output_names=["hidden", *present], dynamo=False,
        )  # fmt: skip
    return paths[0], paths[1], shared
