"""Faults under load, with nothing lost: the service and a two-node Ray cluster, counted.

    python -m experiments.faults                      # both parts, about five minutes
    python -m experiments.faults --skip-ray           # the service part only
    python -m experiments.faults --seconds 3          # shorter loads around each service fault

The service part (:mod:`experiments.faults_service`) kills a worker mid-search,
SIGKILLs the server mid-submission and restarts it on the same SQLite file,
fills the disk under the store, and sends requests cut short, all under load on
loopback; then it waits for every accepted job and verifies every plan served.
The Ray part (:mod:`experiments.faults_ray`) kills a worker actor and a node's
raylet under ``gaplanner plan --ray-address`` and the batch runner on two
network namespaces. Both need root for their filesystem and namespaces; the
parts that cannot run are skipped and say why. Writes ``docs/results/faults.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from experiments.common import markdown_table
from experiments.faults_ray import RaySettings, run_cluster_faults
from experiments.faults_service import Outcome, Settings, run_in_temporary_folder
from experiments.report import write_results

HEADER = [
    "fault",
    "requests sent",
    "jobs accepted",
    "refused 503",
    "no answer",
    "4xx",
    "server errors",
    "finished, plan verified",
    "jobs lost",
    "plans served invalid",
]
KEYS = [
    "requests",
    "accepted",
    "refused_503",
    "no_answer",
    "client_errors_4xx",
    "server_errors",
    "verified",
    "lost",
    "invalid",
]

NOTES = """\
Loopback only; a server with {workers} worker processes; {submitters} clients submit plan jobs
(every third a GA search of {search:g} s on a 40-block input that cannot reach its bound, the others
best-fit-coalescing on 60 blocks) and {pollers} poll them, one request each per {pause:g} s, for
{seconds:g} s around each fault. Each row counts the requests sent while that fault was on and the
jobs accepted then; *jobs lost* are accepted jobs that did not end with a plan (failed, missing, or
still unfinished {drain:g} s after the load stopped: the goal is 0), *plans served invalid* are plans
that failed `gaplanner.plans.verify.verify` against the document submitted (goal 0); *server errors* are
5xx answers other than 503 and unhandled errors in the server's log (goal 0). 503 is the intended
answer while the disk is full; *no answer* counts submissions cut by the server's SIGKILL and the
bodies the clients cut short themselves.

- Faults: {worker_kills} worker processes SIGKILLed while every worker searched; the server SIGKILLed
  with a submission half sent, restarted on the same SQLite file and port; {disk}; requests cut short
  or malformed: {corrupt}.
- Store after the run: `PRAGMA integrity_check` → **{integrity}**; {unanswered} job(s) stored whose
  submission got no answer (the kill came between the commit and the reply), {unanswered_done} of them
  done when the run ended.
- The server's log: {events}.
{other}"""

RAY_NOTES = """\
## Ray on two nodes

Two network namespaces made by the script (`ip netns add`, a veth pair, 10.213.0.1/24 and
10.213.0.2/24 on those two test hosts only), `ray start --head` in one and `ray start --address` in
the other (one CPU each); `gaplanner plan --ray-address` and `python -m experiments.run` run inside
the head's namespace (`ip netns exec`), so nothing is routed from the host. Torn down by the script:
every process in the two namespaces killed, the namespaces deleted (`ray stop` would stop every Ray
on the machine, so it is never called).

