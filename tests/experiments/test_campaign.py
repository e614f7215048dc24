"""The planner-vs-oracle campaign: a short run finds nothing, and its oracle catches what it should."""

from __future__ import annotations

import pytest

from experiments import campaign, oracle
from gaplanner.solve import solve

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
    # pooled graphs aligned every tensor to the strictest model's alignment: the exact search proved
    # optimal a peak above the least under each model's own alignment
    "pooled alignments": {
        "kind": "pool",
        "rules": {"keep_outputs": True, "views": True, "inplace": "never"},
        "pool": {
            "together": "concurrent",
            "models": [
                {
                    "id": "m0",
                    "document": {
                        "operators": [{"id": "op0", "inputs": ["x0"], "outputs": ["t0a"], "workspace": 5}],
                        "tensors": [
                            {"id": "x0", "size": 9, "alignment": 8},
                            {"id": "x1", "size": 7},
                            {"id": "t0a", "size": 14, "offset": 16},
                        ],
                        "outputs": ["t0a"],
                    },
                },
                {
                    "id": "m1",
                    "document": {
                        "operators": [
                            {"id": "op0", "inputs": ["x0"], "outputs": ["t0a"], "inplace": {"t0a": "x0"}}
                        ],
                        "alignment": 4,
                        "tensors": [
                            {"id": "x0", "size": 1},
                            {"id": "x1", "size": 2, "alignment": 2},
                            {"id": "t0a", "size": 2},
                        ],
                    },
                },
            ],
        },
    },
    # a shared tensor died at its last reader when outputs were copied out
    "shared, outputs copied out": {
        "kind": "shared",
        "rules": {"keep_outputs": False, "views": True, "inplace": "auto"},
        "pool": {
            "together": "sequential",
            "shared": ["x0"],
            "models": [
                {
                    "id": "m0",
                    "document": {
                        "operators": [
                            {
                                "id": "op0",
                                "inputs": ["x0"],
                                "outputs": ["t0a", "t0b"],
                                "views": {"t0a": "x0"},
                            },
                            {"id": "op1", "inputs": ["t0b"], "outputs": ["t1a"], "workspace": 2},
                        ],
                        "tensors": [
                            {"id": "x0", "size": 5},
                            {"id": "x1", "size": 9},
                            {"id": "t0a", "size": 5},
                            {"id": "t0b", "size": 3},
                            {"id": "t1a", "size": 13, "alignment": 2},
                        ],
                    },
                },
                {
                    "id": "m1",
                    "document": {
                        "operators": [
                            {"id": "op0", "inputs": ["x1"], "outputs": ["t0a"], "inplace": {"t0a": "x1"}}
                        ],
                        "alignment": 4,
                        "tensors": [
                            {"id": "x0", "size": 5},
                            {"id": "x1", "size": 5},
                            {"id": "t0a", "size": 6},
                        ],
                        "outputs": ["t0a"],
                    },
                },
            ],
        },
    },
    # the oracle took one model's alignment for a shared tensor; the library aligns it as each asks
    "shared alignment": {
        "kind": "shared",
        "pool": {
            "models": [
                {
                    "id": "m0",
                    "document": {
                        "operators": [
                            {"id": "op0", "inputs": ["x0"], "outputs": ["t0a"], "inplace": {"t0a": "x0"}},
                            {"id": "op1", "inputs": ["x0"], "outputs": ["t1a"]},
                            {"id": "op2", "inputs": ["x1"], "outputs": ["t2a"], "views": {"t2a": "x1"}},
                            {"id": "op3", "inputs": ["x0", "x1"], "outputs": ["t3a"], "views": {"t3a": "x1"}},
                        ],
                        "alignment": 2,
                        "tensors": [
                            {"id": "x0", "size": 9},
                            {"id": "x1", "size": 11},
                            {"id": "t0a", "size": 9},
                            {"id": "t1a", "size": 13},
                            {"id": "t2a", "size": 11},
                            {"id": "t3a", "size": 11},
                        ],
                    },
                },
                {
                    "id": "m1",
                    "document": {
                        "operators": [{"id": "op0", "inputs": ["x1"], "outputs": ["t0a"], "workspace": 7}],
                        "tensors": [
                            {"id": "x0", "size": 9},
                            {"id": "x1", "size": 11},
                            {"id": "t0a", "size": 5, "offset": 16},
                        ],
                    },
                },
            ],
            "together": "concurrent",
            "shared": ["x0"],
        },
        "rules": {"keep_outputs": True, "views": True, "inplace": "never"},
    },
}


