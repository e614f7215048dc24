"""The decoder benchmark runs end to end (its numpy decoder agrees with the compiled one, it reports rates),
and the optional comparators place what our decoder places."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from experiments import bench_decoder
from experiments.comparators import omnimalloc_allocators, omnimalloc_first_fit
from gaplanner import load_problem
from gaplanner.plans.verify import verify
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.decoder import Decoder


def test_the_numpy_decoder_decodes_as_the_compiled_one() -> None:
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
    cells = [[cell.strip() for cell in row.split("|")[4:-1]] for row in rows]
    numbers = [cell.replace(",", "").removesuffix("x") for row in cells for cell in row if cell != "-"]
    assert all(float(number) > 0 for number in numbers)
    versus_cpp = [row[bench_decoder.RATE_HEADER.index("ours / C++, same rounds")] for row in cells]
    has_cpp = omnimalloc_first_fit(load_problem("example:seed000_queue")) is not None
    assert all(cell.endswith("x") == has_cpp for cell in versus_cpp)


def test_paired_rates_give_every_decoder_every_round() -> None:
    problem = load_problem("example:seed000_queue")
    decoder = Decoder.for_problem(problem)
    decodes = {"ours": decoder.decode_population, "numpy": bench_decoder.numpy_first_fit(problem)}
    rates = bench_decoder.paired_cpu_rates(decodes, problem.start_order()[None, :], 0.1, rounds=3)
    assert sorted(rates) == ["numpy", "ours"] and all(len(r) == 3 and min(r) > 0 for r in rates.values())


def test_omnimalloc_places_first_fit_as_the_decoder_does() -> None:
    """The comparator times the same work: its peaks equal ours on random orders."""
    rng = np.random.default_rng(7)
    lower = rng.integers(0, 50, 80)
    problem = problem_from_arrays(rng.integers(1, 5000, 80), lower, lower + rng.integers(1, 20, 80))
    reference = omnimalloc_first_fit(problem)
    if reference is None:
        pytest.skip("omnimalloc (the 'compare' extra) is not installed")
    orders = np.array([np.random.default_rng(seed).permutation(problem.n) for seed in range(16)])
    assert np.array_equal(reference(orders), Decoder.for_problem(problem).decode_population(orders)[0])


def test_omnimalloc_is_not_offered_a_multicore_problem() -> None:
    assert omnimalloc_first_fit(load_problem("example:multicore_fig1b")) is None


def test_the_bench_skips_without_benchmark_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_decoder.main(["--benchmarks", str(tmp_path / "nowhere")]) == 0
    assert "benchmark data not found" in capsys.readouterr().err


def test_omnimalloc_allocators_return_verified_offsets() -> None:
    problem = load_problem("example:seed000_queue")
    allocators = omnimalloc_allocators(time_limit=0.5)
    if not allocators:
        pytest.skip("omnimalloc (the 'compare' extra) is not installed")
    for place in allocators.values():
        offsets = place(problem)
        verify(problem, offsets)
        assert int((offsets + problem.sizes).max()) >= problem.lower_bound
