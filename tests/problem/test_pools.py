"""Several models in one pool: one after another, at the same time, with a shared buffer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaplanner import InputError, build_problem, load_problem, parse_document
from gaplanner.documents.zoo import zoo_document
from gaplanner.problem.pools import pool_problem, problem_from_pool_document
from gaplanner.search.baselines import BASELINES
from gaplanner.search.exact import ExactSettings
from gaplanner.solve import solve


def chain(prefix: str, sizes: list[int], reads: str | None = None, writes: str | None = None) -> dict:
    """A chain of operators; optionally one reads (or writes) the shared 'kv' tensor."""
    tensors = [{"id": f"{prefix}{k}", "size": s} for k, s in enumerate(sizes)]
    ops = [
        {"id": f"op{k}", "inputs": [f"{prefix}{k - 1}"] if k else [], "outputs": [f"{prefix}{k}"]}
        for k in range(len(sizes))
    ]
    if writes:
        tensors.append({"id": writes, "size": 8})
        ops[0]["outputs"].append(writes)
    if reads:
        tensors.append({"id": reads, "size": 8})
        ops[-1]["inputs"].append(reads)
    return {"tensors": tensors, "operators": ops}


def overlap(offsets: dict[str, int], sizes: dict[str, int], a: str, b: str) -> bool:
    return offsets[a] < offsets[b] + sizes[b] and offsets[b] < offsets[a] + sizes[a]


def test_one_after_another_shares_everything_at_the_same_time_nothing() -> None:
    models = [(name, zoo_document(name)) for name in ("mobilenetv1", "googlenet")]
    alone = [build_problem(doc).lower_bound for _, doc in models]
    sequential, concurrent = pool_problem(models, "sequential"), pool_problem(models, "concurrent")
    assert sequential.lower_bound == max(alone)
    assert concurrent.lower_bound >= max(alone)
    plan = BASELINES["greedy-size"](concurrent)
    offsets, sizes = (
        plan.tensor_offsets(),
        dict(zip(concurrent.tensors.ids, concurrent.tensors.sizes, strict=True)),
    )
    first = [t for t in offsets if t.startswith("mobilenetv1/")]
    second = [t for t in offsets if t.startswith("googlenet/")]
    assert not any(overlap(offsets, sizes, a, b) for a in first[::7] for b in second[::7])


def test_a_shared_buffer_persists_across_the_models() -> None:
    prefill = parse_document(chain("p", [64, 64, 64], writes="kv"))
    decode = parse_document(chain("d", [64, 64, 64], reads="kv"))
    problem = pool_problem([("prefill", prefill), ("decode", decode)], "sequential", shared=["kv"])
    assert "kv" in problem.tensors.ids and "prefill/kv" not in problem.tensors.ids
    for algorithm in BASELINES.values():
        plan = algorithm(problem)
        offsets = plan.tensor_offsets()
        sizes = dict(zip(problem.tensors.ids, problem.tensors.sizes, strict=True))
        assert not any(overlap(offsets, sizes, "kv", t) for t in offsets if t != "kv")


def test_pool_documents_load_and_bad_pools_are_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "pool.json"
    a, b = chain("a", [16, 16]), chain("b", [32, 32])
    path.write_text(json.dumps({"models": [{"id": "a", "document": a}, {"id": "b", "document": b}]}))
    assert load_problem(path).lower_bound == 64
    path.write_text(json.dumps({"models": [{"id": "a", "document": a}, {"id": "a", "document": b}]}))
    with pytest.raises(InputError, match="model id 'a' is used twice") as caught:
        load_problem(path)
    assert caught.value.field == "models[1].id"
    kv_small, kv_big = chain("a", [16], writes="kv"), chain("b", [16], reads="kv")
    kv_big["tensors"][-1]["size"] = 9
    docs = [{"id": "a", "document": kv_small}, {"id": "b", "document": kv_big}]
    path.write_text(json.dumps({"models": docs, "shared": ["kv"]}))
    with pytest.raises(InputError, match="shared tensor 'kv' has 9 bytes"):
        load_problem(path)
    path.write_text(json.dumps({"models": [{"id": "a", "document": a}], "together": "alternating"}))
    with pytest.raises(InputError) as caught:
        load_problem(path)
    assert caught.value.field == "together"


def test_buffer_lists_pool_in_time_or_on_clocks() -> None:
    one = parse_document({"buffers": [{"id": "x", "lower": 0, "upper": 2, "size": 10}]})
    two = parse_document({"buffers": [{"id": "y", "lower": 5, "upper": 6, "size": 7}]})
    assert pool_problem([("a", one), ("b", two)], "sequential").lower_bound == 10
    assert pool_problem([("a", one), ("b", two)], "concurrent").lower_bound == 17


SRAM_DRAM = [{"id": "sram", "capacity": 32, "read_cost": 1}, {"id": "dram", "read_cost": 10}]


@pytest.mark.parametrize(("together", "cost"), [("sequential", 768), ("concurrent", 1344)])
def test_models_in_one_pool_share_one_memory_map(together: str, cost: int) -> None:
    """Each tensor is written once and read once: 2 per byte in SRAM, 20 in DRAM.

    One after another, each model has the 32-byte SRAM to itself: a's two
    16-byte tensors both fit, of b's two 32-byte ones (live at once) one does:
    64 + 64 + 640. At the same time every tensor meets every other, so the SRAM
    holds 32 bytes in all: 1920 (all in DRAM) - 18 * 32.
    """
    from gaplanner.search.ga import GASettings

    a, b = parse_document(chain("a", [16, 16])), parse_document(chain("b", [32, 32]))
    memories = parse_document({**chain("m", [1]), "memories": SRAM_DRAM}).memories
    problem = pool_problem([("a", a), ("b", b)], together, memories=memories)
    assert problem.memories.cost_lower_bound() == 2 * 96
    for algorithm in ("ga", "spill-greedy", "first-fit"):
        plan = solve(problem, algorithm, GASettings(generations=30) if algorithm == "ga" else None)
        assert plan.cost >= cost
        if algorithm == "ga":
            assert plan.cost == cost
        assert all(peak <= 32 for peak in plan.peaks[:1])


def test_pool_documents_carry_memories_and_pins_name_the_model(tmp_path: Path) -> None:
    a = {**chain("a", [16, 16]), "memories": SRAM_DRAM}
    a["tensors"][0]["memory"] = "dram"
    pool = {"models": [{"id": "a", "document": a}, {"id": "b", "document": chain("b", [32, 32])}]}
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(pool))
    problem = load_problem(path)
    assert problem.memories.ids == ("sram", "dram")
    assert problem.memories.pinned_memory[list(problem.ids).index("a/a0")] == 1
    b = pool["models"][1]["document"]
    b["memories"] = [*SRAM_DRAM[:1], {"id": "hbm"}]
    path.write_text(json.dumps(pool))
    with pytest.raises(InputError, match="lists other memories than model 'a'") as caught:
        load_problem(path)
    assert caught.value.field == "models[1].document.memories"
    del b["memories"]
    b["tensors"][1]["memory"] = "tcm"
    path.write_text(json.dumps(pool))
    with pytest.raises(InputError, match="no memory 'tcm'; the pool lists sram, dram") as caught:
        load_problem(path)
    assert caught.value.field == "models[1].document.tensors[1].memory"
    buffers = {"buffers": [{"id": "x", "lower": 0, "upper": 1, "size": 4}]}
    path.write_text(json.dumps({"models": [{"id": "x", "document": buffers}], "memories": SRAM_DRAM}))
    with pytest.raises(InputError, match="memories apply to pools of graphs"):
        load_problem(path)


def test_the_bundled_pool_example_shares_its_kv_cache_and_memories() -> None:

    problem = load_problem("example:prefill_decode_pool")
    assert problem.memories.ids == ("sram", "dram")
    assert "kv" in problem.tensors.ids and "decode/kv" not in problem.tensors.ids
    plan = solve(problem, "spill-greedy")
    rows = {row["id"]: row for row in plan.tensor_rows()}
    live_with_kv = ["decode/token", "decode/q", "decode/attended", "decode/out", "prefill/hidden"]
    for tid in live_with_kv:  # the cache persists while decode runs and while prefill finishes
        a, b = rows[tid], rows["kv"]
        same_memory = a["memory"] == b["memory"]
        assert not (
            same_memory
            and overlap({tid: a["offset"], "kv": b["offset"]}, {tid: a["size"], "kv": b["size"]}, tid, "kv")
        )


def interleaving(schedule: list[str]) -> dict:
    return {
        "models": [
            {"id": "a", "document": chain("a", [16, 16])},
            {"id": "b", "document": chain("b", [32, 32])},
        ],
        "together": "interleaved",
        "schedule": schedule,
    }


@pytest.mark.parametrize(
    ("schedule", "bound"),
    [
        (["a/op0", "a/op1", "b/op0", "b/op1"], 64),  # one after the other: as sequential
        (["a/op0", "b/op0", "b/op1", "a/op1"], 80),  # b runs while a0 waits for a/op1: a0 + b0 + b1
    ],
)
def test_an_interleaving_keeps_alive_what_waits_across_the_other_model(schedule, bound) -> None:
    problem = problem_from_pool_document(interleaving(schedule))
    assert problem.lower_bound == bound
    for algorithm in BASELINES.values():
        plan = algorithm(problem)
        assert plan.peak == bound  # two chains: every baseline reaches the bound
        offsets = plan.tensor_offsets()
        sizes = dict(zip(problem.tensors.ids, problem.tensors.sizes, strict=True))
        if bound == 80:  # a0 is live from a/op0 to a/op1, so through all of b
            assert not any(overlap(offsets, sizes, "a/a0", t) for t in ("b/b0", "b/b1"))


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"schedule": ["a/op0", "a/op1", "b/op0", "b/op9"]}, "schedule[3]", "no operator 'b/op9'"),
        ({"schedule": ["a/op0", "a/op1", "b/op0", "a/op1"]}, "schedule[3]", "listed twice"),
        ({"schedule": ["a/op0", "a/op1", "b/op0"]}, "schedule", "'b/op1' is not in the schedule"),
        ({"schedule": ["a/op1", "a/op0", "b/op0", "b/op1"]}, "schedule[0]", "'a/op1' is scheduled before"),
        ({"schedule": ["a/<feed>", "a/op0", "a/op1"]}, "schedule[0]", "no operator"),
        ({"schedule": None}, "schedule", "only then"),
        ({"together": "sequential"}, "schedule", "only then"),
    ],
)
def test_bad_interleavings_are_one_clear_error(change: dict, field: str, words: str) -> None:
    document = {**interleaving(["a/op0", "a/op1", "b/op0", "b/op1"]), **change}
    with pytest.raises(InputError, match=words) as caught:
        problem_from_pool_document(document)
    assert caught.value.field == field


def test_buffer_lists_cannot_be_interleaved() -> None:
    buffers = parse_document({"buffers": [{"id": "x", "lower": 0, "upper": 2, "size": 4}]})
    with pytest.raises(InputError, match="buffer lists have none") as caught:
        pool_problem([("m", buffers), ("n", buffers)], "interleaved", schedule=[])
    assert caught.value.field == "together"


def two_cores_with_a_sync_edge() -> dict:
    """Core 1 starts c0 only after a1 on core 0 (a sync edge, no data between them): A and C can share."""
    return {
        "tensors": [{"id": t, "size": 8} for t in ("A", "B", "C", "D")],
        "operators": [
            {"id": "a0", "outputs": ["A"]},
            {"id": "a1", "inputs": ["A"], "outputs": ["B"]},
            {"id": "c0", "outputs": ["C"], "core": 1},
            {"id": "c1", "inputs": ["C"], "outputs": ["D"], "core": 1},
        ],
        "sync": [{"before": "a1", "after": "c0"}],
        "outputs": ["B", "D"],
    }


@pytest.mark.parametrize("source", ["zoo:resnet50@2", "sync"])
def test_a_model_pooled_alone_keeps_its_conflicts_split_tensors_and_sync_edges(source: str) -> None:
    doc = parse_document(two_cores_with_a_sync_edge()) if source == "sync" else zoo_document("resnet50@2")
    alone, pooled = build_problem(doc), pool_problem([("m", doc)])
    assert pooled.n == alone.n and pooled.lower_bound == alone.lower_bound
    assert len(pooled.conflicts.indices) == len(alone.conflicts.indices)


def test_each_model_keeps_its_own_alignment_in_a_pool() -> None:
    """a (alignment 1) writes two 3-byte outputs while b (alignment 4) holds 4 bytes: 4 + 3 + 3 = 10 bytes,
    where aligning a's tensors to b's 4 would need 11."""
    a = {"tensors": [{"id": "a0", "size": 3}, {"id": "a1", "size": 3}],
         "operators": [{"id": "op", "outputs": ["a0", "a1"]}]}  # fmt: skip
    b = {"alignment": 4, "tensors": [{"id": "b0", "size": 4}], "operators": [{"id": "op", "outputs": ["b0"]}]}
    pool = {"models": [{"id": "a", "document": a}, {"id": "b", "document": b}], "together": "concurrent"}
    problem = problem_from_pool_document(pool)
    plan = solve(problem, "exact", ExactSettings(time_limit=5))
    assert plan.peak == 10 and plan.optimal
    assert plan.tensor_offsets()["b/b0"] % 4 == 0


def test_each_model_keeps_its_own_alignment() -> None:
    """The campaign found pooled graphs aligning every block to the alignment of the strictest model."""
    loose = parse_document(
        {
            "tensors": [
                {"id": "x", "size": 3},
                {"id": "y", "size": 5, "alignment": 2},
                {"id": "kv", "size": 4},
            ],
            "operators": [{"id": "a", "inputs": ["x", "kv"], "outputs": ["y"], "workspace": 3}],
        }
    )
    strict = parse_document({**loose.model_dump(exclude_none=True), "alignment": 8})
    problem = pool_problem([("m", loose), ("n", strict)], "concurrent", shared=["kv"])
    alignment = dict(zip(problem.ids, problem.alignments.tolist(), strict=True))
    assert alignment == {
        "kv": 8,  # one buffer for both models: aligned as each asks
        "m/x": 1, "m/y": 2, "m/a#workspace": 1,
        "n/x": 8, "n/y": 8, "n/a#workspace": 8,
    }  # fmt: skip
    plan = solve(problem, "first-fit")
    assert all(off % alignment[bid] == 0 for bid, off in zip(problem.ids, plan.offsets.tolist(), strict=True))


def test_a_shared_buffer_persists_when_outputs_are_copied_out() -> None:
    """The campaign found shared tensors dying at their last reader under Rules(keep_outputs=False)."""
    from gaplanner.documents.rules import Rules

    prefill = parse_document(chain("p", [64, 64, 64], reads="kv"))
    decode = parse_document(chain("d", [64, 64, 64]))
    decode.tensors.append(prefill.tensors[-1])  # decode has the cache too, but does not read it
    for together in ("sequential", "concurrent"):
        problem = pool_problem(
            [("prefill", prefill), ("decode", decode)],
            together,
            shared=["kv"],
            rules=Rules(keep_outputs=False),
        )
        sizes = dict(zip(problem.tensors.ids, problem.tensors.sizes, strict=True))
        for algorithm in BASELINES.values():
            offsets = algorithm(problem).tensor_offsets()
            assert not any(overlap(offsets, sizes, "kv", t) for t in offsets if t != "kv"), together


@pytest.mark.parametrize("keep_outputs", [True, False])
def test_a_pooled_model_moves_the_bytes_it_moves_alone(keep_outputs: bool) -> None:
    """The campaign found pooled graphs across memories dropping the caller's read of each output
    when outputs are copied out (a model planned alone counts it)."""
    from gaplanner.documents.rules import Rules

    doc = parse_document(
        {**chain("t", [8, 16, 4]), "memories": [{"id": "sram", "capacity": 64}, {"id": "dram"}]}
    )
    rules = Rules(keep_outputs=keep_outputs)
    alone = build_problem(doc, rules=rules).memories
    pooled = pool_problem([("m", doc), ("n", doc)], "sequential", rules=rules).memories
    # each tensor written once; read by its reader, and t2 (the output) once by the caller
    assert (alone.write_bytes.sum(), alone.read_bytes.sum()) == (28, 28)
    assert (pooled.write_bytes.sum(), pooled.read_bytes.sum()) == (56, 56)


def test_a_models_after_edges_name_its_own_operators_in_the_pool() -> None:
    doc = {
        "tensors": [{"id": "x", "size": 4}, {"id": "y", "size": 4}],
        "operators": [{"id": "op0", "outputs": ["x"]}, {"id": "op1", "outputs": ["y"], "after": ["op0"]}],
    }
    problem = problem_from_pool_document(
        {"models": [{"id": "a", "document": doc}, {"id": "b", "document": doc}]}
    )
    after = {op.id: op.after for op in problem.document.operators}
    assert after["a/op1"] == ["a/op0"] and after["b/op1"] == ["b/op0"]
    assert problem.lower_bound == 8  # x and y kept as a's outputs, then b's
