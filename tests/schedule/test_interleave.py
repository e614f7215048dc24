"""A pool's interleaving searched: a valid interleaving, its bound from the rules, the certificate.

The checker pools the models by hand from the rules of docs/memories.md (each
model's ids as ``MODEL/id``; its inputs written when it starts, its outputs
read when it ends; a shared tensor one buffer kept to the end) and recomputes
bounds and lifetimes with the order oracles, not with the pool's code.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaplanner import InputError, parse_document
from gaplanner.documents.schema import Document
from gaplanner.problem.pools import pool_problem
from gaplanner.schedule import ScheduleSettings
from gaplanner.schedule.interleave import round_robin, search_interleaving
from gaplanner.schedule.planning import plan_pool_document
from tests.problem.test_pools import chain
from tests.schedule.graphs import graph_documents
from tests.schedule.oracle import order_bound
from tests.schedule.test_planning import byte_groups, lifetimes
from tests.strategies import SETTINGS
from tests.test_cli import run, write

QUICK = ScheduleSettings(evaluations=2000, cut_seconds=0.2)


def pooled_by_hand(models: Sequence[tuple[str, Document]], shared: Sequence[str] = ()) -> Document:
    """One graph of the models: a ``start`` operator writing each model's inputs, an ``end`` reading its
    outputs; shared tensors under their own name, kept to the end."""
    tensors: dict[str, int] = {}
    operators: list[dict] = []
    for m, doc in models:

        def name(t: str, m: str = m) -> str:
            return t if t in shared else f"{m}/{t}"

        ops = doc.operators or []
        written = {t for op in ops for t in op.outputs}
        read = {t for op in ops for t in op.inputs}
        outputs = doc.outputs if doc.outputs is not None else sorted(written - read)
        tensors.update({name(t.id): t.nbytes for t in doc.tensors or []})
        inputs = [name(t.id) for t in doc.tensors or [] if t.id not in written and t.id not in shared]
        operators.append({"id": f"{m}/start", "outputs": inputs})
        for op in ops:
            row = {"id": f"{m}/{op.id}", "inputs": [name(t) for t in op.inputs]}
            row["outputs"] = [name(t) for t in op.outputs]
            row["views"] = {name(o): name(i) for o, i in op.views.items()}
            row["inplace"] = {
                name(o): [name(h) for h in ([i] if isinstance(i, str) else i)] for o, i in op.inplace.items()
            }
            row["workspace"] = op.workspace
            operators.append(row)
        operators.append({"id": f"{m}/end", "inputs": [name(t) for t in outputs]})
    return parse_document(
        {
            "tensors": [{"id": t, "size": s} for t, s in tensors.items()],
            "operators": operators,
            "outputs": list(shared),
        }
    )


def full_order(models: Sequence[tuple[str, Document]], schedule: Sequence[str]) -> list[str]:
    """The interleaving with each model's start just before its first operator and its end after its last."""
    own = {m: [f"{m}/{op.id}" for op in doc.operators or []] for m, doc in models}
    order = []
    for op_id in schedule:
        m = next(m for m, ops in own.items() if op_id in ops)
        order += [f"{m}/start"] if op_id == own[m][0] else []
        order.append(op_id)
        order += [f"{m}/end"] if op_id == own[m][-1] else []
    return order


def interleavings(models: Sequence[tuple[str, Document]]) -> Iterator[list[str]]:
    """Every interleaving of the models' programs, each model's own order kept."""
    own = [[f"{m}/{op.id}" for op in doc.operators or []] for m, doc in models]
    labels = [k for k, ops in enumerate(own) for _ in ops]
    for turns in set(itertools.permutations(labels)):
        taken = [iter(ops) for ops in own]
        yield [next(taken[k]) for k in turns]


def assert_valid_interleaving(models: Sequence[tuple[str, Document]], schedule: Sequence[str]) -> None:
    assert sorted(schedule) == sorted(f"{m}/{op.id}" for m, doc in models for op in doc.operators or [])
    for m, doc in models:
        assert [s for s in schedule if s.startswith(f"{m}/")] == [
            f"{m}/{op.id}" for op in doc.operators or []
        ]


