"""Plan files: reading a plan's offsets and memories back, checking them, writing plans as text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gaplanner.errors import InputError, PlanError
from gaplanner.plans.tensor_check import check_tensor_plan
from gaplanner.plans.verify import find_memory_violation, find_violation
from gaplanner.problem.loading import _csv_rows, _integer_column, _read_json, _read_text, _resolve
from gaplanner.problem.problem import Problem


def _plan_offset(value: Any) -> int:
    """An offset from a JSON plan: a JSON integer, never a string or a fraction silently truncated."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(value)
    return value


def read_offsets(problem: Problem, source: str | Path) -> np.ndarray:
    """Offsets of a plan file (the JSON plan, or a CSV with ``id`` and ``offset`` columns)."""
    path = _resolve(source)
    if path.suffix.lower() == ".csv":
        header, rows = _csv_rows(_read_text(path).splitlines(), path.name)
        if not {"id", "offset"} <= set(header):
            raise InputError("a CSV plan needs id and offset columns", "plan")
        pairs = dict(zip((r["id"] for r in rows), _integer_column(rows, "offset", 2), strict=True))
    else:
        data = _read_json(path)
        blocks = data.get("blocks") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise InputError("a JSON plan needs a 'blocks' list", "plan.blocks")
        try:
            pairs = {str(b["id"]): _plan_offset(b["offset"]) for b in blocks}
        except (KeyError, TypeError, ValueError):
            raise InputError("every block needs an id and an integer offset", "plan.blocks") from None
    missing = [bid for bid in problem.ids if bid not in pairs]
    if missing:
        raise InputError(f"the plan has no offset for block {missing[0]!r}", "plan.blocks")
    extra = set(pairs) - set(problem.ids) - set(problem.tensors.ids if problem.tensors else ())
    if extra:
        raise InputError(f"the plan places unknown block {sorted(extra)[0]!r}", "plan.blocks")
    return np.array([pairs[bid] for bid in problem.ids], np.int64)


def read_tensor_offsets(problem: Problem, source: str | Path) -> dict[str, int]:
    """Every tensor's offset from a plan file: its ``tensors`` list, else its blocks' offsets."""
    path = _resolve(source)
    if path.suffix.lower() == ".csv":
        header, csv_rows = _csv_rows(_read_text(path).splitlines(), path.name)
        if not {"id", "offset"} <= set(header):
            raise InputError("a CSV plan needs id and offset columns", "plan")
        offsets = _integer_column(csv_rows, "offset", 2)
        return {row["id"]: int(offset) for row, offset in zip(csv_rows, offsets, strict=True)}
    data = _read_json(path)
    rows = data.get("tensors") if isinstance(data, dict) else None
    if rows is None:
        offsets = read_offsets(problem, source)
        assert problem.tensors is not None
        return {
            t: int(offsets[b]) for t, b in zip(problem.tensors.ids, problem.tensors.block_of, strict=True)
        }
    if not isinstance(rows, list):
        raise InputError("'tensors' must be a list", "plan.tensors")
    try:
        return {str(row["id"]): _plan_offset(row["offset"]) for row in rows}
    except (KeyError, TypeError, ValueError):
        raise InputError("every tensor needs an id and an integer offset", "plan.tensors") from None


def read_memories(problem: Problem, source: str | Path) -> dict[str, str]:
    """Each block's or tensor's memory from a plan file across memories (a ``memory`` per row)."""
    path = _resolve(source)
    if path.suffix.lower() == ".csv":
        header, rows = _csv_rows(_read_text(path).splitlines(), path.name)
        if "memory" not in header:
            raise InputError("a plan across memories needs a memory column", "plan")
        return {row["id"]: row["memory"] for row in rows}
    data = _read_json(path)
    rows = (data.get("tensors") or data.get("blocks")) if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError("a JSON plan needs a 'blocks' list", "plan.blocks")
    try:
        return {str(row["id"]): str(row["memory"]) for row in rows}
    except (KeyError, TypeError):
        raise InputError("every block of a plan across memories needs a memory", "plan.blocks") from None


def read_plan_schedule(source: str | Path) -> list[str] | None:
    """The operator order a JSON plan is for (its ``schedule``: searched or given), or None."""
    path = _resolve(source)
    if path.suffix.lower() == ".csv":
        return None
    data = _read_json(path)
    order = data.get("schedule") if isinstance(data, dict) else None
    if order is None:
        return None
    if not isinstance(order, list) or not all(isinstance(op_id, str) for op_id in order):
        raise InputError("must be a list of operator ids", "plan.schedule")
    return order


def write_text(path: str | Path | None, text: str) -> None:
    """Write to a file, or to stdout when ``path`` is None or ``-``."""
    if path is None or str(path) == "-":
        print(text, end="" if text.endswith("\n") else "\n")
    else:
        Path(path).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


#: Stands in for the block list while the rest of a plan is written by ``json.dumps``.
_BLOCKS = "\x00blocks\x00"


