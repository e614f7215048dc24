"""The searched-order checks of the campaign: known answers over every order, and planted faults caught."""

from __future__ import annotations

from dataclasses import replace

from experiments import campaign, schedule_campaign
from gaplanner.documents.schema import parse_document
from gaplanner.schedule import ScheduleSettings
from gaplanner.schedule.planning import plan_document

#: Two independent branches from x: a wide one (a, 10 bytes) and a narrow one (b then c); the given
#: order runs the wide branch first, so a is live while b is made; running b and c first is better.
FAN = {
    "operators": [
        {"id": "wide", "inputs": ["x"], "outputs": ["a"]},
        {"id": "narrow", "inputs": ["x"], "outputs": ["b"]},
        {"id": "shrink", "inputs": ["b"], "outputs": ["c"]},
        {"id": "join", "inputs": ["a", "c"], "outputs": ["y"]},
    ],
    "tensors": [{"id": "x", "size": 1}, {"id": "a", "size": 10}, {"id": "b", "size": 8},
                {"id": "c", "size": 1}, {"id": "y", "size": 1}],
}  # fmt: skip
RULES = {"keep_outputs": True, "views": True, "inplace": "never"}


def test_the_orders_keep_data_and_after_edges() -> None:
    assert len(list(schedule_campaign.orders(FAN))) == 3  # wide anywhere before join, narrow < shrink
    pinned = {**FAN, "operators": [*FAN["operators"][:2], {**FAN["operators"][2], "after": ["wide"]},
                                   FAN["operators"][3]]}  # fmt: skip
    assert list(schedule_campaign.orders(pinned)) == [["wide", "narrow", "shrink", "join"],
                                                      ["narrow", "wide", "shrink", "join"]]  # fmt: skip
    assert "join runs before ['shrink']" in schedule_campaign.broken_dependency(
        FAN, ["wide", "narrow", "join", "shrink"]
    )


def test_the_best_over_every_order_is_known() -> None:
    # given order: x+a+b = 19 at narrow; best: narrow, shrink (x+b+c = 10), then wide (x+c+a = 12)
    assert schedule_campaign.best_over_orders(FAN, RULES) == 12


def test_a_searched_plan_passes_and_each_planted_fault_is_caught() -> None:
    settings = ScheduleSettings(evaluations=200, seed=0)
    plan = plan_document(parse_document(FAN), "exact", schedule="search", schedule_settings=settings)
    assert plan.peak == 12 and plan.optimal
    assert schedule_campaign.scheduled_findings(FAN, RULES, plan, 12) == []
    assert schedule_campaign.scheduled_findings(FAN, RULES, plan, 13)[0][0] == "below optimum"
    claims = replace(plan, certificate=replace(plan.certificate, order_free_bound=13))
    assert "bound above optimum" in {
        what for what, _ in schedule_campaign.scheduled_findings(FAN, RULES, claims, 12)
    }
    late = replace(plan, schedule=("wide", "narrow", "join", "shrink"))
    assert schedule_campaign.scheduled_findings(FAN, RULES, late, 12)[0][0] == "invalid"
    given = replace(plan, schedule=("wide", "narrow", "shrink", "join"))  # the offsets overlap in this order
    assert schedule_campaign.scheduled_findings(FAN, RULES, given, 12)[0][0] == "invalid"


def test_searched_order_cases_are_made_and_pass() -> None:
    seeds = [s for s in range(200) if campaign.KINDS[s % len(campaign.KINDS)] == "schedule"][:6]
    tally = campaign.Tally()
    for seed in seeds:
        campaign.check_case(seed, tally)
    assert tally.scheduled_plans >= 4 * 3 and tally.with_optimum >= 3
    assert tally.failed == 0, tally.failures[:1]