@pytest.mark.slow
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
    campaign.check(FOUND[name], 0, tally)
    assert tally.plans >= 4
    assert tally.failed == 0, tally.failures[:1]


def test_pooled_graphs_honour_outputs_copied_out() -> None:
    """The campaign found pooled graphs keeping every output to its model's end under any rules."""
    from gaplanner.documents.rules import Rules
    from gaplanner.documents.schema import parse_document
    from gaplanner.problem.pools import pool_problem

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


# --- the checks of the new kinds reject planted faults ----------------------------------------------

#: SRAM holds 8 bytes at multiples of 4; 'a' must go there. 'b' overlaps 'a' in time, so it costs DRAM;
#: 'c' starts when 'a' ends and takes its bytes: 6*(1+1) + 4*(5+7) + 4*(1+1) = 68.
MEMORY_DOC = {
    "memories": [
        {"id": "sram", "capacity": 8, "alignment": 4, "read_cost": 1},
        {"id": "dram", "read_cost": 5, "write_cost": 7},
    ],
    "buffers": [
        {"id": "a", "lower": 0, "upper": 2, "size": 6, "memory": "sram"},
        {"id": "b", "lower": 1, "upper": 3, "size": 4},
        {"id": "c", "lower": 2, "upper": 4, "size": 4},
    ],
}


def test_the_memory_brute_force_and_costs_have_known_answers() -> None:
    reading = oracle.buffer_memory_reading(MEMORY_DOC)
    assert oracle.memory_optimum(reading) == 68
    assert oracle.access_cost(reading, {"a": "sram", "b": "sram", "c": "sram"}) == 28
    # without costs the first memory costs 1, each next 10 times the one before; a write as a read
    specs = oracle.memory_specs({"memories": [{"id": "s", "capacity": 4}, {"id": "d"}]})
    assert [(m.read_cost, m.write_cost) for m in specs] == [(1.0, 1.0), (10.0, 10.0)]
    specs = oracle.memory_specs({"memories": [{"id": "s", "capacity": 4, "read_cost": 2}, {"id": "d"}]})
    assert specs[1].read_cost == 20.0
    # a graph: the caller writes the input, a view writes nothing, the caller reads the output
    graph = {
        "memories": [{"id": "s", "capacity": 64}, {"id": "d"}],
        "tensors": [{"id": "x", "size": 4}, {"id": "y", "size": 4}, {"id": "v", "size": 4}],
        "operators": [
            {"id": "f", "inputs": ["x"], "outputs": ["y"], "workspace": 2},
            {"id": "g", "inputs": ["y"], "outputs": ["v"], "views": {"v": "y"}},
        ],
    }
    reading = oracle.graph_memory_reading(graph)
    assert (reading.written, reading.read) == (
        {"x": 4, "y": 4, "v": 0, "f#workspace": 2},
        {"x": 4, "y": 4, "v": 4, "f#workspace": 2},
    )


def _memory_plan():
    """The library's plan of MEMORY_DOC, as the campaign reads it, and the reading."""
    case = {"kind": "memories", "document": MEMORY_DOC}
    plan = solve(campaign.build(case), "spill-greedy")
    return campaign.read(case), plan, campaign.memory_placement(plan)


