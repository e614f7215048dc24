"""Reading inputs.

Inputs: graph / buffer-list JSON documents (see :mod:`gaplanner.documents.schema`),
MiniMalloc CSV files (``id,lower,upper,size``, half-open lifetimes; the legacy
``start,end`` columns with an inclusive ``end`` are read too), the bundled
examples as ``example:NAME`` and the model zoo as ``zoo:NAME`` or
``zoo:NAME@N`` (split over N cores, see :mod:`gaplanner.documents.zoo`).
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import FORBIDDEN_IN_IDS, Document, id_problem, parse_document
from gaplanner.documents.zoo import ZOO_PREFIX, zoo_document
from gaplanner.errors import InputError
from gaplanner.problem.problem import Problem, build_problem, problem_from_arrays, problem_from_clocks

EXAMPLE_PREFIX = "example:"


def example_names() -> list[str]:
    """Names of the bundled examples (``example:NAME``)."""
    folder = resources.files("gaplanner.documents") / "examples"
    return sorted(p.name.rsplit(".", 1)[0] for p in folder.iterdir() if p.name.endswith(".json"))


def _resolve(source: str | Path) -> Path:
    text = str(source)
    if text.startswith(EXAMPLE_PREFIX):
        name = text.removeprefix(EXAMPLE_PREFIX)
        if name not in example_names():
            raise InputError(f"unknown example {name!r}; known: {', '.join(example_names())}", "input")
        return Path(str(resources.files("gaplanner.documents") / "examples" / f"{name}.json"))
    path = Path(text)
    if path.is_dir():
        raise InputError(f"{text} is a directory; give a file (JSON, CSV, ONNX or .pt2)", "input")
    if not path.is_file():
        raise InputError(f"no such file: {text}", "input")
    return path


def without_bom(text: str) -> str:
    """``text`` without a leading UTF-8 byte-order mark (spreadsheets write one before a CSV's header)."""
    return text.removeprefix("\ufeff")


def _read_text(path: Path) -> str:
    """The file's text; a ``.gz`` file's decompressed (the training-graph set is stored so)."""
    try:  # utf-8-sig: a byte-order mark would otherwise become part of the first column's name
        if path.suffix.lower() != ".gz":
            return path.read_text(encoding="utf-8-sig")
        try:
            return gzip.decompress(path.read_bytes()).decode("utf-8-sig")
        except (OSError, EOFError) as exc:  # BadGzipFile is an OSError; a cut-off file an EOFError
            raise InputError(f"{path.name} is not a gzip file ({exc})", "input") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path.name} is not UTF-8 text (byte {exc.start})", "input") from None


def _plain_name(path: Path) -> str:
    """The file's name without a ``.gz`` suffix: what decides how its text is read."""
    return path.name[:-3] if path.name.lower().endswith(".gz") else path.name


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path.name} is not valid JSON ({exc})", "input") from None
    except RecursionError:
        raise InputError(f"{path.name} is nested too deeply to read", "input") from None


def problem_from_json(data: Any, name: str | None = None, rules: Rules | None = None) -> Problem:
    """A problem from parsed JSON data (a graph, buffer-list or pool document)."""
    if isinstance(data, dict) and "models" in data:
        from gaplanner.problem.pools import problem_from_pool_document

        return problem_from_pool_document(data, name, rules)
    return build_problem(parse_document(data), name, rules)


def _integer_column(rows: list[dict[str, str]], column: str, first_line: int) -> np.ndarray:
    values = np.empty(len(rows), np.int64)
    for i, row in enumerate(rows):
        where = f"line {first_line + i}, column {column}"
        try:
            value = int(row[column])
        except (TypeError, ValueError):
            raise InputError(f"expected an integer, got {row[column]!r}", where) from None
        if not -(2**63) <= value < 2**63:
            raise InputError(f"{value} is beyond the 64-bit range (at most 2**63 - 1)", where)
        values[i] = value
    return values


def _id_column(rows: list[dict[str, str]], column: str) -> tuple[str, ...]:
    """The ids of a CSV's rows, refusing control characters as a document's ids do."""
    for i, row in enumerate(rows):
        if (problem := id_problem(row[column] or "")) is not None:
            raise InputError(problem, f"line {i + 2}, column {column}")
    return tuple(row[column] for row in rows)