def assert_plan_keeps_live_tensors_apart(pooled: Document, order: list[str], data: dict) -> None:
    """No two tensors live at once (lifetimes recomputed from ``order``) share a byte, unless the rules
    let them (a view, an in-place write over an input dying there)."""
    times = lifetimes(pooled, order)
    pos = {op_id: p for p, op_id in enumerate(order)}
    rows = {r["id"]: r for r in data["tensors"]}
    placed = {t: (rows[t]["offset"], rows[t]["offset"] + rows[t]["size"]) for t in times}
    groups = byte_groups(pooled, times, pos, placed)
    for a, b in itertools.combinations(sorted(times), 2):
        live_together = times[a][0] <= times[b][1] and times[b][0] <= times[a][1]
        overlap = placed[a][0] < placed[b][1] and placed[b][0] < placed[a][1]
        assert not (live_together and overlap) or groups[a] == groups[b], (a, b)


def pool_data(models: Sequence[tuple[str, Document]], **fields) -> dict:
    entries = [{"id": m, "document": doc.model_dump(exclude_none=True)} for m, doc in models]
    return {"models": entries, "together": "interleaved", **fields}


def test_the_search_runs_the_big_model_whole_and_the_round_robin_does_not() -> None:
    models = [
        ("a", parse_document(chain("a", [16, 64, 16, 8]))),
        ("b", parse_document(chain("b", [32, 8, 32, 4]))),
    ]
    pooled = pooled_by_hand(models)
    problem, result = search_interleaving(models, settings=QUICK)
    assert_valid_interleaving(models, result.order)
    assert result.given_bound == order_bound(pooled, full_order(models, round_robin(models))) == 112
    best = min(order_bound(pooled, full_order(models, s)) for s in interleavings(models))
    assert result.chosen_bound == order_bound(pooled, full_order(models, result.order)) == best == 80
    assert result.order_free_bound == 80 and result.optimal
    assert problem.lower_bound == 80


def test_the_chosen_interleaving_given_back_is_the_same_problem() -> None:
    models = [
        ("a", parse_document(chain("a", [16, 64, 16, 8]))),
        ("b", parse_document(chain("b", [32, 8, 32, 4]))),
    ]
    plan = plan_pool_document(pool_data(models), "greedy-size", schedule="search", schedule_settings=QUICK)
    data = plan.to_dict()
    again = pool_problem(models, "interleaved", schedule=data["schedule"])
    assert again.lower_bound == plan.lower_bound == data["certificate"]["chosen_bound"]
    for field in ("ids", "sizes", "lower", "upper"):
        assert list(getattr(again, field)) == list(getattr(plan.problem, field))
    fixed = plan_pool_document(pool_data(models, schedule=data["schedule"]), "greedy-size")
    assert fixed.lower_bound == plan.lower_bound and fixed.peak == plan.peak


def test_a_shared_cache_keeps_its_writer_first_and_lives_to_the_end() -> None:
    prefill = parse_document(chain("p", [64, 8, 64], writes="kv"))
    decode = parse_document(chain("d", [64, 8, 64], reads="kv"))
    models = [("prefill", prefill), ("decode", decode)]
    given_order = ["decode/op0", "prefill/op0", "decode/op1", "prefill/op1", "prefill/op2", "decode/op2"]
    plan = plan_pool_document(
        pool_data(models, shared=["kv"], schedule=given_order), "greedy-size", schedule="search",
        schedule_settings=QUICK,
    )  # fmt: skip
    data = plan.to_dict()
    schedule = data["schedule"]
    assert_valid_interleaving(models, schedule)
    assert schedule.index("prefill/op0") < schedule.index("decode/op2")  # kv written before it is read
    pooled = pooled_by_hand(models, ["kv"])
    order = full_order(models, schedule)
    assert lifetimes(pooled, order)["kv"][1] == len(order)  # persists to the end
    assert_plan_keeps_live_tensors_apart(pooled, order, data)
    certificate = data["certificate"]
    assert certificate["given_bound"] == order_bound(pooled, full_order(models, given_order))
    assert certificate["chosen_bound"] == order_bound(pooled, order) <= certificate["given_bound"]


