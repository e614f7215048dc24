"""Plans with a searched order: a valid order, lifetimes recomputed from it, live tensors kept apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given

from gaplanner.cli import main
from gaplanner.documents.schema import Document, parse_document
from gaplanner.schedule import ScheduleSettings
from gaplanner.schedule.planning import plan_document
from gaplanner.search.ga import GASettings
from tests.schedule.graphs import graph_documents
from tests.schedule.oracle import order_bound, topological_orders
from tests.schedule.test_search import fan_out
from tests.strategies import SETTINGS

QUICK = ScheduleSettings(evaluations=2000)


def lifetimes(doc: Document, schedule: list[str]) -> dict[str, tuple[int, int]]:
    """Each tensor's first and last position when the operators run in ``schedule`` (the README's rules)."""
    ops = {op.id: op for op in doc.operators or []}
    written = {t for op in ops.values() for t in op.outputs}
    read = {t for op in ops.values() for t in op.inputs}
    kept = set(doc.outputs) if doc.outputs is not None else written - read
    span: dict[str, list[int]] = {}
    for p, op_id in enumerate(schedule):
        op = ops[op_id]
        for t in [*op.inputs, *op.outputs] + ([op_id + "#workspace"] if op.workspace else []):
            first = p if t in written or t.endswith("#workspace") else 0
            lo, hi = span.get(t, [first, p])
            span[t] = [min(lo, first), max(hi, p)]
    return {t: (lo, len(schedule) if t in kept else hi) for t, (lo, hi) in span.items()}


def byte_groups(
    doc: Document, times: dict[str, tuple[int, int]], pos: dict[str, int], placed: dict[str, tuple[int, int]]
) -> dict[str, str]:
    """Tensors that may share bytes: a view with its input; an in-place output with the input it was
    placed over (``placed``: each tensor's byte range in the plan), if that input's tensors (with their
    views) are all read for the last time by the operator writing it. Any listed input may be the one."""
    group = {t: t for t in times}
    size = {t.id: t.nbytes for t in doc.tensors or []}

    def find(t: str) -> str:
        while group[t] != t:
            t = group[t]
        return t

    for op in doc.operators or []:
        for out, host in op.views.items():
            group[find(out)] = find(host)
    for op_id in sorted(pos, key=pos.get):  # type: ignore[arg-type]
        op = next(o for o in doc.operators or [] if o.id == op_id)
        for out, hosts in op.inplace.items():
            for host in [hosts] if isinstance(hosts, str) else hosts:
                members = [t for t in times if find(t) == find(host)]
                dies_here = max(times[t][1] for t in members) == pos[op_id]
                over = placed[out][0] < placed[host][1] and placed[host][0] < placed[out][1]
                if dies_here and over and size[out] <= size[host] and find(out) != find(host):
                    group[find(out)] = find(host)
                    break
    return {t: find(t) for t in times}


def check_plan(doc: Document, data: dict) -> None:
    schedule = data["schedule"]
    if len(schedule) <= 7:
        assert schedule in [list(o) for o in topological_orders(doc)]
    pos = {op_id: p for p, op_id in enumerate(schedule)}
    for op in doc.operators or []:  # every input written before it is read
        writers = [pos[w.id] for w in doc.operators or [] if set(w.outputs) & set(op.inputs)]
        assert all(w < pos[op.id] for w in writers)
    times = lifetimes(doc, schedule)
    rows = {r["id"]: r for r in data["tensors"]}
    placed = {t: (r["offset"], r["offset"] + r["size"]) for t, r in rows.items()}
    groups = byte_groups(doc, times, pos, placed)
    ids = sorted(times)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            live_together = times[a][0] <= times[b][1] and times[b][0] <= times[a][1]
            ra, rb = rows[a], rows[b]
            overlap = ra["offset"] < rb["offset"] + rb["size"] and rb["offset"] < ra["offset"] + ra["size"]
            if live_together and overlap:
                assert groups[a] == groups[b], (a, b)


def test_a_searched_order_is_planned_at_its_bound() -> None:
    doc = parse_document(fan_out(5))
    plan = plan_document(doc, "ga", GASettings(time_limit=2), schedule="search", schedule_settings=QUICK)
    data = plan.to_dict()
    check_plan(doc, data)
    assert data["certificate"]["given_bound"] == 51
    assert data["certificate"]["chosen_bound"] == order_bound(doc, data["schedule"]) == data["lower_bound"]
    assert data["peak"] <= 1.01 * data["lower_bound"]
    assert data["optimal"] == (data["peak"] <= data["certificate"]["order_free_bound"])


@SETTINGS
@given(graph_documents(max_ops=7))
def test_every_searched_plan_keeps_live_tensors_apart(doc) -> None:
    plan = plan_document(doc, "greedy-size", schedule="search", schedule_settings=QUICK)
    data = plan.to_dict()
    check_plan(doc, data)
    assert data["certificate"]["chosen_bound"] == order_bound(doc, data["schedule"])


def test_the_cli_plans_a_searched_order_and_writes_the_schedule_column(tmp_path: Path, capsys) -> None:
    source = tmp_path / "fan.json"
    source.write_text(json.dumps(fan_out(4)))
    assert main(["plan", str(source), "--schedule", "search", "--algorithm", "greedy-size"]) == 0
    data = json.loads(capsys.readouterr().out)
    check_plan(parse_document(fan_out(4)), data)
    assert data["certificate"]["chosen_bound"] == 14 < data["certificate"]["given_bound"]
    assert (
        main(["plan", str(source), "--schedule", "search", "--algorithm", "greedy-size", "--format", "csv"])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(data))
    assert main(["verify", str(source), str(plan_file)]) == 0  # against the document run in its schedule
    assert capsys.readouterr().out.startswith("valid")
    assert lines[0].endswith(",schedule")
    assert [line.rsplit(",", 1)[1] for line in lines[1:10]] == data["schedule"]


def test_the_cli_names_the_line_of_an_order_reading_too_early(tmp_path: Path, capsys) -> None:
    source = tmp_path / "fan.json"
    source.write_text(json.dumps(fan_out(2)))
    order = tmp_path / "order.txt"
    order.write_text("# run order\ngrow0\nshrink1\ngrow1\nshrink0\njoin\n")
    assert main(["plan", str(source), "--schedule", str(order)]) == 2
    err = capsys.readouterr().err.strip()
    reason = "operator 'shrink1' reads 'big1' before operator 'grow1' writes it"
    assert err == f"gaplanner: error: {order} (line 3): {reason}"


@pytest.mark.parametrize("cycle", [True, False])
def test_the_cli_names_an_operator_on_a_cycle(tmp_path: Path, capsys, cycle: bool) -> None:
    data = fan_out(2)
    data["operators"][0]["after"] = ["join"] if cycle else []
    source = tmp_path / "fan.json"
    source.write_text(json.dumps(data))
    code = main(["plan", str(source), "--schedule", "search", "--algorithm", "greedy-size", "-q"])
    err = capsys.readouterr().err
    assert code == (2 if cycle else 0)
    if cycle:
        assert "cycle through operator 'grow0'" in err and len(err.strip().splitlines()) == 1
