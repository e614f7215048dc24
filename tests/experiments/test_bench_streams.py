"""experiments/bench_streams.py: omnimalloc's multi-stream instances become the same problem here."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

pytest.importorskip("omnimalloc")

from omnimalloc.allocators import GreedyAllocator

from experiments.bench_streams import generate, offsets_by_id, problem_from_allocations
from gaplanner import find_violation


@pytest.mark.parametrize(("pattern", "threads"), [("ring", 4), ("fork_join", 4), ("independent", 8)])
def test_conflicts_are_omnimallocs(pattern: str, threads: int) -> None:
    allocations = generate(pattern, threads, 40, seed=3)
    problem = problem_from_allocations(allocations)
    ours = set(zip(*(side.tolist() for side in problem.conflicts.edges()), strict=True))
    theirs = {
        (a, b)
        for a, b in itertools.combinations(range(len(allocations)), 2)
        if allocations[a].conflicts_with(allocations[b])
    }
    assert {(min(a, b), max(a, b)) for a, b in ours} == theirs
    assert theirs  # a pattern whose buffers never meet would test nothing
    assert problem.sizes.tolist() == [a.size for a in allocations]


def test_offsets_are_matched_back_by_id_whatever_the_order() -> None:
    allocations = generate("barrier", 4, 30, seed=1)
    problem = problem_from_allocations(allocations)
    placed = list(GreedyAllocator().allocate(allocations))
    random.Random(0).shuffle(placed)
    offsets = offsets_by_id(problem, placed)
    by_id = {str(a.id): a.offset for a in placed}
    assert offsets.tolist() == [by_id[block] for block in problem.ids]
    assert find_violation(problem, offsets) is None
    # the same offsets in the generator's order break the plan once shuffled: the matching matters
    assert find_violation(problem, np.array([a.offset for a in placed])) is not None


def test_the_benchmark_writes_its_table(tmp_path, monkeypatch) -> None:
    from experiments.bench_streams import main
    from gaplanner import native

    monkeypatch.setenv("GAPLANNER_RESULTS", str(tmp_path / "results"))
    argv = ["--threads", "3", "--blocks", "16", "--seeds", "0", "--patterns", "ring", "barrier"]
    argv += ["--time-limit", "0.05", "--ga-threads", str(native.threads())]
    assert main(argv) == 0
    text = (tmp_path / "results" / "streams.md").read_text()
    assert "| 3 | ring | 1 |" in text and "| 3 | barrier | 1 |" in text and "| all | **all** | 2 |" in text
    assert "python -m experiments.bench_streams --threads 3" in text
