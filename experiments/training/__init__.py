"""The training-graph set: joint forward + backward graphs and irregular inference graphs, as documents.

The files in ``graphs/`` are made by :mod:`experiments.training.make_graphs`
(see its README); reading them needs neither torch nor transformers.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from gaplanner.documents.schema import Document, parse_document

GRAPHS = Path(__file__).resolve().parent / "graphs"
SUFFIX = ".json.gz"
#: The graphs of the first measurements: a mean over them stays comparable as the set grows.
FIRST_SET = (
    "bert_train", "gpt2_train", "mobilenet_v2_train", "nasnet_infer", "randwire_infer",
    "randwire_train", "resnet_train", "unet_train", "vit_train",
)  # fmt: skip


def graph_path(name: str, folder: Path = GRAPHS) -> Path:
    return folder / f"{name}{SUFFIX}"


def graph_names(folder: Path = GRAPHS) -> list[str]:
    """The graphs in ``folder``, by name."""
    return sorted(p.name.removesuffix(SUFFIX) for p in folder.glob(f"*{SUFFIX}"))


def load_graph(name: str, folder: Path = GRAPHS) -> Document:
    """One graph of the set as a validated document."""
    return parse_document(json.loads(gzip.decompress(graph_path(name, folder).read_bytes())))
