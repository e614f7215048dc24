"""The planner-vs-oracle campaign: a short run finds nothing, and its oracle catches what it should."""

from __future__ import annotations

import pytest

from experiments import campaign, oracle
from gaplanner.solve import ALGORITHMS, solve

#: Inputs the campaign once failed on (each a case document of experiments/campaign.py).
FOUND = {
    # pooled buffer lists dropped their pinned offsets and alignment
    "pooled pins": {
        "kind": "pool",
        "pool": {
            "together": "concurrent",
            "models": [
                {
                    "id": "m0",
                    "document": {
                        "alignment": 1,
                        "buffers": [{"id": "b0", "lower": 2, "upper": 5, "size": 15}],
                    },
                },
                {
                    "id": "m1",
                    "document": {
                        "alignment": 2,
                        "buffers": [
                            {"id": "b0", "lower": 1, "upper": 2, "size": 1, "offset": 2},
                            {"id": "b1", "lower": 0, "upper": 3, "size": 3},
                        ],
                    },
                },
            ],
        },
    },
    # one output written over both inputs of the first operator
    "two hosts": {
        "kind": "multicore",
        "rules": {"keep_outputs": False, "views": True, "inplace": "auto"},
        "document": {
            "operators": [
                {
                    "id": "op0",
                    "inputs": ["x0", "x1"],
                    "outputs": ["t0a"],
                    "core": 1,
                    "inplace": {"t0a": ["x0", "x1"]},
                }
            ],
            "tensors": [{"id": "x0", "size": 6}, {"id": "x1", "size": 4}, {"id": "t0a", "size": 4}],
            "outputs": ["t0a"],
        },
    },
    # an output larger than its input, taken because the input's block was larger
    "larger than the input": {
        "kind": "graph",
        "rules": {"keep_outputs": False, "views": True, "inplace": "always"},
        "document": {
            "operators": [
                {"id": "op0", "inputs": ["x1"], "outputs": ["t2a"], "inplace": {"t2a": "x1"}},
                {"id": "op1", "inputs": ["t2a"], "outputs": ["t3a"], "inplace": {"t3a": "t2a"}},
            ],
            "tensors": [{"id": "x1", "size": 11}, {"id": "t2a", "size": 10}, {"id": "t3a", "size": 11}],
        },
    },
}


def test_a_short_campaign_finds_no_failure() -> None:
    tally, reached = campaign.run(0, 120)
    assert reached == 120 and tally.problems == 120
    # every algorithm planned every accepted problem
    assert tally.plans > 4 * (tally.problems - tally.refused)
    assert tally.with_optimum > tally.problems // 2
    assert tally.failed == 0, tally.failures[:1]


def test_every_kind_of_input_is_made() -> None:
    kinds = {campaign.make_case(seed)["kind"] for seed in range(len(campaign.KINDS))}
    assert kinds == set(campaign.KINDS)
    assert campaign.make_case(17) == campaign.make_case(17)  # a seed is one problem, always


@pytest.mark.parametrize("name", list(FOUND))
def test_inputs_the_campaign_found_plan_correctly(name: str) -> None:
    tally = campaign.Tally()
    case = FOUND[name]
    problem = campaign.build(case)
    reading = campaign.read(case)
    best, _ = oracle.optimum(reading)
    assert problem.lower_bound <= best
    for algorithm in ALGORITHMS:
        if algorithm == "best-fit-coalescing" and problem.has_pinned:
            continue
        plan = solve(problem, algorithm, campaign._settings(algorithm, 0))
        assert oracle.violation(reading, plan.tensor_offsets(), plan.peak) is None, algorithm
        assert plan.peak >= best and (not plan.optimal or plan.peak == best)
        tally.plans += 1
    assert tally.plans >= 4


def test_pooled_graphs_honour_outputs_copied_out() -> None:
    """The campaign found pooled graphs keeping every output to its model's end under any rules."""
    from gaplanner.pool import pool_problem
    from gaplanner.rules import Rules
    from gaplanner.schema import parse_document

    doc = parse_document(
        {
            "tensors": [{"id": t, "size": 8} for t in "xyzw"],
            "operators": [
                {"id": "a", "inputs": ["x"], "outputs": ["y"]},
                {"id": "b", "inputs": ["x"], "outputs": ["z"]},
                {"id": "c", "inputs": ["z"], "outputs": ["w"]},
            ],
        }
    )
    models = [("m0", doc), ("m1", doc)]
    kept = pool_problem(models, "sequential", rules=Rules())
    copied = pool_problem(models, "sequential", rules=Rules(keep_outputs=False))
    # kept, y lives beside z and w to the model's end; copied out, at most two tensors live at once
    assert (kept.lower_bound, copied.lower_bound) == (24, 16)


# --- the oracle itself -----------------------------------------------------------------------------


def test_the_oracle_refuses_overlaps_misplaced_pins_and_views() -> None:
    doc = {
        "tensors": [{"id": "x", "size": 4, "offset": 0}, {"id": "h", "size": 4}, {"id": "v", "size": 4}],
        "operators": [
            {"id": "a", "inputs": ["x"], "outputs": ["h"]},
            {"id": "b", "inputs": ["h"], "outputs": ["v"], "views": {"v": "h"}},
        ],
    }
    reading = oracle.graph_reading(doc)
    assert oracle.violation(reading, {"x": 0, "h": 4, "v": 4}, 8) is None
    assert "share bytes" in oracle.violation(reading, {"x": 0, "h": 2, "v": 2}, 6)
    assert "pinned" in oracle.violation(reading, {"x": 4, "h": 0, "v": 0}, 8)
    assert "view" in oracle.violation(reading, {"x": 0, "h": 4, "v": 8}, 12)
    assert "claimed peak" in oracle.violation(reading, {"x": 0, "h": 4, "v": 4}, 7)
    assert oracle.optimum(reading)[0] == 8


def test_the_oracle_takes_in_place_writes_only_where_the_input_dies() -> None:
    def doc(read_later: bool) -> dict:
        ops = [{"id": "a", "inputs": ["x"], "outputs": ["y"], "inplace": {"y": "x"}}]
        ops += [{"id": "b", "inputs": ["x", "y"], "outputs": ["z"]}] if read_later else []
        sizes = {"x": 8, "y": 8, "z": 2}
        return {
            "tensors": [{"id": t, "size": s} for t, s in sizes.items() if read_later or t != "z"],
            "operators": ops,
        }

    assert oracle.optimum(oracle.graph_reading(doc(False)))[0] == 8
    assert oracle.optimum(oracle.graph_reading(doc(False), inplace="never"))[0] == 16
    assert oracle.optimum(oracle.graph_reading(doc(True)))[0] == 18


def test_the_oracle_reads_vector_clocks_and_pools() -> None:
    # a ends before b starts in one stream only: they overlap in time
    clocks = oracle.interval_reading(["a", "b"], [4, 4], [[0, 0], [2, 0]], [[2, 3], [3, 4]], 1, [-1, -1])
    assert oracle.optimum(clocks)[0] == 8
    apart = oracle.interval_reading(["a", "b"], [4, 4], [[0, 0], [2, 3]], [[2, 3], [3, 4]], 1, [-1, -1])
    assert oracle.optimum(apart)[0] == 4
    one = oracle.interval_reading(["a"], [4], [0], [1], 4, [-1])
    assert oracle.optimum(oracle.pool_reading([("m", one), ("n", one)], "sequential"))[0] == 4
    assert oracle.optimum(oracle.pool_reading([("m", one), ("n", one)], "concurrent"))[0] == 8
