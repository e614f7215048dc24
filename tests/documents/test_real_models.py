"""The committed real models (Hugging Face configs exported to ONNX, weights stripped) import and plan safely.

Every model is planned with first-fit under the runtime's rules (outputs kept
alive, views, in-place where it pays) and the plan must leave every model
output intact: no tensor written after an output may touch its bytes. The
check here is written from the rules, independently of the library's own.
Both exports of each model are tested (``NAME.onnx``: dynamo, ``NAME.ts.onnx``:
TorchScript). Needs only ``onnx`` (the models were made by
``experiments/models/make_models.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document
from gaplanner.problem.problem import build_problem
from gaplanner.search.baselines import first_fit

onnx = pytest.importorskip("onnx")
from gaplanner.documents.onnx_import import import_onnx  # noqa: E402

MODELS_DIR = Path(__file__).resolve().parents[2] / "experiments" / "models" / "onnx"
MODELS = sorted(MODELS_DIR.glob("*.onnx"))


def _writers(doc: Document) -> dict[str, int]:
    """Per tensor, the position of the operator that writes its bytes (-1: a model input).

    A view writes nothing: its bytes are its input's, written by its input's writer.
    """
    written: dict[str, int] = {}
    for position, op in enumerate(doc.operators or []):
        for tensor in op.outputs:
            host = op.views.get(tensor)
            written[tensor] = position if host is None else written.get(host, -1)
    return {t.id: written.get(t.id, -1) for t in doc.tensors or []}


def overwritten_outputs(doc: Document, rows: list[dict[str, Any]]) -> list[str]:
    """Model outputs whose bytes a tensor written after them overlaps (each named with the culprit)."""
    writer = _writers(doc)
    where = {row["id"]: (row["offset"], row["offset"] + row["size"]) for row in rows}
    found = []
    for output in doc.outputs or []:
        start, end = where[output]
        for row in rows:
            later = writer[row["id"]] > writer[output]
            if later and row["offset"] < end and start < row["offset"] + row["size"]:
                found.append(f"{output} overwritten by {row['id']}")
    return found


def test_the_set_is_there() -> None:
    names = {p.name.removesuffix(".onnx") for p in MODELS_DIR.glob("*.onnx")}
    expected = {"bert", "bert_early_output", "gpt2", "vit", "resnet50", "whisper_encoder"}
    assert expected | {f"{name}.ts" for name in expected} <= names


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name.removesuffix(".onnx"))
def test_model_imports_and_first_fit_keeps_every_output(path: Path) -> None:
    doc = import_onnx(path)
    assert doc.outputs == [value.name for value in onnx.load(str(path)).graph.output]
    problem = build_problem(doc, rules=Rules())
    plan = first_fit(problem)
    rows = plan.tensor_rows()
    assert {row["id"] for row in rows} == {t.id for t in doc.tensors or []}
    assert overwritten_outputs(doc, rows) == []
    assert plan.peak >= problem.lower_bound
    # Views and in-place writes only ever let tensors share bytes, so the bound cannot rise.
    kept_apart = build_problem(doc, rules=Rules(views=False, inplace="never")).lower_bound
    views_only = build_problem(doc, rules=Rules(inplace="never")).lower_bound
    assert problem.lower_bound <= views_only <= kept_apart


def test_the_early_output_is_written_early_and_kept() -> None:
    doc = import_onnx(MODELS_DIR / "bert_early_output.onnx")
    writer = _writers(doc)
    assert writer["hidden_state_2"] < len(doc.operators or []) // 2
    plan = first_fit(build_problem(doc, rules=Rules()))
    assert overwritten_outputs(doc, plan.tensor_rows()) == []


def test_the_check_finds_a_planted_overwrite() -> None:
    doc = import_onnx(MODELS_DIR / "bert_early_output.onnx")
    rows = first_fit(build_problem(doc, rules=Rules())).tensor_rows()
    writer = _writers(doc)
    early = next(row for row in rows if row["id"] == "hidden_state_2")
    later = next(row for row in rows if writer[row["id"]] > writer["hidden_state_2"])
    later["offset"] = early["offset"]
    assert overwritten_outputs(doc, rows) == [f"hidden_state_2 overwritten by {later['id']}"]
