"""The FastAPI application: routes under ``/v1``, limits, errors, API key, OpenAPI.

Routes are a thin shell: :mod:`service.inputs` validates with the library's
own checks, :mod:`service.jobs` queues and runs ``gaplanner.solve`` /
``gaplanner.compare`` in worker processes, :mod:`service.store` keeps
everything in SQLite. Handlers that touch SQLite or parse bodies run in the
server's thread pool, except reads of one job by id and the checks of small
submissions, which cost less than a thread hand-off.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gaplanner.schema import Document
from service import viewer
from service.config import ServiceSettings
from service.errors import ApiError
from service.inputs import parse_request, prepare
from service.jobs import JobManager
from service.models import (
    Accepted,
    CompareJob,
    CompareRequest,
    ErrorBody,
    Health,
    JobPage,
    PlanJob,
    PlanRequest,
    Status,
    Trace,
)
from service.store import JobStore

log = logging.getLogger("service")

try:
    VERSION = version("gaplanner")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
    VERSION = "0+unknown"

JSON = "application/json"


LimitQuery = Annotated[int, Query(ge=1, le=100, description="Jobs per page.")]
AfterQuery = Annotated[
    int | None, Query(ge=0, le=2**63 - 1, description="The cursor from the previous page's `next`.")
]
StatusQuery = Annotated[Status | None, Query(description="Only jobs with this status.")]


def _error(status: int, description: str) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorBody, "description": description}}


ERRORS_READ = {**_error(404, "No such job."), **_error(422, "A malformed parameter.")}


class BodyLimit:
    """413 for bodies over the limit, whether announced by Content-Length or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = ApiError(413, f"the body is larger than this server's {self.max_bytes} bytes", "body")
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            response = JSONResponse(too_large.body(), status_code=413, headers={"Connection": "close"})
            await response(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise too_large
            return message

        await self.app(scope, limited, send)


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _links(kind: str, job_id: str) -> dict[str, str | None]:
    base = f"/v1/{'plans' if kind == 'plan' else 'compare'}/{job_id}"
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

BODY_ERRORS = {
    **_error(413, "The body, or the input's block count, is over the server's limit."),
    **_error(422, "A malformed body, an invalid input document or an option beyond the server's caps."),
    **_error(503, "The queue is full; retry later."),
}


def _add_job_routes(
    router: APIRouter,
    kind: str,
    routes: JobRoutes,
    accept: Callable[[str, Request, Response], Awaitable[dict[str, Any]]],
    page: Callable[[str, int, int | None, str | None], dict[str, Any]],
    job: Callable[[str, str], dict[str, Any]],
    trace: Callable[[str, str], dict[str, Any]],
    cancel: Callable[[str, str, Response], dict[str, Any]],
) -> None:
    """The submit / list / read / trace / cancel routes of one kind of job."""
    path, noun = routes.path, routes.noun
    schema = {"$ref": f"#/components/schemas/{routes.request.__name__}"}
    body = {"requestBody": {"required": True, "content": {JSON: {"schema": schema}}}}

    async def submit_job(request: Request, response: Response) -> dict[str, Any]:
        return await accept(kind, request, response)

    def list_jobs(
        limit: LimitQuery = 20, after: AfterQuery = None, status: StatusQuery = None
    ) -> dict[str, Any]:
        return page(kind, limit, after, status)

    async def get_job(job_id: str) -> dict[str, Any]:  # one indexed read: on the loop, no thread hop
        return job(kind, job_id)

    def get_trace(job_id: str) -> dict[str, Any]:
        return trace(kind, job_id)

    def cancel_job(job_id: str, response: Response) -> dict[str, Any]:
        return cancel(kind, job_id, response)

    stopping = {"model": routes.job, "description": "The search is stopping; it keeps its best result."}
    router.add_api_route(
        path,
        submit_job,
        methods=["POST"],
        status_code=202,
        response_model=Accepted,
        responses=BODY_ERRORS,
        openapi_extra=body,
        summary=f"Submit a {noun} job",
        description=routes.submit_doc,
        name=f"create_{kind}",
    )
    router.add_api_route(
        path,
        list_jobs,
        methods=["GET"],
        response_model=JobPage,
        responses=_error(422, "A malformed parameter."),
        summary=f"List {noun} jobs",
        description=routes.list_doc,
        name=f"list_{kind}",
    )
    router.add_api_route(
        f"{path}/{{job_id}}",
        get_job,
        methods=["GET"],
        response_model=routes.job,
        responses=ERRORS_READ,
        summary=f"A {noun} job",
        description=routes.get_doc,
        name=f"get_{kind}",
    )
    router.add_api_route(
        f"{path}/{{job_id}}/trace",
        get_trace,
        methods=["GET"],
        response_model=Trace,
        responses=ERRORS_READ,
        summary=f"A {noun} job's convergence trace",
        description=routes.trace_doc,
        name=f"get_{kind}_trace",
    )
    router.add_api_route(
        f"{path}/{{job_id}}",
        cancel_job,
        methods=["DELETE"],
        response_model=routes.job,
        responses={202: stopping, **ERRORS_READ, **_error(409, "The job has already finished.")},
        summary=f"Cancel a {noun} job",
        description=routes.cancel_doc,
        name=f"cancel_{kind}",
    )


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """The application; its lifespan opens the store and starts the worker pool."""
    settings = settings or ServiceSettings()
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = JobStore(settings.db)
        manager = JobManager(settings, store)
        manager.start()
        state.update(store=store, manager=manager)
        app.state.manager = manager
        log.info("gaplanner service: %d workers, database %s", settings.workers, settings.db)
        try:
            yield
        finally:
            manager.stop()
            store.close()

    app = FastAPI(
        title="gaplanner",
        version=VERSION,
        summary="Static memory plans for deep-learning models, searched by a genetic algorithm and verified.",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)

    # --- errors: one line naming the problem, never a stack trace ----------------------------------

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        loc = [str(p) for p in first.get("loc", ()) if p not in ("query", "path", "header", "body")]
        error = ApiError(422, str(first.get("msg", "invalid value")), ".".join(loc) or None)
        return JSONResponse(error.body(), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # Starlette names the methods of the first matching route only
            methods = {
                method
                for route in app.router.routes
                if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE
                for method in route.methods or ()
            }
            headers["Allow"] = ", ".join(sorted(methods))
        return JSONResponse({"detail": str(exc.detail), "field": None}, exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal server error (see the server log)", "field": None}, 500)

    # --- access -------------------------------------------------------------------------------------

    dependencies = []
    if settings.api_key:
        key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The server's API key.")
        bearer = HTTPBearer(auto_error=False, description="The server's API key as a bearer token.")
        expected = settings.api_key.encode()

        def require_key(  # defaults, not Annotated: the annotations are strings, the schemes are local
            key: str | None = Security(key_header),
            token: HTTPAuthorizationCredentials | None = Security(bearer),  # noqa: B008
        ) -> None:
            supplied = key or (token.credentials if token else None)
            if supplied is None or not secrets.compare_digest(supplied.encode(), expected):
                raise ApiError(
                    401,
                    "missing or wrong API key (send X-API-Key: KEY or Authorization: Bearer KEY)",
                    None,
                    {"WWW-Authenticate": "Bearer"},
                )

        dependencies.append(Depends(require_key))
    unauthorized = _error(401, "Missing or wrong API key.") if settings.api_key else {}
    v1 = APIRouter(prefix="/v1", dependencies=dependencies, responses=unauthorized)

    def manager() -> JobManager:
        return state["manager"]

    def store() -> JobStore:
        return state["store"]

    # --- jobs ---------------------------------------------------------------------------------------

    def job(kind: str, job_id: str) -> dict[str, Any]:
        row = store().get(job_id)
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no {JOB_ROUTES[kind].noun} job with id {job_id!r}", "id")
        live = manager().live(job_id) if row["status"] == "running" else None
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
            JOB_ROUTES[kind].result: json.loads(row["result"]) if row["result"] else None,
        }

    def submit(kind: str, request: PlanRequest | CompareRequest, response: Response) -> dict[str, Any]:
        job = prepare(kind, request, settings)
        manager().submit(job)
        links = _links(kind, job.id)
        response.headers["Location"] = str(links["self"])
        return {"id": job.id, "status": "queued", "links": links}

    async def accept(kind: str, request: Request, response: Response) -> dict[str, Any]:
        """Small documents are checked on the loop (about a millisecond: less than the GIL hand-offs of
        a thread while the loop is busy); large ones and bundled names, whose problems may take a
        while to build, in the thread pool."""
        body = await request.body()
        if len(body) > settings.inline_body_bytes:
            parsed = await run_in_threadpool(parse_request, kind, body)
        else:
            parsed = parse_request(kind, body)
        if len(body) > settings.inline_body_bytes or isinstance(parsed.graph, str):
            return await run_in_threadpool(submit, kind, parsed, response)
        return submit(kind, parsed, response)

    def page(kind: str, limit: int, after: int | None, status: str | None) -> dict[str, Any]:
        rows, total = store().page(kind, limit, after, status)
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

    def trace(kind: str, job_id: str) -> dict[str, Any]:
        row = store().get_columns(job_id, "kind", "status", "lower_bound", "trace")
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no job with id {job_id!r}", "id")
        stored = json.loads(row["trace"]) if row["trace"] else {"records": [], "total_records": 0}
        live = manager().live_trace(job_id) if row["status"] == "running" else None
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

    def cancel(kind: str, job_id: str, response: Response) -> dict[str, Any]:
        row = store().get_columns(job_id, "kind")
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no job with id {job_id!r}", "id")
        outcome = manager().cancel(job_id)
        if outcome in ("done", "failed"):
            raise ApiError(409, f"the job has already finished ({outcome})", "id")
        response.status_code = 202 if outcome == "stopping" else 200
        return job(kind, job_id)

    for kind, routes in JOB_ROUTES.items():
        _add_job_routes(v1, kind, routes, accept, page, job, trace, cancel)

    @v1.get(
        "/plans/{job_id}/view",
        response_class=HTMLResponse,
        responses={**ERRORS_READ, **_error(409, "The job has no plan (yet).")},
    )
    def view_plan(job_id: str) -> HTMLResponse:
        """A self-contained HTML page drawing the plan and its convergence curve (works offline)."""
        row = store().get_columns(job_id, "kind", "status", "result", "layout", "trace")
        if row is None or row["kind"] != "plan":
            raise ApiError(404, f"no plan job with id {job_id!r}", "id")
        if not row["result"] or not row["layout"]:
            raise ApiError(409, f"the job has no plan to draw ({row['status']})", "id")
        records = json.loads(row["trace"])["records"] if row["trace"] else []
        page_html = viewer.render(
            row["status"], json.loads(row["result"]), json.loads(row["layout"]), records
        )
        return HTMLResponse(page_html)

    app.include_router(v1)

    @app.get("/v1/health", response_model=Health, tags=["health"])
    async def health() -> dict[str, Any]:
        """Liveness and queue depth; needs no API key."""
        return {"status": "ok", **manager().health(), "version": VERSION}

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            # The request bodies are parsed by the service itself (off the event loop): add their
            # schemas, and the library's input document they refer to, as components.
            _, extra = models_json_schema(
                [(PlanRequest, "validation"), (CompareRequest, "validation"), (Document, "validation")],
                ref_template="#/components/schemas/{model}",
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in extra["$defs"].items():
                components.setdefault(name, definition)
            # Every error is JSON (ErrorBody), whatever the route answers when it succeeds.
            error = {JSON: {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
            for operations in schema["paths"].values():
                for operation in operations.values():
                    for code, response in operation.get("responses", {}).items():
                        if code.isdigit() and int(code) >= 400:
                            response["content"] = error
            for unused in ("HTTPValidationError", "ValidationError"):
                components.pop(unused, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def run_server(
    host: str = "127.0.0.1",
    port: int = 8000,
    db: str | None = None,
    workers: int | None = None,
    log_level: str = "info",
) -> None:
    """``gaplanner serve``: the app under uvicorn (settings from ``GAPLANNER_*`` plus these arguments)."""
    import uvicorn

    overrides: dict[str, Any] = {"db": db, "workers": workers}
    settings = ServiceSettings(**{k: v for k, v in overrides.items() if v is not None})
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, timeout_graceful_shutdown=10)