def test_a_memory_plan_passes_and_each_planted_fault_is_caught() -> None:
    reading, plan, (offsets, memory_of, peaks) = _memory_plan()
    best = oracle.memory_optimum(reading)

    def findings(offsets=offsets, memory_of=memory_of, peaks=peaks, cost=plan.cost, bound=None, optimal=None):
        bound = plan.cost_lower_bound if bound is None else bound
        optimal = plan.optimal if optimal is None else optimal
        placement = (offsets, memory_of, peaks)
        return campaign.memory_plan_findings(reading, placement, cost, bound, optimal, best)

    assert findings() == []
    assert memory_of == {"a": "sram", "b": "dram", "c": "sram"} and plan.cost == 68

    def first(found: list) -> tuple[str, str]:
        assert found, "the fault was not caught"
        return found[0]

    # a block pinned to SRAM moved to DRAM, with the peaks and cost to match
    moved = first(findings(memory_of={**memory_of, "a": "dram"}, peaks={"sram": 4, "dram": 10}, cost=92))
    assert moved[0] == "invalid" and "pinned to sram" in moved[1]
    # beyond SRAM's capacity, and off its alignment
    assert "beyond sram" in first(findings(offsets={**offsets, "c": 8}, peaks={"sram": 12, "dram": 4}))[1]
    assert "alignment 4" in first(findings(offsets={**offsets, "c": 2}, peaks={"sram": 6, "dram": 4}))[1]
    # two blocks live at once in one memory
    both = {**memory_of, "b": "sram"}
    clash = first(
        findings(offsets={**offsets, "b": 4}, memory_of=both, peaks={"sram": 8, "dram": 0}, cost=28)
    )
    assert "share bytes" in clash[1]
    # a claimed cost or peak the placement does not have
    assert "claimed cost" in first(findings(cost=67))[1]
    assert "claimed peak" in first(findings(peaks={"sram": 8, "dram": 5}))[1]
    # claims about the optimum: below it, a bound above it, optimal when it is not
    assert "below optimum" in {what for what, _ in findings(cost=60)}
    assert first(findings(bound=70))[0] == "bound above optimum"
    worse = {"a": "sram", "b": "dram", "c": "dram"}
    assert first(findings(memory_of=worse, offsets={**offsets, "c": 4}, peaks={"sram": 6, "dram": 8},
                          cost=108, optimal=True))[0] == "false optimal"  # fmt: skip


def test_the_one_arena_checks_catch_false_claims_of_the_exact_search() -> None:
    case = FOUND["pooled alignments"]
    reading = campaign.read(case)
    best, at = oracle.optimum(reading)
    plan = solve(campaign.build(case), "first-fit")
    offsets = plan.tensor_offsets()
    assert plan.peak > best and campaign.plan_findings(reading, offsets, plan.peak, 0, False, best) == []
    kinds = {what for what, _ in campaign.plan_findings(reading, offsets, plan.peak, 0, True, best, True)}
    assert kinds == {"false optimal", "exact short of optimum"}
    assert campaign.plan_findings(reading, at, best, best + 1, True, best)[0][0] == "bound above optimum"
    # the alignment of each model, and nothing coarser, holds: m0/x1 may sit at 9, m1's tensors may not
    assert oracle.violation(reading, at, best) is None and at["m0/x1"] % 4
    assert "multiple of 4" in oracle.violation(reading, {**at, "m1/x1": at["m1/x1"] + 2}, best)


def test_a_shared_tensor_overlapping_anything_is_caught() -> None:
    case = FOUND["shared, outputs copied out"]
    reading = campaign.read(case)
    plan = solve(campaign.build(case), "greedy-size")
    offsets = plan.tensor_offsets()
    assert "x0" in offsets and not any(t.startswith("m1/x0") or t == "m0/x0" for t in offsets)
    assert oracle.violation(reading, offsets, plan.peak) is None
    # the last operator of the second model is long after the first model's last read of x0
    moved = {**offsets, "m1/t0a": offsets["x0"]}
    peak = max(moved[t] + reading.sizes[t] for t in moved)
    assert "share bytes" in oracle.violation(reading, moved, peak)