def _csv_rows(lines: Iterable[str], name: str) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.DictReader(lines, skipinitialspace=True)
    header = [h.strip() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    rows = []
    for row in reader:
        extra = row.pop(None, [])
        if any(field.strip() for field in extra):  # a value without a column: the row is out of step
            raise InputError(
                f"{len(header) + len(extra)} values; the header names {len(header)} columns",
                f"line {reader.line_num}",
            )
        rows.append(row)
    if not rows:
        raise InputError(f"{name} has no buffers", "input")
    return header, rows


def _clock_column(rows: list[dict[str, str]], column: str, first_line: int) -> np.ndarray:
    """A column of vector clocks (``a:b:c``) as an ``(n, components)`` array."""
    clocks: list[list[int]] = []
    for i, row in enumerate(rows):
        where = f"line {first_line + i}, column {column}"
        try:
            clocks.append([int(part) for part in (row[column] or "").split(":")])
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"expected an integer or a clock a:b:c, got {row[column]!r}", where) from None
        if any(not -(2**62) < part < 2**62 for part in clocks[-1]):
            raise InputError(f"clock components must lie within ±2**62, got {row[column]!r}", where)
        if len(clocks[-1]) != len(clocks[0]):
            raise InputError(
                f"a clock of {len(clocks[-1])} components; the first row's have {len(clocks[0])}", where
            )
    return np.array(clocks, np.int64)


def _clock_problem(rows: list[dict[str, str]], header: list[str], name: str) -> Problem:
    lower, upper = _clock_column(rows, "lower", 2), _clock_column(rows, "upper", 2)
    if lower.shape[1] != upper.shape[1]:
        raise InputError("lower and upper clocks differ in components", "line 2, column upper")
    ids = _id_column(rows, "id") if "id" in header else None
    offsets = _offset_column(rows, header)
    return problem_from_clocks(
        _integer_column(rows, "size", 2), lower, upper, ids=ids, name=name, offsets=offsets
    )


def _offset_column(rows: list[dict[str, str]], header: list[str]) -> np.ndarray | None:
    """A plan's offsets read back as pins (blank: free), or None without the column."""
    if "offset" not in header:
        return None
    blank = [{"offset": row["offset"] or "-1"} for row in rows]
    return _integer_column(blank, "offset", 2)


#: Decimal digits a plain CSV's integers may have: up to 18 cannot overflow int64.
MAX_DIGITS = 18
POWERS = 10 ** np.arange(MAX_DIGITS, dtype=np.int64)


