"""The two kinds of jobs the service runs, plan jobs (``/v1/plans``) and comparison jobs
(``/v1/compare``): what tells their twin route sets apart."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from service.models import CompareJob, CompareRequest, PlanJob, PlanRequest


@dataclass(frozen=True)
class JobRoutes:
    """What tells the plan and the comparison route sets apart."""

    path: str  # under /v1
    noun: str  # in messages and summaries
    result: str  # the job's result key
    request: type[BaseModel]
    job: type[BaseModel]
    submit_doc: str
    list_doc: str
    get_doc: str
    trace_doc: str
    cancel_doc: str


JOB_ROUTES: dict[str, JobRoutes] = {
    "plan": JobRoutes(
        path="/plans",
        noun="plan",
        result="plan",
        request=PlanRequest,
        job=PlanJob,
        submit_doc="Queue a search for `graph`; the answer's `Location` is the job to poll.",
        list_doc="Recent plan jobs, newest first.",
        get_doc="Status, progress while it runs, and the verified plan once done.",
        trace_doc="The convergence trace: best and mean peak per generation (once the job has finished).",
        cancel_doc="200 with the cancelled job when it was queued; 202 when it runs (it stops within a "
        "generation and keeps its best plan).",
    ),
    "compare": JobRoutes(
        path="/compare",
        noun="comparison",
        result="comparison",
        request=CompareRequest,
        job=CompareJob,
        submit_doc="Queue first-fit, best-fit-coalescing, greedy-size and the GA on one input.",
        list_doc="Recent comparison jobs, newest first.",
        get_doc="Status, the GA's progress while it runs, and the comparison table once done.",
        trace_doc="The GA's convergence trace in the comparison.",
        cancel_doc="200 with the cancelled job when it was queued; 202 when it runs (it stops within a "
        "generation).",
    ),
}
