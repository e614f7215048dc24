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


def graph_path(name: str, folder: Path = GRAPHS) -> Path:
    return folder / f"{name}{SUFFIX}"


def graph_names(folder: Path = GRAPHS) -> list[str]:
    """The graphs in ``folder``, by name."""
    return sorted(p.name.removesuffix(SUFFIX) for p in folder.glob(f"*{SUFFIX}"))


def load_graph(name: str, folder: Path = GRAPHS) -> Document:
    """One graph of the set as a validated document."""
    return parse_document(json.loads(gzip.decompress(graph_path(name, folder).read_bytes())))
