"""The figure notebooks run end to end on the quick budget and draw their PNGs (extra: notebooks)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nbclient")
pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")
image = pytest.importorskip("matplotlib.image")

from experiments.notebooks.run import FIGURES, FIGURES_DIR, NOTEBOOKS_DIR, execute  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.slow  # runs the notebooks in a kernel


def assert_drawn(path: Path) -> None:
    """A real figure: a sizeable image with ink on it, neither blank nor a single colour."""
    assert path.is_file(), f"{path.name} was not written"
    pixels = image.imread(path)[..., :3]
    assert pixels.shape[0] >= 400 and pixels.shape[1] >= 600, pixels.shape
    ink = (pixels < 0.85).any(axis=2).mean()
    assert 0.02 < ink < 0.8, f"{path.name}: {ink:.1%} of the pixels are not near-white"
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, f"{path.name}: too few colours"


@pytest.mark.parametrize("notebook", sorted(FIGURES))
def test_notebook_runs_on_the_quick_budget_and_draws_its_figures(notebook: str, tmp_path: Path) -> None:
    # Executed in a temporary folder, figures there too: the committed figures are not touched.
    nb = execute(NOTEBOOKS_DIR / notebook, budget="quick", figures=tmp_path, cwd=tmp_path, timeout=600)
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]
    assert not [out for out in outputs if out.output_type == "error"]
    text = "".join(out.get("text", "") for out in outputs if out.output_type == "stream")
    assert "budget quick" in text
    for name in FIGURES[notebook]:
        assert_drawn(tmp_path / name)


def test_an_unknown_budget_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="budget"):
        execute(NOTEBOOKS_DIR / "fig10a_environments.ipynb", budget="huge", figures=tmp_path)


def test_the_docs_show_every_committed_figure() -> None:
    page = (ROOT / "docs" / "figures.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(\.\./(experiments/figures/[^)]+\.png)\)", page))
    expected = {f"experiments/figures/{name}" for names in FIGURES.values() for name in names}
    assert expected <= linked, f"not shown in docs/figures.md: {sorted(expected - linked)}"
    for name in expected:
        assert_drawn(ROOT / name)
    assert FIGURES_DIR == ROOT / "experiments" / "figures"