def plan_json(data: dict[str, Any]) -> str:
    """``json.dumps(data, indent=2)`` of a plan's data, its block list written row by row.

    The generic encoder spends about a hundred microseconds per block (a dict of
    three or four entries each), minutes at a million blocks; when every block
    has the same fields, each an integer or a string throughout (one arena's
    plans, and plans across memories), this writes each block's lines from a
    template instead, giving the same text.
    """
    blocks = data.get("blocks")
    columns = _block_columns(blocks) if isinstance(blocks, list) and blocks else None
    if columns is None:
        return json.dumps(data, indent=2)
    text = json.dumps({**data, "blocks": _BLOCKS}, indent=2)
    fields = (json.dumps(key).replace("%", "%%") for key in blocks[0])  # type: ignore[index]
    template = "    {\n" + ",\n".join(f"      {field}: %s" for field in fields) + "\n    }"
    rows = ",\n".join([template % values for values in zip(*columns, strict=True)])
    return text.replace(json.dumps(_BLOCKS), "[\n" + rows + "\n  ]", 1)


def _block_columns(blocks: list[Any]) -> list[list[Any]] | None:
    """Each block field's values as JSON text (or ``int``, whose ``%s`` is its JSON text), when every
    block is a dict of the same fields in the same order, each an ``int`` or a ``str`` in every block
    (None: the generic encoder writes them). The checks map over the blocks in C: at a million blocks
    a Python test per block costs seconds."""
    if set(map(type, blocks)) != {dict}:
        return None
    keys = tuple(blocks[0])
    if not keys or not all(isinstance(k, str) for k in keys) or set(map(tuple, blocks)) != {keys}:
        return None
    columns = []
    for key in keys:
        values = [b[key] for b in blocks]
        kinds = set(map(type, values))
        if kinds == {int}:
            columns.append(values)
        elif kinds == {str}:
            # Printable ASCII but quote and backslash: json.dumps would write them as they are.
            plain = re.fullmatch(r"[ !#-\[\]-~]*", "".join(values)) is not None
            columns.append([f'"{v}"' for v in values] if plain else [json.dumps(v) for v in values])
        else:
            return None
    return columns


@dataclass(frozen=True)
class PlanCheck:
    """A plan file that holds for its input: its peak (or each memory's and the access cost)."""

    problem: Problem
    peak: int | None = None
    peaks: dict[str, int] | None = None
    cost: float | None = None

    def summary(self) -> str:
        """One line: what ``gaplanner verify`` prints."""
        problem = self.problem
        if self.peaks is not None:
            return f"valid: {problem.n} blocks, peaks {self.peaks}, cost {self.cost:.6g}"
        # Blocks, as the docs and every other command count them; a graph's tensors were checked too.
        tensors = f" ({len(problem.tensors.ids)} tensors)" if problem.tensors is not None else ""
        return f"valid: {problem.n} blocks{tensors}, peak {self.peak}, lower bound {problem.lower_bound}"


def check_plan_file(problem: Problem, source: str | Path) -> PlanCheck:
    """Check a plan file against its input; :class:`PlanError` naming the first violation.

    Blocks by the rules of :mod:`gaplanner.plans.verify`; for a graph also every
    tensor by the model's rules (:mod:`gaplanner.plans.tensor_check`); across
    memories each memory on its own.
    """
    if problem.memories is not None:
        return _check_memory_plan_file(problem, source)
    offsets = read_offsets(problem, source)
    violation = find_violation(problem, offsets)
    if violation is None and problem.document is not None:  # a graph: every tensor, by the model's rules
        violation = check_tensor_plan(problem.document, problem.rules, read_tensor_offsets(problem, source))
    if violation is not None:
        raise PlanError(f"invalid plan: {violation}")
    return PlanCheck(problem, peak=int((offsets + problem.sizes).max()))


def _check_memory_plan_file(problem: Problem, source: str | Path) -> PlanCheck:
    assert problem.memories is not None
    offsets, memories = read_offsets(problem, source), read_memories(problem, source)
    index = {name: m for m, name in enumerate(problem.memories.ids)}
    unknown = sorted(set(memories.values()) - set(index))
    if unknown:
        raise InputError(f"the plan names memory {unknown[0]!r}, which the input does not list", "plan")
    memory_of = np.array([index.get(memories.get(bid, ""), -1) for bid in problem.ids], np.int64)
    violation = find_memory_violation(problem, memory_of, offsets)
    if violation is None and problem.document is not None:
        tensor_offsets = read_tensor_offsets(problem, source)
        violation = check_tensor_plan(problem.document, problem.rules, tensor_offsets, memories=memories)
    if violation is not None:
        raise PlanError(f"invalid plan: {violation}")
    peaks = {name: int((offsets + problem.sizes)[memory_of == m].max(initial=0)) for name, m in index.items()}
    return PlanCheck(problem, peaks=peaks, cost=problem.memories.cost(memory_of))
