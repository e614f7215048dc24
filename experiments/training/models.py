"""The models of the training-graph set, built locally with random weights (nothing is downloaded).

Each builder returns ``(module, example inputs)``. A training model's module
returns a one-element tuple holding its scalar loss, which is what
``torch.export.experimental._export_forward_backward`` differentiates. The CNNs
are written here (torchvision is not a dependency); the transformers come from
``transformers`` configuration objects with dropout off (a dropout's random
mask would be an extra saved tensor that depends on the RNG, not the model).
"""

from __future__ import annotations

import random
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F


def _seeded() -> torch.Generator:
    torch.manual_seed(0)
    return torch.Generator().manual_seed(0)


def _conv_bn(cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)
    )


class _Classifier(nn.Module):
    """A feature network, global pooling, a linear head and cross-entropy against the labels."""

    def __init__(self, features: nn.Module, width: int, classes: int) -> None:
        super().__init__()
        self.features, self.head = features, nn.Linear(width, classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor]:
        pooled = self.features(images).mean(dim=(2, 3))
        return (F.cross_entropy(self.head(pooled), labels),)


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a, self.b = _conv_bn(cin, cout, 3, stride), _conv_bn(cout, cout)
        self.skip = _conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.b(F.relu(self.a(x))) + self.skip(x))


def resnet(batch: int = 8, size: int = 64) -> tuple[nn.Module, tuple[Any, ...]]:
    """ResNet-18's layout (four stages of two basic blocks), widths 32-256."""
    generator = _seeded()
    layers: list[nn.Module] = [_conv_bn(3, 32, 3), nn.ReLU()]
    cin = 32
    for k, width in enumerate((32, 64, 128, 256)):
        for j in range(2):
            layers.append(_BasicBlock(cin, width, 2 if k > 0 and j == 0 else 1))
            cin = width
    model = _Classifier(nn.Sequential(*layers), cin, 100)
    return model.train(), _image_batch(batch, size, 100, generator)


class _InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [] if expand == 1 else [_conv_bn(cin, hidden, 1), nn.ReLU6()]
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), nn.ReLU6(), _conv_bn(hidden, cout, 1)]
        self.body, self.residual = nn.Sequential(*layers), stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


MOBILENET_STAGES = ((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 3, 2), (6, 32, 4, 2), (6, 48, 3, 1), (6, 80, 3, 2))


def mobilenet_v2(batch: int = 8, size: int = 64, stages: int = 6) -> tuple[nn.Module, tuple[Any, ...]]:
    """MobileNetV2's inverted residual blocks at half width (its first ``stages`` stages)."""
    generator = _seeded()
    layers: list[nn.Module] = [_conv_bn(3, 16, 3, 2), nn.ReLU6()]
    cin = 16
    for expand, cout, repeats, stride in MOBILENET_STAGES[:stages]:
        for j in range(repeats):
            layers.append(_InvertedResidual(cin, cout, stride if j == 0 else 1, expand))
            cin = cout
    layers += [_conv_bn(cin, 640, 1), nn.ReLU6()]
    model = _Classifier(nn.Sequential(*layers), 640, 100)
    return model.train(), _image_batch(batch, size, 100, generator)


class _UNet(nn.Module):
    """Four levels down, three up, skip connections concatenated, a per-pixel cross-entropy."""

    def __init__(self, widths: tuple[int, ...] = (16, 32, 64, 128), classes: int = 4) -> None:
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for width in widths:
            self.down.append(
                nn.Sequential(_conv_bn(cin, width), nn.ReLU(), _conv_bn(width, width), nn.ReLU())
            )
            cin = width
        self.up, self.merge = nn.ModuleList(), nn.ModuleList()
        for width in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose2d(cin, width, 2, 2))
            self.merge.append(
                nn.Sequential(_conv_bn(2 * width, width), nn.ReLU(), _conv_bn(width, width), nn.ReLU())
            )
            cin = width
        self.head = nn.Conv2d(cin, classes, 1)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor]:
        skips, x = [], images
        for k, level in enumerate(self.down):
            x = level(x if k == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1]), strict=True):
            x = merge(torch.cat([up(x), skip], dim=1))
        return (F.cross_entropy(self.head(x), labels),)


