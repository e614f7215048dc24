"""Memories with capacities and costs: placement, verification, bad input and the fits question."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaplanner.cli import EXIT_DOES_NOT_FIT, main
from gaplanner.documents.schema import parse_document
from gaplanner.errors import InputError
from gaplanner.plans.verify import find_memory_violation
from gaplanner.problem.loading import load_problem
from gaplanner.problem.problem import build_problem, problem_from_arrays
from gaplanner.search.ga import GASettings
from gaplanner.search.memories.decoder import MemoryDecoder
from gaplanner.solve import solve
from tests.oracles import brute_force_peaks, conflict_pairs

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
QUICK = GASettings(generations=8, time_limit=5.0, population=8, elite=1, stall_generations=None)


@st.composite
def memory_documents(draw: st.DrawFn, max_blocks: int = 5) -> dict:
    """Tiny buffer lists with two or three memories; the last one sometimes bounded too."""
    n = draw(st.integers(1, max_blocks))
    buffers = []
    for i in range(n):
        lower = draw(st.integers(0, 6))
        buffers.append(
            {
                "id": f"b{i}",
                "lower": lower,
                "upper": lower + draw(st.integers(1, 5)),
                "size": draw(st.integers(1, 9)),
            }
        )
    largest = max(b["size"] for b in buffers)
    count = draw(st.integers(2, 3))
    memories = [
        {
            "id": f"m{k}",
            "capacity": draw(st.integers(largest, 3 * largest)),
            "alignment": draw(st.sampled_from([1, 2])),
        }
        for k in range(count)
    ]
    if draw(st.booleans()):
        del memories[-1]["capacity"]
    return {"memories": memories, "buffers": buffers}


def _sub_peak(problem, blocks: list[int], alignment: int) -> int:
    """The least peak of ``blocks`` alone in a memory of that alignment (brute force over orders)."""
    if not blocks:
        return 0
    idx = np.array(blocks)
    sub = problem_from_arrays(problem.sizes[idx], problem.lower[idx], problem.upper[idx], alignment=alignment)
    return brute_force_peaks(sub)[0]


def optimum_cost(problem) -> float:
    """The least access cost over every assignment of blocks to memories that packs within the capacities."""
    system = problem.memories
    table, capacities = system.cost_table(), system.capacities
    best = np.inf
    for assignment in itertools.product(range(len(capacities)), repeat=problem.n):
        cost = table[np.arange(problem.n), assignment].sum()
        if cost >= best:
            continue
        fits = all(
            capacities[m] < 0
            or _sub_peak(
                problem, [b for b in range(problem.n) if assignment[b] == m], system.memories[m].alignment
            )
            <= capacities[m]
            for m in range(len(capacities))
        )
        if fits:
            best = cost
    return best


def _check_independently(problem, memory_of: np.ndarray, offsets: np.ndarray) -> None:
    """Every block in a memory within its capacity; conflicting blocks in one memory disjoint."""
    system = problem.memories
    assert ((memory_of >= 0) & (memory_of < len(system.memories))).all()
    for b in range(problem.n):
        capacity = system.memories[memory_of[b]].capacity
        assert offsets[b] >= 0 and offsets[b] % system.memories[memory_of[b]].alignment == 0
        assert capacity is None or offsets[b] + problem.sizes[b] <= capacity
    ids = {bid: i for i, bid in enumerate(problem.ids)}
    for pair in conflict_pairs(problem):
        a, b = (ids[x] for x in pair)
        if memory_of[a] == memory_of[b]:
            ends = offsets + problem.sizes
            assert offsets[a] >= ends[b] or offsets[b] >= ends[a]


@SETTINGS
@given(memory_documents())
def test_searches_against_the_brute_force_optimum(data: dict) -> None:
    problem = build_problem(parse_document(data))
    optimum = optimum_cost(problem)
    orders = np.array(list(itertools.permutations(range(problem.n))), np.int64)
    decoded = MemoryDecoder.for_problem(problem).decode(orders)
    # Some order reaches the optimum: the decoder can express every cheapest placement.
    assert decoded.costs.min() == optimum
    plans = {}
    for algorithm in ("spill-greedy", "first-fit", "ga"):
        try:
            plans[algorithm] = solve(problem, algorithm, QUICK if algorithm == "ga" else None)
        except Exception as exc:  # a search may find no placement, but only when there is room for doubt
            assert type(exc).__name__ == "DoesNotFit"
            continue
        plan = plans[algorithm]
        _check_independently(problem, plan.memory_of, plan.offsets)
        assert plan.cost >= optimum
        assert plan.cost == problem.memories.cost(plan.memory_of)
    if not np.isfinite(optimum):
        assert not plans  # no placement exists: none may be claimed
    if "spill-greedy" in plans:
        assert plans["ga"].cost <= plans["spill-greedy"].cost  # the GA starts from the spill order


def _doc(**changes: object) -> dict:
    doc = {
        "memories": [{"id": "sram", "capacity": 64}, {"id": "dram"}],
        "buffers": [
            {"id": "a", "lower": 0, "upper": 2, "size": 40},
            {"id": "b", "lower": 1, "upper": 3, "size": 40},
        ],
    }
    doc.update(changes)
    return doc


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        (
            {"buffers": [{"id": "a", "lower": 0, "upper": 1, "size": 4, "memory": "tcm"}]},
            "buffers[0].memory",
            "tcm",
        ),
        ({"memories": [{"id": "sram", "capacity": 0}, {"id": "dram"}]}, "memories[0].capacity", "greater"),
        ({"memories": [{"id": "sram", "capacity": 1.5}, {"id": "dram"}]}, "memories[0].capacity", "integer"),
        ({"memories": [{"id": "sram"}, {"id": "dram"}]}, "memories[0].capacity", "only the last"),
        (
            {"memories": [{"id": "sram", "capacity": 64, "alignment": 3}, {"id": "dram"}]},
            "memories[0].alignment",
            "power of two",
        ),
        (
            {"memories": [{"id": "sram", "capacity": 16}, {"id": "dram", "capacity": 32}]},
            "buffers[0].size",
            "no memory",
        ),
        ({"memories": [{"id": "m", "capacity": 64}, {"id": "m"}]}, "memories[1].id", "duplicate"),
        (
            {"memories": [{"id": "sram", "capacity": 64, "read_cost": -1}, {"id": "dram"}]},
            "memories[0].read_cost",
            "greater",
        ),
        (
            {"buffers": [{"id": "a", "lower": 0, "upper": 1, "size": 4, "offset": 8}]},
            "buffers[0].offset",
            "needs a 'memory'",
        ),
        (
            {"buffers": [{"id": "a", "lower": 0, "upper": 1, "size": 40, "offset": 32, "memory": "sram"}]},
            "buffers[0].offset",
            "beyond memory 'sram'",
        ),
    ],
)
def test_bad_memories_name_the_field(changes: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        build_problem(parse_document(_doc(**changes)))
    assert caught.value.field == field
    assert words in caught.value.reason


def test_a_memory_pin_without_memories_is_refused() -> None:
    doc = {"buffers": [{"id": "a", "lower": 0, "upper": 1, "size": 4, "memory": "sram"}]}
    with pytest.raises(InputError) as caught:
        build_problem(parse_document(doc))
    assert caught.value.field == "buffers[0].memory"


def test_without_memories_nothing_changes() -> None:
    doc = {
        "buffers": [
            {"id": "a", "lower": 0, "upper": 2, "size": 4},
            {"id": "b", "lower": 1, "upper": 3, "size": 4},
        ]
    }
    problem = build_problem(parse_document(doc))
    assert problem.memories is None and problem.lower_bound == 8


def test_the_verifier_checks_each_memory_on_its_own() -> None:
    problem = build_problem(parse_document(_doc()))
    # a and b are live at once: the same bytes in different memories are fine, in one memory not.
    assert find_memory_violation(problem, np.array([0, 1]), np.array([0, 0])) is None
    assert "overlap in memory 'dram'" in find_memory_violation(problem, np.array([1, 1]), np.array([0, 0]))
    assert "beyond memory 'sram'" in find_memory_violation(problem, np.array([0, 0]), np.array([0, 40]))
    pinned = build_problem(
        parse_document(_doc(buffers=[{"id": "a", "lower": 0, "upper": 1, "size": 4, "memory": "dram"}]))
    )
    assert "pinned to memory 'dram'" in find_memory_violation(pinned, np.array([0]), np.array([0]))


def test_a_graph_counts_writes_and_reads_per_byte() -> None:
    doc = {
        "memories": [{"id": "sram", "capacity": 100, "read_cost": 1, "write_cost": 2}, {"id": "dram"}],
        "tensors": [{"id": "x", "size": 10}, {"id": "y", "size": 20}, {"id": "z", "size": 30}],
        "operators": [
            {"id": "f", "inputs": ["x"], "outputs": ["y"], "workspace": 5},
            {"id": "g", "inputs": ["x", "y"], "outputs": ["z"]},
        ],
    }
    problem = build_problem(parse_document(doc))
    system = problem.memories
    block = dict(zip(problem.ids, range(problem.n), strict=True))
    # x: written by the caller, read by f and g; y: written by f, read by g;
    # z: written by g, read by the caller.
    assert system.write_bytes[block["x"]] == 10 and system.read_bytes[block["x"]] == 20
    assert system.write_bytes[block["y"]] == 20 and system.read_bytes[block["y"]] == 20
    assert system.write_bytes[block["z"]] == 30 and system.read_bytes[block["z"]] == 30
    assert system.write_bytes[block["f#workspace"]] == 5 and system.read_bytes[block["f#workspace"]] == 5
    # Defaults: dram costs 10 per byte (10 times the read cost before it), writes as reads.
    assert system.memories[1].read_cost == 10 and system.memories[1].write_cost == 10
    plan = solve(problem, "ga", QUICK)
    assert plan.cost == pytest.approx(system.cost_lower_bound())  # 65 bytes live at most: all fit in sram
    assert {row["memory"] for row in plan.to_dict()["tensors"]} == {"sram"}


def test_spill_greedy_fills_the_fast_memory_by_size() -> None:
    problem = build_problem(parse_document(_doc()))
    plan = solve(problem, "spill-greedy")
    assert list(plan.memory_of) == [0, 1]  # a (first by size, then start) takes sram, b spills
    assert plan.to_csv().splitlines()[1:] == ["a,0,2,40,sram,0", "b,1,3,40,dram,0"]
    assert [m["peak"] for m in plan.to_dict()["memories"]] == [40, 40]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_capacity_fits_with_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = run(capsys, "plan", "example:buffers_input12", "--capacity", "12", "-q", "--workers", "1")
    assert code == 0 and answer["fits"] is True and answer["peak"] <= 12 and len(answer["blocks"]) == 5


def test_capacity_below_the_bound_does_not_fit_with_the_proof(capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = run(capsys, "plan", "example:buffers_input12", "--capacity", "11", "-q")
    assert code == EXIT_DOES_NOT_FIT and answer["fits"] is False
    assert answer["lower_bound"] == 12 and "12 bytes" in answer["proof"]


def test_one_memory_with_a_capacity_asks_the_same(capsys, tmp_path: Path) -> None:
    doc = {"memories": [{"id": "tcm", "capacity": 60}], "buffers": _doc()["buffers"]}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc))
    code, answer = run(capsys, "plan", str(path), "-q")
    assert code == EXIT_DOES_NOT_FIT and answer["fits"] is False and answer["proof"]
    doc["memories"][0]["capacity"] = 80
    path.write_text(json.dumps(doc))
    code, answer = run(capsys, "plan", str(path), "-q", "--workers", "1")
    assert code == 0 and answer["fits"] is True and answer["peak"] == 80


def test_bounded_memories_that_cannot_hold_the_blocks_do_not_fit(capsys, tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    path.write_text(
        json.dumps(_doc(memories=[{"id": "sram", "capacity": 40}, {"id": "dram", "capacity": 39}]))
    )
    code, answer = run(capsys, "plan", str(path), "-q", "--time-limit", "1")
    assert code == EXIT_DOES_NOT_FIT and answer["fits"] is False and "79 bytes" in answer["proof"]


def test_the_example_plans_across_its_memories() -> None:
    problem = load_problem("example:sram_dram")
    spill = solve(problem, "spill-greedy")
    ga = solve(problem, "ga", QUICK)
    assert ga.cost <= spill.cost
    _check_independently(problem, ga.memory_of, ga.offsets)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_plan_across_memories_verifies_and_a_wrong_memory_does_not(
    capsys, tmp_path: Path, fmt: str
) -> None:
    plan = tmp_path / f"plan.{fmt}"
    assert (
        main(
            [
                "plan",
                "example:sram_dram",
                "-q",
                "--algorithm",
                "spill-greedy",
                "--format",
                fmt,
                "-o",
                str(plan),
            ]
        )
        == 0
    )
    assert main(["verify", "example:sram_dram", str(plan)]) == 0
    assert capsys.readouterr().out.startswith("valid:")
    text = plan.read_text()
    plan.write_text(text.replace("dram", "sram"))  # everything in sram: the pinned image may not move there
    assert main(["verify", "example:sram_dram", str(plan)]) == 2
    assert "pinned to memory 'dram'" in capsys.readouterr().err
