"""Files sent as they are (graph JSON, MiniMalloc CSV, ONNX) turned into the documents jobs take.

``POST /v1/inputs`` reads one file through the library's loader
(:func:`gaplanner.problem.loading.load_problem`) and answers with the graph or buffer-list
document ``POST /v1/plans`` and ``POST /v1/compare`` accept, so a job made
from an upload is checked, stored and planned like any other.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from gaplanner.documents.zoo import zoo_names
from gaplanner.errors import InputError
from gaplanner.problem.convert import convert
from gaplanner.problem.loading import example_names, load_problem
from gaplanner.problem.problem import Problem
from service.config import ServiceSettings
from service.errors import ApiError

#: What an upload's file name may end in.
SUFFIXES = (".json", ".csv", ".onnx")


def _suffix(filename: str) -> str:
    suffix = Path(filename).suffix.lower()
    if suffix not in SUFFIXES:
        raise ApiError(415, f"{filename!r}: expected a .json, .csv or .onnx file name", "filename")
    return suffix


def parse_dims(texts: list[str]) -> dict[str, int]:
    """``dim`` query values, ``NAME=N``, as ``{NAME: N}``."""
    dims = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise ApiError(422, f"expected NAME=N with N a positive integer, got {text!r}", "dim")
        dims[name.strip()] = int(value)
    return dims


def _load(filename: str, body: bytes, suffix: str, shapes: dict[str, Any]) -> Problem:
    if suffix == ".onnx":  # the ONNX reader takes a path: the bytes go to a private temporary file
        with tempfile.TemporaryDirectory(prefix="gaplanner-upload-") as folder:
            path = Path(folder) / ("upload" + suffix)
            path.write_bytes(body)
            return load_problem(path, **shapes)
    if shapes["batch"] is not None or shapes["dims"]:
        field = "batch" if shapes["batch"] is not None else "dim"
        raise ApiError(422, f"applies to ONNX models only; {filename}'s sizes are fixed", field)
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{filename} is not UTF-8 text (byte {exc.start})", "input") from None
    return load_problem((filename, text))


def _document(problem: Problem, filename: str, body: bytes, suffix: str) -> dict[str, Any]:
    """The document a job stores: the upload's own JSON, an ONNX model's graph, a CSV's buffers."""
    if suffix == ".json":
        data = json.loads(body)
        if isinstance(data, dict) and "models" in data:
            raise ApiError(422, "model pools are planned with gaplanner plan, not uploaded", "file")
        return data
    if problem.clocks is not None:
        raise ApiError(
            422, "vector-clock CSVs are planned with gaplanner plan FILE; the service takes intervals", "file"
        )
    document = json.loads(convert(problem, "graph" if suffix == ".onnx" else "buffers"))
    document["name"] = Path(filename).stem or document.get("name") or "upload"
    return document


def read_upload(
    filename: str,
    body: bytes,
    settings: ServiceSettings,
    batch: int | None = None,
    dims: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The upload's input: its name, blocks and lower bound, and the document to submit as ``graph``.

    ``batch`` and ``dims``: an ONNX model's symbolic dimensions (as ``--batch`` and ``--dim``)."""
    suffix = _suffix(filename)
    if not body:
        raise ApiError(422, "the file is empty", "file")
    try:
        problem = _load(filename, body, suffix, {"batch": batch, "dims": dims or {}})
    except InputError as exc:
        # The library names the CLI's flags; here they are this route's query parameters.
        reason = exc.reason.replace("--batch N", "batch=N").replace("--dim ", "dim=")
        field = {"batch": "batch", "dims": "dim", None: "file", "input": "file"}.get(exc.field)
        raise ApiError(422, reason, field or f"file.{exc.field}") from None
    except RecursionError:
        raise ApiError(422, "the file is nested too deeply to read", "file") from None
    if problem.n > settings.max_blocks:
        raise ApiError(
            413, f"{problem.n} blocks; this server plans at most {settings.max_blocks} per job", "file"
        )
    return {
        "name": Path(filename).stem or problem.name,
        "blocks": problem.n,
        "lower_bound": problem.lower_bound,
        "graph": _document(problem, filename, body, suffix),
    }


def bundled_inputs() -> dict[str, list[str]]:
    """The names ``graph`` accepts besides documents: ``zoo:NAME`` and ``example:NAME``."""
    return {
        "zoo": [f"zoo:{name}" for name in zoo_names()],
        "examples": [f"example:{name}" for name in example_names()],
    }
