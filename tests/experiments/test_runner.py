"""The batch runner: a grid end to end, resuming after a kill, config errors, the results file."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray")
pytest.importorskip("tqdm")
psutil = pytest.importorskip("psutil")

from experiments.grid import expand_inputs, load_config, make_cells  # noqa: E402
from experiments.run import COLUMNS, ResultsWriter, main, read_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def random_csv(seed: int, n: int = 200) -> str:
    """Random buffers the GA does not pack down to the lower bound within a second."""
    rng = np.random.default_rng(seed)
    lower = rng.integers(0, 100, n)
    upper, sizes = lower + rng.integers(1, 40, n), rng.integers(1, 1000, n)
    return "id,lower,upper,size\n" + "".join(f"b{i},{lower[i]},{upper[i]},{sizes[i]}\n" for i in range(n))


def write_config(tmp_path: Path, text: str) -> Path:
    (tmp_path / "inputs").mkdir(exist_ok=True)
    (tmp_path / "inputs" / "a.csv").write_text(random_csv(1))
    (tmp_path / "inputs" / "b.csv").write_text(random_csv(2))
    path = tmp_path / "grid.toml"
    path.write_text(text.replace("INPUTS", str(tmp_path / "inputs")))
    return path


GRID = """
inputs = ["example:seed000_queue", "INPUTS/*.csv", "zoo:mobilenetv1", "{benchmarks}/nowhere/*.csv"]
seeds = [0, 1]
time_budgets = [0.3]

[[algorithms]]
name = "first-fit"

[[algorithms]]
name = "ga"
label = "ga-small"
population = 8
"""


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_a_small_grid_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, GRID)
    results = tmp_path / "out" / "results.csv"
    argv = [
        str(config),
        "--results",
        str(results),
        "--benchmarks",
        str(tmp_path / "absent"),
        "--num-cpus",
        "2",
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    cells = make_cells(load_config(config), expand_inputs(load_config(config).inputs, None)[0])
    assert len(cells) == 4 * (1 + 2)  # 4 inputs (the {benchmarks} one skipped) x (first-fit + 2 seeds)
    rows = rows_of(results)
    assert sorted(r["cell"] for r in rows) == sorted(c.key for c in cells)
    assert list(rows[0]) == COLUMNS
    assert all(float(r["ratio"]) >= 1.0 and int(r["peak"]) >= int(r["lower_bound"]) for r in rows)
    assert {r["seed"] for r in rows if r["algorithm"] == "ga-small"} == {"0", "1"}
    assert "{benchmarks}/nowhere/*.csv: skipped" in err
    summary = (tmp_path / "out" / "results.md").read_text()
    for name in ("example:seed000_queue", "a.csv", "b.csv", "zoo:mobilenetv1"):
        assert name in summary and name in out
    assert "peak ratio median" in summary and "| ga-small | 0.3 | 2 |" in summary

    assert main(argv) == 0  # everything is done: nothing runs again
    assert "12 cells: 12 already in" in capsys.readouterr().out
    assert len(rows_of(results)) == 12


def _ray_processes(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if f"RAY_TMPDIR={marker}".encode() in Path(f"/proc/{process.pid}/environ").read_bytes():
                found.append(process)
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_an_interrupted_run_resumes_without_redoing_finished_cells(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        """
inputs = ["INPUTS/a.csv", "INPUTS/b.csv"]
seeds = [0, 1, 2, 3, 4, 5]
time_budgets = [0.6]

[[algorithms]]
name = "ga"
population = 8
stall_generations = 1000000
""",
    )
    results = tmp_path / "results.csv"
    marker = tempfile.mkdtemp(prefix="gpr", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {**os.environ, "RAY_TMPDIR": marker, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "experiments.run", str(config), "--results", str(results)]
    process = subprocess.Popen([*command, "--num-cpus", "2"], env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while len(read_results(results)) < 3:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        # A SIGKILLed driver takes Ray's gcs and raylet with it; its two agents linger for a
        # minute or two before they notice. Clear them here rather than leave them behind.
        time.sleep(1)
        for leftover in _ray_processes(marker):
            leftover.kill()
    before = read_results(results)
    assert 3 <= len(before) < 12

    done = subprocess.run([*command, "--num-cpus", "2"], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"12 cells: {len(before)} already in" in done.stdout
    after = read_results(results)
    assert after[: len(before)] == before  # the finished rows are kept as they were ...
    assert len(after) == 12 and len({r["cell"] for r in after}) == 12  # ... and none ran twice
    assert _ray_processes(marker) == []


def test_config_errors_name_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = {
        'inputs = ["zoo:resnet50"]\n[[algorithms]]\nname = "magic"\n': "algorithms[0].name",
        'inputs = ["zoo:resnet50"]\n[[algorithms]]\nname = "first-fit"\nseed = 3\n': "takes no seed",
        'inputs = ["zoo:resnet50"]\n[[algorithms]]\nname = "ga"\npopulation = 2\n': "[0].population: must be",
        'inputs = []\n[[algorithms]]\nname = "ga"\n': "inputs: expected a non-empty list",
        "inputs = [": "grid.toml",
    }
    for text, message in bad.items():
        path = tmp_path / "grid.toml"
        path.write_text(text)
        assert main([str(path), "--results", str(tmp_path / "r.csv")]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "r.csv").exists()


def test_a_row_cut_short_by_a_kill_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    whole = ",".join(
        ["k1", "zoo:x", "ga", "0", "1.0", "3", "10", "12", "1.2", "0.5", "4", "40", "", "0", "h", "t"]
    )
    path.write_text(",".join(COLUMNS) + "\n" + whole + "\nk2,zoo:x,ga,1,1.0,3,1")
    assert [r["cell"] for r in read_results(path)] == ["k1"]
    writer = ResultsWriter(path)  # truncates the partial row before appending
    writer.append(dict(zip(COLUMNS, whole.replace("k1", "k3").split(","), strict=True)))
    writer.close()
    assert [r["cell"] for r in read_results(path)] == ["k1", "k3"]
    assert path.read_text().count("\n") == 3
