"""What runs inside a worker process: one job, from its stored request text to the texts the store keeps.

Texts both ways: the server validated the request and stored its text; the
worker parses that text (it builds the problem anyway) and encodes what it
found, so the server neither decodes nor encodes a graph or a plan, and
neither crosses the process boundary as Python objects.

The parent hands each process, at start-up, a progress queue and a shared
array of cancel flags (one per slot of the pool). A job reports a
:class:`~gaplanner.plans.plan.GenerationRecord` at most every ``progress_interval``
seconds and stops at the next generation once its slot's flag is set (or its
parent process has died); the GA then returns the best plan it had.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

log = logging.getLogger("service.worker")

_progress = None  # multiprocessing.Queue of (job id, record dict)
_cancel = None  # multiprocessing.Array('b'): cancel flag per slot
_parent_pid: int | None = None
_interval = 0.1


def initialize(
    progress, cancel, threads: int, nice: int, interval: float, warm_up: bool, parent: int | None = None
) -> None:
    """Process start-up: keep the handles, calm the process down, load the compiled decoders.

    ``parent``: the server's pid. Taken from the server, not from ``os.getppid()`` here: a server
    killed while this process was still starting would leave it adopted already, and a watchdog
    comparing against its adopter would never fire.
    """
    global _progress, _cancel, _parent_pid, _interval
    _progress, _cancel, _interval = progress, cancel, interval
    _parent_pid = parent if parent is not None else os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    threading.Thread(target=_watch_parent, name="parent-watchdog", daemon=True).start()
    if nice:
        os.nice(nice)  # searches yield the CPU to the HTTP server
    from gaplanner import native

    native.set_threads(threads)
    if warm_up:
        try:
            run_job("warm-up", None, "plan", "example:seed000_queue", {"generations": 1, "time_limit": 1.0})
        except Exception:  # a failed warm-up only costs the first job some time
            log.exception("worker warm-up failed")


def _orphaned() -> bool:
    return _parent_pid is not None and os.getppid() != _parent_pid


def _watch_parent() -> None:
    """Exit when the server has died (killed, crashed): an orphan would wait on its queues forever."""
    while not _orphaned():
        time.sleep(0.5)
    os._exit(3)


def ping() -> int:
    return os.getpid()


class _Reporter:
    """on_progress / should_stop for one job."""

    def __init__(self, job_id: str, slot: int | None) -> None:
        self.job_id, self.slot = job_id, slot
        self.last_sent = -1.0
        self.stopped = False
        self.records: list[dict[str, Any]] = []  # the GA's trace when the planner keeps none (compare)

    def on_progress(self, record: Any) -> None:
        data = record.to_dict()
        self.records.append(data)
        now = time.monotonic()
        if _progress is not None and self.slot is not None and now - self.last_sent >= _interval:
            self.last_sent = now
            _progress.put((self.job_id, data))

    def should_stop(self) -> bool:
        if self.slot is not None and _cancel is not None and _cancel[self.slot]:
            self.stopped = True
        elif _orphaned():  # the server died: nobody wants the result
            os._exit(3)
        return self.stopped


def _plan(
    problem: Any, algorithm: str, settings: Any, hooks: dict[str, Any], options: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The plan and its JSON, as ``gaplanner plan`` makes them (:func:`gaplanner.solve.plan_input`): a
    does-it-fit question (memories that all have a capacity) is answered, and a plan that does not fit
    is an error naming why."""
    from gaplanner.errors import DoesNotFit
    from gaplanner.solve import plan_input

    workers = {"workers": options["workers"]} if options.get("workers") is not None else {}
    planned = plan_input(problem, algorithm, settings, **hooks, **workers)
    if not planned.fits or planned.plan is None:
        assert planned.fit is not None
        raise DoesNotFit(f"does not fit: {planned.fit.proof or planned.fit.reason}")
    return planned.plan, planned.to_dict()


def job_settings(algorithm: str, options: dict[str, Any]) -> Any:
    """The algorithm's settings from a job's options. The exact search takes this worker's share of
    the cores (its kernel threads, see :class:`service.config.ServiceSettings`), not every core: the
    other workers' jobs run beside it."""
    from dataclasses import replace

    from gaplanner import native
    from gaplanner.solve import settings_for

    settings = settings_for(algorithm, options)
    if algorithm == "exact":
        settings = replace(settings, threads=native.threads())
    return settings


def _scheduled_problem(graph: Any, options: dict[str, Any], deadline: Any) -> tuple[Any, Any, bool]:
    """The problem with its operators in a searched order, the search's certificate, and whether the
    order is a pool's interleaving. The order search takes at most the share of the job's ``deadline``
    the command line gives it (:func:`gaplanner.schedule.choose.settings_within`); the plan, the rest."""
    from gaplanner.schedule.choose import settings_within
    from gaplanner.schedule.interleave import scheduled_pool
    from gaplanner.schedule.planning import scheduled_problem
    from service.inputs import rules_from_options, schedulable_document, schedulable_pool

    settings = settings_within(deadline, seed=options.get("seed", 0))
    rules = rules_from_options(options)
    if (pool := schedulable_pool(graph)) is not None:
        return (*scheduled_pool(*pool, "search", rules, settings), True)
    return (*scheduled_problem(schedulable_document(graph), "search", rules, settings), False)