def _plain_fields(text: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None:
    """A plain CSV's header, its bytes and where each field starts and ends (row by row), or None.

    Plain: no quotes, no blank lines, every row as wide as the header. Anything
    else is left to the csv module's reader (:func:`_csv_rows`), whose messages
    name the line.
    """
    text = text.replace("\r\n", "\n")
    if '"' in text or any(c in text for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        return None  # quoted fields, or line ends other than \n (str.splitlines would split there)
    head, _, body = text.partition("\n")
    header = [h.strip() for h in head.split(",")]
    body = body.rstrip("\n")
    if not body or "\n\n" in body or len(set(header)) != len(header):
        return None
    data = np.frombuffer(body.encode(), np.uint8)
    ends_of_lines = np.append(np.flatnonzero(data == 10), len(data))
    commas = np.flatnonzero(data == 44)
    if not (np.diff(np.searchsorted(commas, ends_of_lines), prepend=0) == len(header) - 1).all():
        return None
    ends = np.sort(np.concatenate([commas, ends_of_lines]))
    return header, data, np.concatenate([[0], ends[:-1] + 1]), ends


def _integers(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The fields as int64 if each is decimal digits after an optional minus sign, else None."""
    negative = (ends > starts) & (data[np.minimum(starts, len(data) - 1)] == 45)
    first = starts + negative
    digits = ends - first
    if not len(digits) or digits.min() < 1 or digits.max() > MAX_DIGITS:
        return None
    cut = np.cumsum(digits) - digits
    at = np.arange(int(digits.sum())) - np.repeat(cut - first, digits)  # every digit's byte
    values = data[at].astype(np.int64) - 48
    if values.min() < 0 or values.max() > 9:
        return None
    numbers = np.add.reduceat(values * POWERS[np.repeat(ends, digits) - at - 1], cut)
    return np.where(negative, -numbers, numbers)


def _plain_problem(text: str, name: str) -> Problem | None:
    """The problem of a plain ``lower,upper,size`` CSV of integers (vectorised), or None for any other."""
    fields = _plain_fields(text)
    if fields is None:
        return None
    header, data, starts, ends = fields
    if not {"lower", "upper", "size"} <= set(header) or "offset" in header:
        return None
    width, column = len(header), {c: header.index(c) for c in header}
    lower, upper, sizes = (
        _integers(data, starts[column[c] :: width], ends[column[c] :: width])
        for c in ("lower", "upper", "size")
    )
    if lower is None or upper is None or sizes is None:
        return None  # not plain integers (clocks among them): the row-wise reader says where
    if FORBIDDEN_IN_IDS.search(text.replace("\n", "")):
        return None  # a control character in an id: the row-wise reader names its line
    id_column = "id" if "id" in header else "buffer" if "buffer" in header else None
    ids = None
    if id_column:
        raw = data.tobytes()
        bounds = zip(*(a[column[id_column] :: width].tolist() for a in (starts, ends)), strict=True)
        # lstrip(" "): as the csv reader's skipinitialspace
        ids = tuple(raw[s:e].decode().lstrip(" ") for s, e in bounds)
    return problem_from_arrays(sizes, lower, upper, ids=ids, name=name)


def problem_from_csv_text(text: str, name: str = "problem") -> Problem:
    """A problem from MiniMalloc CSV text, or omnimalloc's (times may be vector clocks ``a:b:c``)."""
    if (plain := _plain_problem(without_bom(text), name)) is not None:
        return plain
    header, rows = _csv_rows(without_bom(text).splitlines(), name)
    if {"lower", "upper", "size"} <= set(header) and any(":" in (r["lower"] or "") for r in rows):
        return _clock_problem(rows, header, name)
    if {"lower", "upper"} <= set(header):
        lower, upper = _integer_column(rows, "lower", 2), _integer_column(rows, "upper", 2)
    elif {"start", "end"} <= set(header):  # MiniMalloc's legacy columns: inclusive end
        lower, upper = _integer_column(rows, "start", 2), _integer_column(rows, "end", 2) + 1
    else:
        raise InputError("the header needs columns id,lower,upper,size", "header")
    if "size" not in header:
        raise InputError("the header needs a size column", "header")
    id_column = "id" if "id" in header else "buffer" if "buffer" in header else None
    ids = _id_column(rows, id_column) if id_column else None
    return problem_from_arrays(_integer_column(rows, "size", 2), lower, upper, ids=ids, name=name)


def problem_from_text(filename: str, text: str, rules: Rules | None = None) -> Problem:
    """A problem from a file's name and text (MiniMalloc CSV if the name ends in .csv, else JSON)."""
    name = filename.rsplit(".", 1)[0]
    text = without_bom(text)
    if filename.lower().endswith(".csv"):
        return problem_from_csv_text(text, name)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{filename} is not valid JSON ({exc})", "input") from None
    except RecursionError:
        raise InputError(f"{filename} is nested too deeply to read", "input") from None
    return problem_from_json(data, name, rules)


#: What :func:`load_problem` reads: a name or a path, a parsed document, or a file's name and text.
Source = str | Path | dict[str, Any] | tuple[str, str]


def load_problem(
    source: Source,
    rules: Rules | None = None,
    *,
    batch: int | None = None,
    dims: Mapping[str, int] | None = None,
) -> Problem:
    """A problem from a name, a file, a parsed document or a file's text.

    ``source``: ``zoo:NAME[@N]``, ``example:NAME`` or the path of a JSON
    document, MiniMalloc CSV or ONNX model; a parsed graph or buffer-list
    document (a dict); or ``(filename, text)``, a file's contents read
    elsewhere. ``rules``: the runtime's memory rules for a graph (default
    :class:`Rules`). ``batch`` and ``dims``: an ONNX model's symbolic
    dimensions (see :func:`gaplanner.documents.onnx_import.import_onnx`); refused for
    any other input.
    """
    if batch is not None or dims:
        return build_problem(_onnx_document(source, batch, dims), Path(str(source)).stem, rules)
    if isinstance(source, dict):
        return problem_from_json(source, None, rules)
    if isinstance(source, tuple):
        return problem_from_text(*source, rules)
    if str(source).startswith(ZOO_PREFIX):
        doc = zoo_document(str(source))
        return build_problem(doc, doc.name, rules)
    path = _resolve(source)
    if path.suffix.lower() in MODEL_SUFFIXES:
        return build_problem(_model_document(path), path.name.rsplit(".", 1)[0], rules)
    return problem_from_text(_plain_name(path), _read_text(path), rules)


#: Files read as models: ONNX, and programs saved by ``torch.export.save``.
MODEL_SUFFIXES = (".onnx", ".pt2")


def _onnx_document(source: Any, batch: int | None, dims: Mapping[str, int] | None) -> Document:
    """An ONNX model's graph with its symbolic dimensions fixed (what ``--batch`` and ``--dim`` ask)."""
    field = "batch" if batch is not None else "dims"
    if isinstance(source, dict | tuple) or str(source).startswith(ZOO_PREFIX):
        raise InputError("applies to ONNX models only; this input's sizes are fixed", field)
    path = _resolve(source)
    if path.suffix.lower() != ".onnx":
        raise InputError(f"applies to ONNX models only; {path.name}'s sizes are fixed", field)
    from gaplanner.documents.onnx_import import import_onnx

    return import_onnx(path, batch=batch, dims=dims)


def _model_document(path: Path) -> Document:
    """The graph of an ONNX model or a saved ExportedProgram (onnx and torch stay optional)."""
    if path.suffix.lower() == ".pt2":
        from gaplanner.documents.torch_import import from_exported_program, load_exported_program

        return from_exported_program(load_exported_program(path), path.name.rsplit(".", 1)[0])
    from gaplanner.documents.onnx_import import import_onnx

    return import_onnx(path)


def _buffer_document(problem: Problem) -> Document:
    """A CSV's buffers as a buffer-list document (interval lifetimes only)."""
    if problem.clocks is not None:
        raise InputError(
            "a CSV with vector-clock lifetimes cannot join a pool; give interval lifetimes", "input"
        )
    buffers = [
        {"id": bid, "lower": int(lo), "upper": int(up), "size": int(size)}
        for bid, lo, up, size in zip(problem.ids, problem.lower, problem.upper, problem.sizes, strict=True)
    ]
    return parse_document({"name": problem.name, "buffers": buffers})


def load_pool_data(source: str | Path) -> tuple[dict[str, Any], str] | None:
    """The pool document ``source`` names (JSON with ``models``) and its name, or None for any other input."""
    if str(source).startswith(ZOO_PREFIX):
        return None
    path = _resolve(source)
    if path.suffix.lower() in MODEL_SUFFIXES or _plain_name(path).lower().endswith(".csv"):
        return None
    data = _read_json(path)
    pooled = isinstance(data, dict) and "models" in data
    return (data, _plain_name(path).rsplit(".", 1)[0]) if pooled else None


def load_document(
    source: str | Path, *, batch: int | None = None, dims: Mapping[str, int] | None = None
) -> Document:
    """The graph or buffer-list document of any input :func:`load_problem` reads by name or path.

    For pooling several inputs (:mod:`gaplanner.problem.pools`): an ONNX model or a zoo
    network gives its graph, a MiniMalloc CSV its buffers; a pool document is
    refused (it is already several models). ``batch``, ``dims``: as for
    :func:`load_problem`.
    """
    if batch is not None or dims:
        return _onnx_document(source, batch, dims)
    if str(source).startswith(ZOO_PREFIX):
        return zoo_document(str(source))
    path = _resolve(source)
    if path.suffix.lower() in MODEL_SUFFIXES:
        return _model_document(path)
    if _plain_name(path).lower().endswith(".csv"):
        return _buffer_document(problem_from_csv_text(_read_text(path), _plain_name(path).rsplit(".", 1)[0]))
    data = _read_json(path)
    if isinstance(data, dict) and "models" in data:
        raise InputError(f"{path.name} is already a pool of several models; pool single models", "input")
    return parse_document(data)
