"""The job routes: one factory for the twin route sets of plan jobs (``/v1/plans``) and comparison
jobs (``/v1/compare``): submit, list, read, trace, cancel.

Every answer is built as data and goes out through the route's declared
response model. Handlers that touch SQLite or parse bodies run in the
server's thread pool, except reads of one job by id and the checks of small
submissions, which cost less than a thread hand-off.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from service import viewer
from service.config import ServiceSettings
from service.errors import ApiError
from service.inputs import parse_request, prepare
from service.job_kinds import JOB_ROUTES
from service.jobs import JobManager
from service.models import (
    Accepted,
    BundledInputs,
    ErrorBody,
    JobPage,
    Status,
    Trace,
    UploadedInput,
)
from service.store import FINISHED, DuplicateKey, JobStore
from service.uploads import bundled_inputs, parse_dims, read_upload

JSON = "application/json"

LimitQuery = Annotated[int, Query(ge=1, le=100, description="Jobs per page.")]
AfterQuery = Annotated[
    int | None, Query(ge=0, le=2**63 - 1, description="The cursor from the previous page's `next`.")
]
FilenameQuery = Annotated[
    str, Query(min_length=1, max_length=255, description="The file's name; its suffix says its format.")
]
StatusQuery = Annotated[Status | None, Query(description="Only jobs with this status.")]
BatchQuery = Annotated[
    int | None,
    Query(ge=1, le=2**31, description="An ONNX model's symbolic batch (first input dimension), fixed."),
]
DimQuery = Annotated[
    list[str] | None,
    Query(description="An ONNX model's symbolic dimension by name, `NAME=N` (repeatable)."),
]


def error_response(status: int, description: str) -> dict[int | str, dict[str, Any]]:
    """An error answer as OpenAPI documents it (the body is always an ErrorBody)."""
    return {status: {"model": ErrorBody, "description": description}}


ERRORS_READ = {**error_response(404, "No such job."), **error_response(422, "A malformed parameter.")}
BODY_ERRORS = {
    **error_response(413, "The body, or the input's block count, is over the server's limit."),
    **error_response(415, "The body is not declared application/json."),
    **error_response(
        422, "A malformed body, an invalid input document or an option beyond the server's caps."
    ),
    **error_response(503, "The queue is full; retry later."),
}


def _require_json(content_type: str | None) -> None:
    """415 unless the body is declared JSON: a body sent as text or with no type is not parsed as if it
    were (files in other formats go to ``/v1/inputs``)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != JSON and not (media.startswith("application/") and media.endswith("+json")):
        got = f"got {media}" if media else "the request has none"
        raise ApiError(415, f"expected Content-Type {JSON}; {got} (files go to /v1/inputs)", "Content-Type")


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _links(kind: str, job_id: str) -> dict[str, str | None]:
    base = f"/v1{JOB_ROUTES[kind].path}/{job_id}"
    return {"self": base, "trace": f"{base}/trace", "view": f"{base}/view" if kind == "plan" else None}


def _progress(lower_bound: int, stored: str | None, live: dict[str, Any] | None) -> dict[str, Any]:
    if live is not None:
        return {
            "generation": live["generation"],
            "best_peak": live["best_peak"],
            "lower_bound": lower_bound,
            "elapsed_seconds": round(live["elapsed"], 6),
            "evaluations": live["evaluations"],
        }
    if stored:
        return {**json.loads(stored), "lower_bound": lower_bound}
    return {
        "generation": None,
        "best_peak": None,
        "lower_bound": lower_bound,
        "elapsed_seconds": None,
        "evaluations": None,
    }


#: The request header that makes a submission safe to retry: the same key gets the same job.
IDEMPOTENCY_HEADER = "Idempotency-Key"


KEY_PARAMETER = {
    "name": IDEMPOTENCY_HEADER,
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": "^[!-~]{1,255}$"},
    "description": "Makes the submission safe to retry: a second one with the same key and request gets "
    "the first one's job back (header Idempotent-Replayed: true); with another request, 422.",
}


def _idempotency_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not 1 <= len(value) <= 255 or not all("!" <= c <= "~" for c in value):
        raise ApiError(422, "must be 1 to 255 visible ASCII characters", IDEMPOTENCY_HEADER)
    return value


#: Bytes of rendered finished jobs kept for status polls (oldest dropped first).
RENDERED_BYTES = 64 * 1024 * 1024


