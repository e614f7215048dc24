"""The multi-core benchmark plans what ``zoo:NAME@N`` loads and reports peaks against that problem's bound."""

from __future__ import annotations

import os
from pathlib import Path

from experiments import bench_multicore
from gaplanner import load_problem
from gaplanner.documents.zoo import zoo_names


def test_every_zoo_network_is_run_at_two_and_four_cores() -> None:
    specs = bench_multicore.instances(zoo_names(), list(bench_multicore.CORES))
    assert len(specs) == 2 * len(zoo_names()) and "zoo:densenet121@4" in specs
    assert all(not load_problem(spec).interval_conflicts for spec in specs if "googlenet" in spec)


def test_the_table_row_of_a_split_network() -> None:
    """googlenet on 2 cores: its buffers and clique bound, and each solver's peak at or above the bound."""
    assert bench_multicore.main(["--time-limit", "0.5", "--cores", "2", "--networks", "googlenet"]) == 0
    problem = load_problem("zoo:googlenet@2")
    table = (Path(os.environ["GAPLANNER_RESULTS"]) / "multicore.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| zoo:googlenet@2 "))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == str(problem.n) and cells[3] == f"{problem.lower_bound:,}"
    best_bound = float(cells[4].split()[0])
    for solver in cells[5:]:
        ratio = float(solver.split()[0])
        assert ratio >= best_bound >= 1.0
        assert "✓" not in solver or ratio == best_bound  # proved optimal: at the best bound
