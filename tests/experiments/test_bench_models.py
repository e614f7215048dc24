"""The real-model benchmark runs end to end on one model and one zoo network and writes its table."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx")
from experiments import bench_models


@pytest.mark.slow
def test_the_bench_writes_one_row_per_input(tmp_path: Path) -> None:
    out = tmp_path / "models.md"
    options = ["--only", "resnet50", "--zoo-cores", "1", "--time-limit", "0.5", "--no-timing"]
    assert bench_models.main([*options, "--out", str(out)]) == 0
    report = out.read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in report.splitlines() if line.startswith("| ")]
    by_name = {cells[0].strip(): [c.strip() for c in cells] for cells in rows}
    assert {"resnet50", "zoo:resnet50"} <= by_name.keys()
    resnet = by_name["resnet50"]
    bound_a, bound_b, bound_c = (float(resnet[i]) for i in (3, 5, 7))
    assert bound_c < bound_b <= bound_a  # ResNet's residual adds and activations write in place
    assert "python -m experiments.bench_models --only resnet50" in report