{table}
"""


def service_rows(outcome: Outcome) -> list[list[Any]]:
    names = {"start": "none (the load alone)"}
    rows = [[names.get(row["fault"], row["fault"]), *(row[key] for key in KEYS)] for row in outcome.rows]
    totals = ["**total**", *(f"**{sum(row[key] for row in outcome.rows)}**" for key in KEYS)]
    return [*rows, totals]


def ray_table(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"Skipped: {result['skipped']}."
    plan, runner = result["plan"], result["runner"]
    plan_outcome = f"exit {plan['returncode']}, plan verified: **{'yes' if plan['verified'] else 'no'}**" + (
        f" (peak {plan['peak']:,}, lower bound {plan['lower_bound']:,}, {plan['restarts']} workers "
        f"restarted, stopped by the {plan['stop_reason']}, {plan['seconds']:g} s in all)"
        if plan["verified"]
        else f": {plan.get('error', '')[-300:]}"
    )
    found = re.search(r"\d+ cells: \d+ already in \S+, \d+ to run", runner["resume_message"])
    resumed = re.sub(r" in \S+,", ",", found.group(0)) if found else "?"  # without the temporary path
    runner_outcome = (
        f"{runner['rows_after_first_run']} of {runner['cells']} cells written before the kill; the rerun "
        f'said "{resumed}" and exited {runner["returncode"]}; **{runner["rows"]} rows, '
        f"{runner['duplicates']} duplicated, {runner['missing']} missing**, {runner['bad_rows']} with a "
        "peak under the lower bound"
    )
    rows = [
        ["`gaplanner plan --ray-address` (2 workers)", "; ".join(plan["events"]), plan_outcome],
        ["`python -m experiments.run` (GA cells)", "; ".join(runner["events"]), runner_outcome],
    ]
    return markdown_table(["run", "faults", "outcome"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=6.0, help="load around each service fault")
    parser.add_argument("--plan-seconds", type=float, default=60.0, help="the Ray search's time limit")
    parser.add_argument("--skip-ray", action="store_true", help="the service part only")
    parser.add_argument("--skip-service", action="store_true", help="the Ray part only")
    parser.add_argument("--no-write", action="store_true", help="print, do not write docs/results")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= 60 or not 10 <= args.plan_seconds <= 300:
        parser.error("need 0 < --seconds <= 60 and 10 <= --plan-seconds <= 300")

    settings = Settings(seconds=args.seconds)
    outcome = None if args.skip_service else run_in_temporary_folder(settings)
    ray = {"skipped": "--skip-ray"} if args.skip_ray else run_cluster_faults(RaySettings(args.plan_seconds))
    if outcome is not None:
        print(json.dumps({"rows": outcome.rows, "notes": outcome.notes, "events": outcome.events}, indent=1))
    print(json.dumps(ray, indent=1))

    command = f"nice -n 10 python -m experiments.faults --seconds {args.seconds:g}"
    command += f" --plan-seconds {args.plan_seconds:g}" + (" --skip-ray" if args.skip_ray else "")
    other = "\n" + RAY_NOTES.format(table=ray_table(ray))
    if outcome is None:
        rows: list[list[Any]] = [["(service part skipped)", *[""] * len(KEYS)]]
        notes = other
    else:
        rows = service_rows(outcome)
        disk = next((n for n in outcome.notes if n.startswith("disk full")), None)
        notes = NOTES.format(
            workers=settings.workers, submitters=settings.submitters, pollers=settings.pollers,
            search=settings.search_seconds, pause=settings.pause, seconds=settings.seconds,
            drain=settings.drain_seconds, worker_kills=settings.worker_kills,
            disk=disk or f"the {settings.store_mib} MiB tmpfs under the store filled to the last byte for "
            f"{settings.seconds:g} s, the server SIGKILLed and started again half-way through, then emptied",
            corrupt=", ".join(n.removeprefix("corrupt requests: ") for n in outcome.notes if "corrupt" in n),
            integrity=outcome.integrity, unanswered=outcome.stored_unanswered,
            unanswered_done=outcome.stored_unanswered_done,
            events=", ".join(f"{name} {count}" for name, count in outcome.events.items()), other=other,
        )  # fmt: skip
    print(markdown_table(HEADER, rows))
    if not args.no_write:
        path = write_results("faults", "Faults under load", HEADER, rows, command, notes)
        print(f"wrote {path}")
    return 1 if missed_goals(outcome, ray) else 0


def missed_goals(outcome: Outcome | None, ray: dict[str, Any]) -> list[str]:
    """The goals this run missed (none lost, none invalid, no server error, a sound store, Ray resumed)."""
    missed = []
    for row in outcome.rows if outcome else []:
        for key in ("lost", "invalid", "server_errors"):
            if row[key]:
                missed.append(f"{row['fault']}: {key} {row[key]}")
    if outcome is not None and outcome.integrity != "ok":
        missed.append(f"store integrity: {outcome.integrity}")
    if "plan" in ray and not ray["plan"]["verified"]:
        missed.append("ray: no verified plan")
    if "runner" in ray and (ray["runner"]["missing"] or ray["runner"]["duplicates"]):
        missed.append("ray: the batch runner did not resume cleanly")
    for goal in missed:
        print(f"missed: {goal}", file=sys.stderr)
    return missed


if __name__ == "__main__":
    sys.exit(main())