def rendered(kind: str, result: dict[str, Any]) -> str:
    """A plan or comparison as its job route answers it, the response model's JSON: the server puts
    this text into its answers as it is. Read from its JSON text first, as the server reads results
    stored without it."""
    import json

    from service.models import Comparison, PlanResult

    model = PlanResult if kind == "plan" else Comparison
    return model.model_validate(json.loads(json.dumps(result))).model_dump_json()


def run_stored(
    job_id: str, slot: int | None, kind: str, request: bytes, options: dict[str, Any], max_trace: int
) -> dict[str, Any]:
    """:func:`run_job` on a stored request text; the result, trace (thinned to about ``max_trace``
    records), layout and progress as the store's JSON texts, with the peak and whether it stopped."""
    import json

    from service.store import json_text
    from service.traces import thin_trace

    started = time.perf_counter()  # reading the request counts in the job's time, as in run_job
    result = run_job(job_id, slot, kind, json.loads(request)["graph"], options, started)
    records = result["trace"]
    return {
        "result": rendered(kind, result.get("plan") or result.get("comparison")),
        "trace": json_text({"records": thin_trace(records, max_trace), "total_records": len(records)}),
        "layout": json_text(result.get("layout")),
        "progress": json_text(result["progress"]),
        "peak": result["peak"],
        "stopped": result["stopped"],
    }


def run_job(
    job_id: str,
    slot: int | None,
    kind: str,
    graph: Any,
    options: dict[str, Any],
    started: float | None = None,
) -> dict[str, Any]:
    """Plan (or compare on) one input; what the store keeps of the result. ``started``: when the job
    started (``time.perf_counter()``; default now)."""
    from gaplanner.deadline import Deadline
    from gaplanner.problem.loading import load_problem
    from gaplanner.solve import compare
    from service.inputs import rules_from_options

    if started is None:  # the job's time limit counts from its start, not from its submission
        started = time.perf_counter()
    if _progress is not None and slot is not None:  # which process runs the job, should one die
        _progress.put((job_id, {"pid": os.getpid()}))
    algorithm = options.get("algorithm", "ga") if kind == "plan" else "ga"
    settings = job_settings(algorithm, options)
    # reading the input, an order search and the plan, its verification included, come out of it
    deadline = Deadline(getattr(settings, "time_limit", None), started)
    searched = kind == "plan" and options.get("schedule") == "search"
    if searched:
        problem, schedule, pooled = _scheduled_problem(graph, options, deadline)
    else:
        problem = load_problem(graph, rules=rules_from_options(options))
    reporter = _Reporter(job_id, slot)
    hooks = {"on_progress": reporter.on_progress, "should_stop": reporter.should_stop}
    if kind == "compare":
        rows = compare(problem, settings, **hooks)  # in this process: a comparison takes no workers
        result: dict[str, Any] = {
            "comparison": {
                "name": problem.name,
                "blocks": problem.n,
                "lower_bound": problem.lower_bound,
                "rows": [
                    {
                        "algorithm": r.algorithm,
                        "peak": r.peak,
                        "ratio": round(r.ratio, 6),
                        "seconds": round(r.seconds, 6),
                        "optimal": r.optimal,
                    }
                    for r in rows
                ],
            },
            "trace": reporter.records,
            "peak": min(r.peak for r in rows),
        }
    else:
        plan, data = _plan(problem, algorithm, settings, {**hooks, "deadline": deadline}, options)
        if searched:
            from gaplanner.schedule.planning import with_interleaving, with_schedule

            plan = with_interleaving(plan, schedule) if pooled else with_schedule(plan, problem, schedule)
            data = plan.to_dict()
        trace = data.pop("trace", None)
        result = {
            "plan": data,
            "trace": trace if trace is not None else reporter.records,
            "layout": {"lower": problem.lower.tolist(), "upper": problem.upper.tolist()},
            "peak": plan.peak,
        }
    final = result["trace"][-1] if result["trace"] else None
    # A finished job's progress says what its plan says: the trace's last record may predate the
    # plan's counts (evaluations of the starting plans, a side-by-side exact search's).
    counted = result.get("plan") or {}
    result["progress"] = {
        "generation": counted.get("generations", final["generation"] if final else None),
        "best_peak": result["peak"],
        "lower_bound": problem.lower_bound,
        "elapsed_seconds": round(final["elapsed"], 6) if final else None,
        "evaluations": counted.get("evaluations", final["evaluations"] if final else None),
    }
    result["stopped"] = reporter.stopped
    return result
