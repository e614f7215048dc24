"""Vector-clock lifetimes (omnimalloc's CSV): conflicts by the definition, bounds, plans, errors."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaplanner import InputError, load_problem
from gaplanner.cli import main
from gaplanner.problem.loading import problem_from_csv_text
from gaplanner.problem.problem import problem_from_clocks
from gaplanner.search.baselines import BASELINES

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def done_before(a_end: tuple[int, ...], b_start: tuple[int, ...]) -> bool:
    return all(x <= y for x, y in zip(a_end, b_start, strict=True))


@st.composite
def clock_buffers(draw: st.DrawFn, max_buffers: int = 6):
    d = draw(st.integers(2, 3))
    n = draw(st.integers(1, max_buffers))
    lower = np.array([[draw(st.integers(0, 4)) for _ in range(d)] for _ in range(n)])
    upper = lower + np.array([[draw(st.integers(0, 3)) for _ in range(d)] for _ in range(n)])
    upper[np.arange(n), draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n))] += 1
    sizes = np.array(draw(st.lists(st.integers(1, 6), min_size=n, max_size=n)))
    return sizes, lower, upper


@SETTINGS
@given(clock_buffers())
def test_conflicts_bounds_and_plans_follow_the_happens_before_definition(buffers) -> None:
    sizes, lower, upper = buffers
    problem = problem_from_clocks(sizes, lower, upper)
    n = len(sizes)
    clash = {
        (a, b)
        for a, b in itertools.combinations(range(n), 2)
        if not done_before(tuple(upper[a]), tuple(lower[b]))
        and not done_before(tuple(upper[b]), tuple(lower[a]))
    }
    edges = set(zip(*(e.tolist() for e in problem.conflicts.edges()), strict=True))
    assert edges == clash
    best = None
    for order in itertools.permutations(range(n)):  # first-fit over every order reaches the optimum
        at: dict[int, int] = {}
        for b in order:
            offset = 0
            for start, end in sorted(
                (at[c], at[c] + sizes[c]) for c in at if (min(b, c), max(b, c)) in clash
            ):
                if start >= offset + sizes[b]:
                    break
                offset = max(offset, end)
            at[b] = offset
        peak = max(at[b] + sizes[b] for b in at)
        best = peak if best is None else min(best, peak)
    assert problem.lower_bound <= best
    for algorithm in BASELINES.values():
        plan = algorithm(problem)
        for a, b in clash:
            apart = (
                plan.offsets[a] + sizes[a] <= plan.offsets[b] or plan.offsets[b] + sizes[b] <= plan.offsets[a]
            )
            assert apart
        assert plan.peak >= best and (not plan.optimal or plan.peak == best)


def test_an_omnimalloc_file_plans_and_writes_back_its_clocks(tmp_path: Path, capsys) -> None:
    source = tmp_path / "streams.csv"
    source.write_text("id,lower,upper,size\na,0:0,2:0,4\nb,0:0,0:2,4\nc,2:0,3:1,8\nd,0:2,2:3,8\n")
    problem = load_problem(source)
    assert not problem.interval_conflicts and problem.clocks is not None
    # a conflicts with b and d, c with b and d (a ends where c starts, b where d starts): c + d = 16
    assert problem.lower_bound == 16
    assert set(zip(*(e.tolist() for e in problem.conflicts.edges()), strict=True)) == {
        (0, 1),
        (0, 3),
        (1, 2),
        (2, 3),
    }
    plan_file = tmp_path / "plan.csv"
    assert (
        main(["plan", str(source), "--algorithm", "greedy-size", "--format", "csv", "-o", str(plan_file)])
        == 0
    )
    lines = plan_file.read_text().splitlines()
    assert lines[0] == "id,lower,upper,size,offset" and lines[1].startswith("a,0:0,2:0,4,")
    assert main(["verify", str(source), str(plan_file)]) == 0


@pytest.mark.parametrize(
    ("text", "message", "field"),
    [
        (
            "id,lower,upper,size\na,0:0,1:1,4\nb,0:0:0,1:1:1,4\n",
            "3 components; the first row's have 2",
            "line 3",
        ),
        ("id,lower,upper,size\na,0:2,1:1,4\n", "must come after lower", "buffers[0].upper"),
        ("id,lower,upper,size\na,0:0,0:0,4\n", "must come after lower", "buffers[0].upper"),
        ("id,lower,upper,size\na,0:x,1:1,4\n", "expected an integer or a clock", "line 2, column lower"),
    ],
)
def test_bad_clocks_are_one_clear_error(text: str, message: str, field: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        problem_from_csv_text(text)
    assert (caught.value.field or "").startswith(field)


def test_conflicts_agree_with_omnimalloc_on_its_sync_patterns(tmp_path: Path) -> None:
    sources = pytest.importorskip("omnimalloc.benchmark.sources.sync_patterns")
    from omnimalloc.analysis._conflicts import conflicts
    from omnimalloc.io import save_allocation

    for pattern in sources.SYNC_PATTERNS:
        allocations = sources.SyncPatternSource(
            num_allocations=48, num_threads=4, pattern=pattern
        ).get_allocations()
        problem = load_problem(save_allocation(allocations, tmp_path / f"{pattern.value}.csv")[0])
        theirs = {frozenset((str(a), str(b))) for a, others in conflicts(allocations).items() for b in others}
        a, b = problem.conflicts.edges()
        assert {frozenset((problem.ids[i], problem.ids[j])) for i, j in zip(a, b, strict=True)} == theirs


@pytest.mark.parametrize("to", ["buffers", "minimalloc", "omnimalloc"])
def test_convert_round_trips_an_interval_problem(to: str, tmp_path: Path) -> None:
    from gaplanner.problem.convert import convert

    problem = load_problem("example:seed000_queue")
    target = tmp_path / ("converted.json" if to == "buffers" else "converted.csv")
    target.write_text(convert(problem, to))
    again = load_problem(target)
    assert again.ids == problem.ids and again.lower_bound == problem.lower_bound
    assert (again.lower == problem.lower).all() and (again.upper == problem.upper).all()


def test_convert_keeps_clocks_and_refuses_what_has_no_form(tmp_path: Path, capsys) -> None:
    source = tmp_path / "streams.csv"
    source.write_text("id,lower,upper,size\na,0:0,2:0,4\nb,0:0,0:2,4\n")
    out = tmp_path / "out.csv"
    assert main(["convert", str(source), "--to", "omnimalloc", "-o", str(out)]) == 0
    assert out.read_text() == source.read_text()
    assert main(["convert", str(source), "--to", "minimalloc"]) == 2
    assert "no MiniMalloc form" in capsys.readouterr().err
    assert main(["convert", "zoo:resnet50@2", "--to", "minimalloc"]) == 2
    assert main(["convert", "example:seed000_queue", "--to", "graph", "-o", str(tmp_path / "g.json")]) == 0
    assert load_problem(tmp_path / "g.json").lower_bound == 5120