def with_cache(doc: Document, k: int, role: str, size: int) -> Document:
    """``doc`` with its ``k``-th operator writing (``role`` outputs) or reading (inputs) the tensor 'kv'."""
    data = doc.model_dump(exclude_none=True)
    data["tensors"].append({"id": "kv", "size": size})
    data["operators"][k][role] = [*data["operators"][k].get(role, []), "kv"]
    return parse_document(data)


@st.composite
def small_pools(draw: st.DrawFn) -> tuple[list[tuple[str, Document]], list[str]]:
    """Two or three tiny models; sometimes the first writes a cache 'kv' the second reads (shared)."""
    count = draw(st.integers(2, 3))
    docs = [draw(graph_documents(max_ops=3 if count == 2 else 2)) for _ in range(count)]
    shared = []
    if draw(st.booleans()):
        size = draw(st.integers(1, 9))
        docs[0] = with_cache(docs[0], draw(st.integers(0, len(docs[0].operators) - 1)), "outputs", size)
        docs[1] = with_cache(docs[1], draw(st.integers(0, len(docs[1].operators) - 1)), "inputs", size)
        shared = ["kv"]
    return [(f"m{k}", doc) for k, doc in enumerate(docs)], shared


def reads_after_writes(pooled: Document, order: list[str]) -> bool:
    """Every tensor read after its writer (a shared tensor's reader in another model waits for it)."""
    position = {op_id: p for p, op_id in enumerate(order)}
    ops = pooled.operators or []
    writer = {t: position[op.id] for op in ops for t in op.outputs}
    return all(writer.get(t, -1) < position[op.id] for op in ops for t in op.inputs)


@SETTINGS
@given(small_pools())
def test_a_searched_interleaving_is_valid_bounded_and_planned_apart(pool) -> None:
    models, shared = pool
    pooled = pooled_by_hand(models, shared)
    data = plan_pool_document(
        pool_data(models, shared=shared), "greedy-size", schedule="search", schedule_settings=QUICK
    ).to_dict()
    certificate = data["certificate"]
    assert_valid_interleaving(models, data["schedule"])
    order = full_order(models, data["schedule"])
    assert reads_after_writes(pooled, order)
    assert_plan_keeps_live_tensors_apart(pooled, order, data)
    runs = [full_order(models, s) for s in interleavings(models)]
    best = min(order_bound(pooled, o) for o in runs if reads_after_writes(pooled, o))
    given_order = full_order(models, round_robin(models, shared))
    assert reads_after_writes(pooled, given_order)
    assert certificate["given_bound"] == order_bound(pooled, given_order)
    assert certificate["chosen_bound"] == order_bound(pooled, order) == data["lower_bound"]
    assert (
        certificate["order_free_bound"] <= best <= certificate["chosen_bound"] <= certificate["given_bound"]
    )


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"together": "sequential"}, "together", "'sequential' runs them one after another"),
        ({"together": "concurrent"}, "together", "on its own cores or streams"),
        ({"memories": [{"id": "dram"}]}, "memories", "one arena"),
        ({"schedule": ["a/op0", "b/op0"]}, "schedule", "'a/op1' is not in the schedule"),
    ],
)
def test_pools_that_cannot_be_searched_are_one_clear_error(fields: dict, field: str, words: str) -> None:
    models = [("a", parse_document(chain("a", [4, 4]))), ("b", parse_document(chain("b", [4, 4])))]
    with pytest.raises(InputError, match=words) as caught:
        plan_pool_document(
            pool_data(models, **fields), "greedy-size", schedule="search", schedule_settings=QUICK
        )
    assert caught.value.field == field


def two_chains() -> list[tuple[str, Document]]:
    return [
        ("a", parse_document(chain("a", [16, 64, 16, 8]))),
        ("b", parse_document(chain("b", [32, 8, 32, 4]))),
    ]


