"""Execute the figure notebooks end to end (nbclient) and save their PNGs.

    python -m experiments.notebooks.run [NOTEBOOK ...] [--budget quick|full] [--figures DIR] [--inplace]

Each notebook reads its budget from ``GAPLANNER_NOTEBOOK_BUDGET`` (``quick``:
seconds, what CI runs; ``full``: the committed figures) and writes its PNGs to
``GAPLANNER_FIGURES``; this sets both for the kernel. Figures go by default to
``experiments/figures/`` (committed) for the full budget and to
``experiments/results/figures-quick/`` (ignored by git) for the quick one.
``--inplace`` also saves the executed notebook, outputs included.
Needs the ``notebooks`` extra (``pip install -e '.[notebooks]'``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

NOTEBOOKS_DIR = Path(__file__).resolve().parent
FIGURES_DIR = NOTEBOOKS_DIR.parent / "figures"
QUICK_FIGURES_DIR = NOTEBOOKS_DIR.parent / "results" / "figures-quick"
#: Every notebook and the PNGs it writes.
FIGURES: dict[str, tuple[str, ...]] = {
    "fig10a_environments.ipynb": ("fig10a_environments.png",),
    "fig10b_convergence.ipynb": ("fig10b_convergence_evaluations.png", "fig10b_convergence_seconds.png"),
}
BUDGETS = ("quick", "full")


def execute(
    notebook: Path,
    *,
    budget: str = "quick",
    figures: Path,
    cwd: Path | None = None,
    timeout: int | None = None,
) -> Any:
    """Run every cell of ``notebook`` in a fresh kernel; the executed notebook (``nbformat`` node).

    Raises ``nbclient.exceptions.CellExecutionError`` on the first failing cell.
    """
    import nbformat
    from nbclient import NotebookClient

    if budget not in BUDGETS:
        raise ValueError(f"budget {budget!r}: choose one of {', '.join(BUDGETS)}")
    figures.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(notebook, as_version=4)
    env = {**os.environ, "GAPLANNER_NOTEBOOK_BUDGET": budget, "GAPLANNER_FIGURES": str(figures.resolve())}
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd or notebook.parent)}},
    )
    client.execute(env=env)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.notebooks.run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every figure notebook")
    parser.add_argument(
        "--budget",
        choices=BUDGETS,
        default=os.environ.get("GAPLANNER_NOTEBOOK_BUDGET", "quick"),
        help="default: GAPLANNER_NOTEBOOK_BUDGET, else quick",
    )
    parser.add_argument(
        "--figures",
        type=Path,
        help="default: experiments/figures/ (full budget) or experiments/results/figures-quick/ (quick)",
    )
    parser.add_argument(
        "--inplace", action="store_true", help="save the executed notebooks with their outputs"
    )
    args = parser.parse_args(argv)
    import nbformat

    figures = args.figures or (FIGURES_DIR if args.budget == "full" else QUICK_FIGURES_DIR)
    for notebook in args.notebooks or [NOTEBOOKS_DIR / name for name in FIGURES]:
        started = time.perf_counter()
        nb = execute(notebook, budget=args.budget, figures=figures)
        if args.inplace:
            nbformat.write(nb, notebook)
        written = ", ".join(str(figures / name) for name in FIGURES.get(notebook.name, ()))
        print(f"{notebook.name}: {args.budget} budget, {time.perf_counter() - started:.0f} s -> {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