def unet(batch: int = 4, size: int = 64) -> tuple[nn.Module, tuple[Any, ...]]:
    generator = _seeded()
    images = torch.randn(batch, 3, size, size, generator=generator)
    labels = torch.randint(0, 4, (batch, size, size), generator=generator)
    return _UNet().train(), (images, labels)


def _image_batch(batch: int, size: int, classes: int, generator: torch.Generator) -> tuple[Any, ...]:
    images = torch.randn(batch, 3, size, size, generator=generator)
    return images, torch.randint(0, classes, (batch,), generator=generator)


class _Loss(nn.Module):
    """A transformers model called with keyword inputs, returning its loss alone."""

    def __init__(self, model: nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model(**dict(zip(self.names, args, strict=True))).loss,)


def _small(layers: int, width: int) -> dict[str, int]:
    return {
        "num_hidden_layers": layers,
        "hidden_size": width,
        "num_attention_heads": 4,
        "intermediate_size": 4 * width,
    }


_NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def _eager(config: Any) -> Any:
    # The SDPA path's reshape of a transposed attention output is not a view, which export rejects.
    config._attn_implementation = "eager"
    return config


def gpt2(
    batch: int = 4, tokens: int = 128, layers: int = 4, width: int = 128
) -> tuple[nn.Module, tuple[Any, ...]]:
    """A 4-layer GPT-2 of width 128, causal-LM loss; embeddings untied (export needs a gradient per
    parameter)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    generator = _seeded()
    config = GPT2Config(
        n_layer=layers, n_embd=width, n_head=4, n_positions=tokens, vocab_size=2000, use_cache=False,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=False,
    )  # fmt: skip
    ids = torch.randint(0, 2000, (batch, tokens), generator=generator)
    model = _Loss(GPT2LMHeadModel(_eager(config)), ("input_ids", "labels"))
    return model.train(), (ids, ids.clone())


def bert(
    batch: int = 8, tokens: int = 128, layers: int = 4, width: int = 128
) -> tuple[nn.Module, tuple[Any, ...]]:
    """A 4-layer BERT of width 128, sequence classification over 4 labels."""
    from transformers import BertConfig, BertForSequenceClassification

    generator = _seeded()
    config = BertConfig(vocab_size=2000, num_labels=4, **_small(layers, width), **_NO_DROPOUT)
    ids = torch.randint(0, 2000, (batch, tokens), generator=generator)
    labels = torch.randint(0, 4, (batch,), generator=generator)
    model = _Loss(BertForSequenceClassification(_eager(config)), ("input_ids", "labels"))
    return model.train(), (ids, labels)


def vit(
    batch: int = 8, size: int = 64, layers: int = 4, width: int = 128
) -> tuple[nn.Module, tuple[Any, ...]]:
    """A 4-layer ViT of width 128 on 64x64 images in 8x8 patches, 10 classes."""
    from transformers import ViTConfig, ViTForImageClassification

    generator = _seeded()
    config = ViTConfig(image_size=size, patch_size=8, num_labels=10, **_small(layers, width), **_NO_DROPOUT)
    images = torch.randn(batch, 3, size, size, generator=generator)
    labels = torch.randint(0, 10, (batch,), generator=generator)
    model = _Loss(ViTForImageClassification(_eager(config)), ("pixel_values", "labels"))
    return model.train(), (images, labels)


class _SeparableConv(nn.Sequential):
    def __init__(self, width: int, kernel: int) -> None:
        super().__init__(
            nn.ReLU(),
            nn.Conv2d(width, width, kernel, 1, kernel // 2, groups=width, bias=False),
            nn.Conv2d(width, width, 1, bias=False),
            nn.BatchNorm2d(width),
        )


class _NasCell(nn.Module):
    """A NASNet-style normal cell: five pairs of branches over the two previous cells' outputs, added."""

    PAIRS = ((0, 5, 1, 3), (0, 3, 0, 5), (1, 0, 0, 3), (1, 3, 1, 5), (0, 5, 2, 3))  # (input, kernel) x 2

    def __init__(self, width: int) -> None:
        super().__init__()
        self.project = nn.ModuleList([_conv_bn(width, width, 1) for _ in range(2)])
        self.branches = nn.ModuleList()
        for _, ka, _, kb in self.PAIRS:
            self.branches.append(nn.ModuleList([self._branch(width, ka), self._branch(width, kb)]))

    @staticmethod
    def _branch(width: int, kernel: int) -> nn.Module:
        return _SeparableConv(width, kernel) if kernel > 0 else nn.Identity()

    def forward(self, previous: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
        states = [self.project[0](previous), self.project[1](current)]
        for (a, _, b, _), (left, right) in zip(self.PAIRS, self.branches, strict=True):
            states.append(left(states[a]) + right(states[b]))
        return torch.cat(states[2:], dim=1)


class _NasNet(nn.Module):
    def __init__(self, width: int = 32, cells: int = 6) -> None:
        super().__init__()
        self.stem = _conv_bn(3, width, 3, 2)
        self.cells = nn.ModuleList([_NasCell(width) for _ in range(cells)])
        self.squeeze = nn.ModuleList([_conv_bn(5 * width, width, 1) for _ in range(cells)])
        self.head = nn.Linear(5 * width, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        previous = current = self.stem(images)
        wide = current
        for cell, squeeze in zip(self.cells, self.squeeze, strict=True):
            wide = cell(previous, current)
            previous, current = current, squeeze(wide)
        return self.head(wide.mean(dim=(2, 3)))


def nasnet(batch: int = 4, size: int = 64) -> tuple[nn.Module, tuple[Any, ...]]:
    """Six NASNet-style normal cells (inference)."""
    generator = _seeded()
    return _NasNet().eval(), (torch.randn(batch, 3, size, size, generator=generator),)


def _watts_strogatz(nodes: int, neighbours: int, rewire: float, seed: int) -> list[tuple[int, int]]:
    """A Watts-Strogatz small world, its edges pointed from the lower to the higher node (a DAG)."""
    rng = random.Random(seed)
    edges = {(i, (i + j) % nodes) for i in range(nodes) for j in range(1, neighbours // 2 + 1)}
    wired = set()
    for i, j in sorted(edges):
        if rng.random() < rewire:
            j = rng.choice(
                [k for k in range(nodes) if k != i and (i, k) not in wired and (k, i) not in wired]
            )
        wired.add((i, j))
    return sorted({(min(i, j), max(i, j)) for i, j in wired})


class _RandWire(nn.Module):
    """A randomly wired stage (RandWire-WS): each node sums its inputs, then ReLU, separable conv, BN."""

    def __init__(self, width: int, nodes: int, seed: int) -> None:
        super().__init__()
        self.edges = _watts_strogatz(nodes, 4, 0.75, seed)
        self.nodes = nn.ModuleList([_SeparableConv(width, 3) for _ in range(nodes)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values: list[torch.Tensor] = []
        for k, node in enumerate(self.nodes):
            inputs = [values[i] for i, j in self.edges if j == k] or [x]
            values.append(node(torch.stack(inputs).sum(dim=0) if len(inputs) > 1 else inputs[0]))
        sinks = [k for k in range(len(values)) if not any(i == k for i, _ in self.edges)]
        return torch.stack([values[k] for k in sinks]).mean(dim=0)


class _RandWireNet(nn.Module):
    def __init__(self, width: int = 32, nodes: int = 24) -> None:
        super().__init__()
        self.stem = _conv_bn(3, width, 3, 2)
        self.stages = nn.ModuleList([_RandWire(width, nodes, seed) for seed in range(3)])
        self.pool = nn.ModuleList([_conv_bn(width, width, 3, 2) for _ in range(2)])
        self.head = nn.Linear(width, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.stem(images)
        for k, stage in enumerate(self.stages):
            x = stage(x if k == 0 else self.pool[k - 1](x))
        return self.head(x.mean(dim=(2, 3)))


def randwire(batch: int = 4, size: int = 64) -> tuple[nn.Module, tuple[Any, ...]]:
    """Three randomly wired stages of 24 nodes (inference)."""
    generator = _seeded()
    return _RandWireNet().eval(), (torch.randn(batch, 3, size, size, generator=generator),)


class _Trained(nn.Module):
    """An inference network with a cross-entropy loss on top, for its training graph."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor]:
        return (F.cross_entropy(self.model(images), labels),)


def randwire_training(batch: int = 4, size: int = 32) -> tuple[nn.Module, tuple[Any, ...]]:
    """The randomly wired network's training graph."""
    generator = _seeded()
    model = _Trained(_RandWireNet()).train()
    return model, _image_batch(batch, size, 10, generator)


def _separable(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.ReLU(),
        nn.Conv2d(cin, cin, 3, 1, 1, groups=cin, bias=False),
        nn.Conv2d(cin, cout, 1, bias=False),
        nn.BatchNorm2d(cout),
    )


class _XceptionBlock(nn.Module):
    """Separable convolutions, then a strided max-pool and a strided 1x1 shortcut, or an identity one."""

    def __init__(self, cin: int, cout: int, repeats: int, stride: int) -> None:
        super().__init__()
        layers = [_separable(cin if k == 0 else cout, cout) for k in range(repeats)]
        self.body = nn.Sequential(*layers, *([nn.MaxPool2d(3, stride, 1)] if stride > 1 else []))
        self.skip = _conv_bn(cin, cout, 1, stride) if stride > 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) + self.skip(x)


def xception(batch: int = 2, size: int = 128) -> tuple[nn.Module, tuple[Any, ...]]:
    """Xception's entry, middle (eight blocks) and exit flows at its own widths (inference)."""
    generator = _seeded()
    blocks = (
        [(64, 128, 2, 2), (128, 256, 2, 2), (256, 728, 2, 2)] + [(728, 728, 3, 1)] * 8 + [(728, 1024, 2, 2)]
    )
    layers: list[nn.Module] = [_conv_bn(3, 32, 3, 2), nn.ReLU(), _conv_bn(32, 64), nn.ReLU()]
    layers += [_XceptionBlock(*spec) for spec in blocks]
    layers += [_separable(1024, 1536), _separable(1536, 2048), nn.ReLU()]
    head = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 10))
    return head.eval(), (torch.randn(batch, 3, size, size, generator=generator),)


class _InceptionBlock(nn.Module):
    """Four branches (1x1; 1x1 then 3x3; 1x1 then two 3x3; pooling then 1x1), concatenated."""

    def __init__(self, cin: int, width: int) -> None:
        super().__init__()
        self.one = _conv_bn(cin, width, 1)
        self.three = nn.Sequential(_conv_bn(cin, width, 1), nn.ReLU(), _conv_bn(width, width))
        self.five = nn.Sequential(
            _conv_bn(cin, width // 2, 1),
            nn.ReLU(),
            _conv_bn(width // 2, width),
            nn.ReLU(),
            _conv_bn(width, width),
        )
        self.pool = nn.Sequential(nn.AvgPool2d(3, 1, 1), _conv_bn(cin, width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(torch.cat([self.one(x), self.three(x), self.five(x), self.pool(x)], dim=1))


def inception(batch: int = 4, size: int = 64) -> tuple[nn.Module, tuple[Any, ...]]:
    """Six Inception-style blocks in two stages, a max-pool between (inference)."""
    generator = _seeded()
    layers: list[nn.Module] = [_conv_bn(3, 64, 3, 2), nn.ReLU()]
    for k in range(6):
        layers += [nn.MaxPool2d(3, 2, 1)] if k == 3 else []
        layers.append(_InceptionBlock(64 if k == 0 else 128, 32))
    head = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    return head.eval(), (torch.randn(batch, 3, size, size, generator=generator),)


class _DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * growth, 1, bias=False),
            nn.BatchNorm2d(4 * growth), nn.ReLU(), nn.Conv2d(4 * growth, growth, 3, 1, 1, bias=False),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.body(x)], dim=1)


def densenet(batch: int = 8, size: int = 32) -> tuple[nn.Module, tuple[Any, ...]]:
    """DenseNet-BC: three dense blocks of four layers, growth 12, transitions halving the channels."""
    generator = _seeded()
    width = 24
    layers: list[nn.Module] = [nn.Conv2d(3, width, 3, 1, 1, bias=False)]
    for block in range(3):
        for _ in range(4):
            layers.append(_DenseLayer(width, 12))
            width += 12
        if block < 2:
            layers += [nn.BatchNorm2d(width), nn.ReLU(), nn.Conv2d(width, width // 2, 1, bias=False)]
            layers.append(nn.AvgPool2d(2))
            width //= 2
    layers += [nn.BatchNorm2d(width), nn.ReLU()]
    model = _Classifier(nn.Sequential(*layers), width, 10)
    return model.train(), _image_batch(batch, size, 10, generator)