def test_the_cli_searches_a_pool_documents_interleaving_and_takes_it_back_as_a_file(
    capsys, tmp_path: Path
) -> None:
    pool = write(tmp_path, "pool.json", pool_data(two_chains()))
    quick = ("--algorithm", "greedy-size", "-q")
    code, out, err = run(capsys, "plan", pool, "--schedule", "search", *quick)
    assert code == 0, err
    searched = json.loads(out)
    assert searched["certificate"]["given_bound"] == 112 and searched["lower_bound"] == 80
    pooled, models = pooled_by_hand(two_chains()), two_chains()
    assert_plan_keeps_live_tensors_apart(pooled, full_order(models, searched["schedule"]), searched)
    order = write(tmp_path, "order.txt", "# searched\n" + "\n".join(searched["schedule"]) + "\n")
    code, out, err = run(capsys, "plan", pool, "--schedule", order, *quick)
    assert code == 0, err
    again = json.loads(out)
    assert again["lower_bound"] == searched["lower_bound"] and again["peak"] == searched["peak"]
    assert [t["id"] for t in again["tensors"]] == [t["id"] for t in searched["tensors"]]
    code, out, err = run(capsys, "verify", pool, write(tmp_path, "plan.json", searched))
    assert code == 0 and out.startswith("valid"), err  # checked against the pool run in its schedule
    swapped = {**searched, "schedule": ["a/op1", "a/op0", *searched["schedule"][2:]]}
    code, out, err = run(capsys, "verify", pool, write(tmp_path, "bad.json", swapped))
    assert code == 2 and "plan.schedule[" in err and "which its model runs first" in err


def test_the_cli_searches_the_interleaving_of_separate_inputs(capsys, tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", chain("a", [16, 64, 16, 8]))
    b = write(tmp_path, "b.json", chain("b", [32, 8, 32, 4]))
    code, out, err = run(
        capsys,
        "plan",
        a,
        b,
        "--together",
        "interleaved",
        "--schedule",
        "search",
        "--algorithm",
        "greedy-size",
        "-q",
    )
    assert code == 0, err
    plan = json.loads(out)
    assert_valid_interleaving(two_chains(), plan["schedule"])
    assert plan["peak"] == plan["lower_bound"] == plan["certificate"]["chosen_bound"] == 80
    assert plan["pool"]["together"] == "interleaved"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["A", "B", "--together", "--schedule", "search"],
            "--together: an interleaving is searched for models",
        ),
        (["A", "B", "--concurrent", "--schedule", "search"], "--together: an interleaving is searched"),
        (["P", "--schedule", "search"], "together: an interleaving is searched for models run 'interleaved'"),
        (["Q", "--schedule", "S"], "s.txt (line 2): no operator 'b/op9'"),
    ],
)
def test_the_cli_refuses_what_it_cannot_interleave_in_one_line(capsys, tmp_path: Path, argv, words) -> None:
    names = {
        "A": write(tmp_path, "a.json", chain("a", [16])),
        "B": write(tmp_path, "b.json", chain("b", [16])),
        "P": write(tmp_path, "p.json", {**pool_data(two_chains()), "together": "sequential"}),
        "Q": write(tmp_path, "q.json", pool_data(two_chains())),
        "S": write(tmp_path, "s.txt", "a/op0\nb/op9\n"),
    }
    code, out, err = run(capsys, "plan", *[names.get(a, a) for a in argv], "--algorithm", "first-fit")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err, err


def test_without_a_schedule_a_reader_of_a_shared_tensor_waits_for_its_writer() -> None:
    decode = parse_document(chain("d", [8], reads="kv"))  # its one operator reads the cache
    prefill = parse_document(chain("p", [64, 8, 64], writes="kv"))
    models = [("decode", decode), ("prefill", prefill)]
    plan = plan_pool_document(
        pool_data(models, shared=["kv"]), "greedy-size", schedule="search", schedule_settings=QUICK
    )
    waited = ["prefill/op0", "decode/op0", "prefill/op1", "prefill/op2"]  # round robin, decode waiting
    pooled = pooled_by_hand(models, ["kv"])
    assert plan.certificate.given_bound == order_bound(pooled, full_order(models, waited))
    schedule = list(plan.certificate.order)
    assert schedule.index("prefill/op0") < schedule.index("decode/op0")
    with pytest.raises(InputError, match="'decode/op0' reads 'kv' before operator 'prefill/op0'") as caught:
        plan_pool_document(
            pool_data(models, shared=["kv"], schedule=["decode/op0", *waited[:1], *waited[2:]]),
            "greedy-size", schedule="search", schedule_settings=QUICK,
        )  # fmt: skip
    assert caught.value.field == "schedule"
