"""The multi-stream generator: valid clocks of the shape it describes, chains only, a CSV that loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments.synthetic_streams import BARRIER, stream_arrays, stream_problem, write_csv
from gaplanner import load_problem
from gaplanner.problem.order import OrderIndex


def test_clocks_are_a_step_on_one_stream_and_the_last_barrier_on_the_others(tmp_path: Path) -> None:
    sizes, lower, upper = stream_arrays(3000, 3, seed=2)
    assert lower.shape == upper.shape == (3000, 3) and (upper >= lower).all()
    for clock in (lower, upper):
        top = clock.max(axis=1, keepdims=True)
        assert ((clock == top) | (clock == top // BARRIER * BARRIER)).all()
        assert ((clock == top).sum(axis=1) >= 1).all()
    problem = stream_problem(3000, 3, seed=2)
    assert problem.happens_before is not None
    assert (OrderIndex.of(problem.happens_before).groups[2] == 1).all()  # every group a chain, none left over
    path = tmp_path / "streams.csv"
    write_csv(str(path), sizes, lower, upper)
    again = load_problem(path)
    assert np.array_equal(again.conflicts.degrees(), problem.conflicts.degrees())
    assert again.lower_bound == problem.lower_bound