class JobHandlers:
    """What the job routes do, for either kind of job; the store and pool come from the app's lifespan."""

    def __init__(self, settings: ServiceSettings, state: dict[str, Any]) -> None:
        self.settings, self.state = settings, state
        # A finished job never changes again: its answer is rendered once, not re-parsed, re-validated
        # and re-serialised (plan and all) on every poll.
        self._rendered: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._rendered_bytes = 0

    @property
    def store(self) -> JobStore:
        return self.state["store"]

    @property
    def manager(self) -> JobManager:
        return self.state["manager"]

    def _row(self, kind: str, job_id: str) -> sqlite3.Row:
        row = self.store.get(job_id)
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no {JOB_ROUTES[kind].noun} job with id {job_id!r}", "id")
        return row

    def _fields(self, kind: str, row: sqlite3.Row, result: Any) -> dict[str, Any]:
        live = self.manager.live(row["id"]) if row["status"] == "running" else None
        live_progress, live_cancel = live if live is not None else (None, False)
        return {
            "id": row["id"],
            "kind": kind,
            "status": row["status"],
            "created_at": _iso(row["created"]),
            "started_at": _iso(row["started"]),
            "finished_at": _iso(row["finished"]),
            "input": {"name": row["name"], "blocks": row["blocks"], "lower_bound": row["lower_bound"]},
            "options": json.loads(row["options"]),
            "progress": _progress(row["lower_bound"], row["progress"], live_progress),
            "error": row["error"],
            "cancel_requested": bool(row["cancel_requested"]) or live_cancel,
            "attempts": row["attempts"],
            "links": _links(kind, row["id"]),
            JOB_ROUTES[kind].result: result,
        }

    def job(self, kind: str, job_id: str) -> dict[str, Any]:
        row = self._row(kind, job_id)
        return self._fields(kind, row, json.loads(row["result"]) if row["result"] else None)

    def _render(self, kind: str, row: sqlite3.Row) -> bytes:
        """The job's JSON. A result its worker rendered (:func:`service.worker.rendered`) goes in as
        it is where the job rendered without it says null: the route's model has the result last, so
        these are the bytes of rendering the whole job, without parsing and validating the result."""
        model = JOB_ROUTES[kind].job
        if row["result"] and row["result_rendered"]:
            empty = model.model_validate(self._fields(kind, row, None)).model_dump_json().encode()
            if empty.endswith(f'"{JOB_ROUTES[kind].result}":null}}'.encode()):
                return empty[: -len(b"null}")] + row["result"].encode() + b"}"
        job = self._fields(kind, row, json.loads(row["result"]) if row["result"] else None)
        return model.model_validate(job).model_dump_json().encode()

    def job_json(self, kind: str, job_id: str) -> bytes:
        """The job as its route's response model renders it; finished jobs from the cache."""
        cached = self._rendered.get(job_id)
        if cached is not None and cached[0] == kind:
            return cached[1]
        row = self._row(kind, job_id)
        body = self._render(kind, row)
        if row["status"] in FINISHED and len(body) <= RENDERED_BYTES // 16:
            self._rendered[job_id] = (kind, body)
            self._rendered_bytes += len(body)
            while self._rendered_bytes > RENDERED_BYTES:
                self._rendered_bytes -= len(self._rendered.popitem(last=False)[1][1])
        return body

    def submit(self, kind: str, request: BaseModel, body: bytes, response: Response, key: str | None = None,
               digest: str | None = None) -> dict[str, Any]:  # fmt: skip
        job = prepare(kind, request, self.settings, body)  # type: ignore[arg-type]
        try:
            self.manager.submit(replace(job, idempotency_key=key, request_digest=digest))
        except DuplicateKey:  # the same key submitted at once: the first one stored is the job
            return self.replay(kind, str(key), digest, response) or {}
        links = _links(kind, job.id)
        response.headers["Location"] = str(links["self"])
        return {"id": job.id, "status": "queued", "links": links}

    def replay(self, kind: str, key: str, digest: str | None, response: Response) -> dict[str, Any] | None:
        """The job an earlier submission with this idempotency key made, answered again; None if none."""
        row = self.store.by_key(kind, key)
        if row is None:
            return None
        if row["request_digest"] != digest:
            raise ApiError(422, "this key was sent before with a different request", IDEMPOTENCY_HEADER)
        links = _links(kind, row["id"])
        response.headers["Location"] = str(links["self"])
        response.headers["Idempotent-Replayed"] = "true"
        return {"id": row["id"], "status": row["status"], "links": links}

    async def accept(self, kind: str, request: Request, response: Response) -> dict[str, Any]:
        """Small documents are checked on the loop (cheaper than the GIL hand-offs of a thread while the
        loop is busy); large ones and bundled names, whose problems may take a while to build, in the
        thread pool. A submission with an ``Idempotency-Key`` seen before gets that job back."""
        _require_json(request.headers.get("content-type"))
        key = _idempotency_key(request.headers.get(IDEMPOTENCY_HEADER))
        body = await request.body()
        inline = len(body) <= self.settings.inline_body_bytes
        parsed = parse_request(kind, body) if inline else await run_in_threadpool(parse_request, kind, body)
        digest = hashlib.sha256(parsed.model_dump_json().encode()).hexdigest() if key else None
        if key is not None and (earlier := self.replay(kind, key, digest, response)) is not None:
            return earlier
        if not inline or isinstance(parsed.graph, str):  # type: ignore[attr-defined]
            return await run_in_threadpool(self.submit, kind, parsed, body, response, key, digest)
        return self.submit(kind, parsed, body, response, key, digest)

    def page(self, kind: str, limit: int, after: int | None, status: str | None) -> dict[str, Any]:
        rows, total = self.store.page(kind, limit, after, status)
        items = [
            {
                "id": r["id"],
                "kind": r["kind"],
                "status": r["status"],
                "created_at": _iso(r["created"]),
                "finished_at": _iso(r["finished"]),
                "name": r["name"],
                "blocks": r["blocks"],
                "algorithm": r["algorithm"],
                "lower_bound": r["lower_bound"],
                "peak": r["peak"],
                "links": _links(kind, r["id"]),
            }
            for r in rows
        ]
        following = None
        if len(rows) == limit and rows[-1]["seq"] > 1:
            query = f"limit={limit}&after={rows[-1]['seq']}" + (f"&status={status}" if status else "")
            following = f"/v1{JOB_ROUTES[kind].path}?{query}"
        return {"items": items, "total": total, "next": following}

    def trace(self, kind: str, job_id: str) -> dict[str, Any]:
        row = self.store.get_columns(job_id, "kind", "status", "lower_bound", "trace")
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no job with id {job_id!r}", "id")
        stored = json.loads(row["trace"]) if row["trace"] else {"records": [], "total_records": 0}
        live = self.manager.live_trace(job_id) if row["status"] == "running" else None
        if live:  # while it runs: the progress reports so far, a sample of the trace
            stored = {"records": live, "total_records": live[-1]["generation"] + 1}
        records = stored["records"]
        return {
            "id": job_id,
            "status": row["status"],
            "lower_bound": row["lower_bound"],
            "records": records,
            "total_records": stored["total_records"],
            "thinned": stored["total_records"] > len(records),
        }

    def cancel(self, kind: str, job_id: str, response: Response) -> dict[str, Any]:
        row = self.store.get_columns(job_id, "kind")
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no job with id {job_id!r}", "id")
        outcome = self.manager.cancel(job_id)
        if outcome in ("done", "failed"):
            raise ApiError(409, f"the job has already finished ({outcome})", "id")
        response.status_code = 202 if outcome == "stopping" else 200
        return self.job(kind, job_id)

    def view(self, job_id: str) -> HTMLResponse:
        row = self.store.get_columns(job_id, "kind", "status", "result", "layout", "trace")
        if row is None or row["kind"] != "plan":
            raise ApiError(404, f"no plan job with id {job_id!r}", "id")
        if not row["result"] or not row["layout"]:
            raise ApiError(409, f"the job has no plan to draw ({row['status']})", "id")
        records = json.loads(row["trace"])["records"] if row["trace"] else []
        page = viewer.render(row["status"], json.loads(row["result"]), json.loads(row["layout"]), records)
        return HTMLResponse(page)


