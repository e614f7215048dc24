"""Writing a problem in the other planners' formats (``gaplanner convert``).

* ``buffers``: gaplanner's buffer-list JSON (``{"buffers": [...]}``).
* ``minimalloc``: MiniMalloc's CSV, ``id,lower,upper,size`` with half-open lifetimes.
* ``omnimalloc``: omnimalloc's CSV, the same columns with vector-clock times ``a:b:c``.
* ``graph``: a graph document as JSON (graphs only: an ONNX model or a zoo network).

A graph becomes its storage blocks under the runtime's rules (views and the
in-place writes taken are one buffer each), on its execution order's time axis.
A multi-core graph has no such lifetimes: its conflicts come from a partial
order that no list of intervals or clocks here describes, so it converts only
to ``graph``; so does a graph with ``devices`` (the other formats carry no
per-unit alignments or memories).
"""

from __future__ import annotations

import csv
import io

from gaplanner.documents.writer import document_text
from gaplanner.errors import InputError
from gaplanner.problem.clocks import format_clock
from gaplanner.problem.problem import Problem

FORMATS: tuple[str, ...] = ("buffers", "minimalloc", "omnimalloc", "graph")


def _lifetimes(problem: Problem, clocks: bool) -> list[tuple[str, str]]:
    if problem.clocks is not None:
        if not clocks:
            raise InputError("vector-clock lifetimes have no MiniMalloc form; use omnimalloc", "format")
        return [
            (format_clock(lo), format_clock(up))
            for lo, up in zip(problem.clocks.lower, problem.clocks.upper, strict=True)
        ]
    if not problem.interval_conflicts:
        raise InputError(
            "a multi-core graph's conflicts have no interval form; convert it to graph", "format"
        )
    return [(str(lo), str(up)) for lo, up in zip(problem.lower, problem.upper, strict=True)]


def convert(problem: Problem, to: str) -> str:
    """The text of ``problem`` in format ``to`` (one of :data:`FORMATS`)."""
    if to not in FORMATS:
        raise InputError(f"unknown format {to!r}; choose from {', '.join(FORMATS)}", "format")
    if to == "graph":
        if problem.document is None:
            raise InputError("only a graph (JSON, ONNX or zoo) converts to a graph document", "format")
        return document_text(problem.document)
    if problem.document is not None and problem.document.devices is not None:
        raise InputError(
            "a graph with devices converts only to graph: the other formats carry no per-unit alignment",
            "format",
        )
    lifetimes = _lifetimes(problem, clocks=to == "omnimalloc")
    if to == "buffers":
        buffers = [
            {"id": bid, "lower": int(lo), "upper": int(up), "size": int(size)}
            for bid, (lo, up), size in zip(problem.ids, lifetimes, problem.sizes, strict=True)
        ]
        return document_text({"name": problem.name, "buffers": buffers})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "lower", "upper", "size"])
    for bid, (lo, up), size in zip(problem.ids, lifetimes, problem.sizes, strict=True):
        writer.writerow([bid, lo, up, int(size)])
    return out.getvalue()
