"""The decoder benchmark runs end to end: its numpy decoder agrees with numba's, and it reports rates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from experiments import bench_decoder
from gaplanner import load_problem
from gaplanner.placement import Decoder


def test_the_numpy_decoder_decodes_as_the_numba_one() -> None:
    problem = load_problem("example:seed000_queue")
    orders = np.array([np.random.default_rng(seed).permutation(problem.n) for seed in range(8)])
    peaks = Decoder.for_problem(problem).decode_population(orders)[0]
    assert np.array_equal(bench_decoder.numpy_first_fit(problem)(orders), peaks)


def test_decode_rates_times_every_round() -> None:
    problem = load_problem("example:seed000_queue")
    decoder = Decoder.for_problem(problem)
    rates = bench_decoder.decode_rates(decoder, problem.start_order()[None, :], 0.05, rounds=4)
    assert len(rates) == 4 and min(rates) > 0


def test_the_bench_prints_one_row_per_input_and_kind_of_order(
    benchmarks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench_decoder.main(["--benchmarks", str(benchmarks), "--inputs", "minimalloc/A.1048576.csv",
                               "--seconds", "0.2"]) == 0  # fmt: skip
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| A.")]
    assert [row.split("|")[3].strip() for row in rows] == ["random", "normalized"]
    assert all(float(cell.replace(",", "")) > 0 for row in rows for cell in row.split("|")[4:-1])


def test_the_bench_skips_without_benchmark_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_decoder.main(["--benchmarks", str(tmp_path / "nowhere")]) == 0
    assert "benchmark data not found" in capsys.readouterr().err