def add_job_routes(router: APIRouter, kind: str, handlers: JobHandlers) -> None:
    """The submit / list / read / trace / cancel routes of one kind of job."""
    routes = JOB_ROUTES[kind]
    path, noun = routes.path, routes.noun
    schema = {"$ref": f"#/components/schemas/{routes.request.__name__}"}

    async def submit_job(request: Request, response: Response) -> dict[str, Any]:
        return await handlers.accept(kind, request, response)

    def list_jobs(
        limit: LimitQuery = 20, after: AfterQuery = None, status: StatusQuery = None
    ) -> dict[str, Any]:
        return handlers.page(kind, limit, after, status)

    async def get_job(job_id: str) -> Response:  # one indexed read: on the loop, no thread hop
        return Response(handlers.job_json(kind, job_id), media_type=JSON)

    def get_trace(job_id: str) -> dict[str, Any]:
        return handlers.trace(kind, job_id)

    def cancel_job(job_id: str, response: Response) -> dict[str, Any]:
        return handlers.cancel(kind, job_id, response)

    def add(
        suffix: str, endpoint: Callable[..., Any], method: str, summary: str, doc: str, **extra: Any
    ) -> None:
        name = f"{method.lower()}_{kind}{suffix.replace('/{job_id}', '_job').replace('/', '_')}"
        router.add_api_route(
            path + suffix, endpoint, methods=[method], summary=summary, description=doc, name=name, **extra
        )

    add(
        "", submit_job, "POST", f"Submit a {noun} job", routes.submit_doc, status_code=202,
        response_model=Accepted, responses=BODY_ERRORS,
        openapi_extra={"requestBody": {"required": True, "content": {JSON: {"schema": schema}}},
                       "parameters": [KEY_PARAMETER]},
    )  # fmt: skip
    add(
        "", list_jobs, "GET", f"List {noun} jobs", routes.list_doc, response_model=JobPage,
        responses=error_response(422, "A malformed parameter."),
    )  # fmt: skip
    add("/{job_id}", get_job, "GET", f"A {noun} job", routes.get_doc, response_model=routes.job,
        responses=ERRORS_READ)  # fmt: skip
    add(
        "/{job_id}/trace", get_trace, "GET", f"A {noun} job's convergence trace", routes.trace_doc,
        response_model=Trace, responses=ERRORS_READ,
    )  # fmt: skip
    stopping = {"model": routes.job, "description": "The search is stopping; it keeps its best result."}
    finished = error_response(409, "The job has already finished.")
    add(
        "/{job_id}", cancel_job, "DELETE", f"Cancel a {noun} job", routes.cancel_doc,
        response_model=routes.job, responses={202: stopping, **ERRORS_READ, **finished},
    )  # fmt: skip


def job_router(handlers: JobHandlers, dependencies: list[Any], responses: dict[int | str, Any]) -> APIRouter:
    """Every job route under ``/v1``, plus the plan viewer."""
    v1 = APIRouter(prefix="/v1", dependencies=dependencies, responses=responses)
    for kind in JOB_ROUTES:
        add_job_routes(v1, kind, handlers)

    @v1.get(
        "/plans/{job_id}/view",
        response_class=HTMLResponse,
        responses={**ERRORS_READ, **error_response(409, "The job has no plan (yet).")},
    )
    def view_plan(job_id: str) -> HTMLResponse:
        """A self-contained HTML page drawing the plan and its convergence curve (works offline)."""
        return handlers.view(job_id)

    @v1.post(
        "/inputs",
        response_model=UploadedInput,
        responses={
            **error_response(413, "The file, or its block count, is over the server's limit."),
            **error_response(415, "The file name ends in neither .json, .csv nor .onnx."),
            **error_response(422, "The file is not a valid input."),
        },
        openapi_extra={"requestBody": {"required": True, "content": {"application/octet-stream": {}}}},
    )
    async def upload_input(
        request: Request, filename: FilenameQuery, batch: BatchQuery = None, dim: DimQuery = None
    ) -> dict[str, Any]:
        """Read a file sent as the body (graph JSON, MiniMalloc CSV or ONNX) into the document to submit;
        ``batch`` and ``dim`` fix an ONNX model's symbolic dimensions."""
        body = await request.body()
        shapes = {"batch": batch, "dims": parse_dims(dim or [])}
        return await run_in_threadpool(read_upload, filename, body, handlers.settings, **shapes)

    @v1.get("/inputs", response_model=BundledInputs)
    def list_inputs() -> dict[str, list[str]]:
        """The bundled networks and examples, by the names ``graph`` accepts."""
        return bundled_inputs()

    return v1
