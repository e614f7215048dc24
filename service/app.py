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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
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

    def job_json(kind: str, job_id: str) -> str:
        row = store().get(job_id)
        if row is None or row["kind"] != kind:
            raise ApiError(
                404, f"no {'plan' if kind == 'plan' else 'comparison'} job with id {job_id!r}", "id"
            )
        live = manager().live(job_id) if row["status"] == "running" else None
        live_progress, live_cancel = live if live is not None else (None, False)
        head = {
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
        }
        result_key = "plan" if kind == "plan" else "comparison"
        # The stored result is JSON text already: splice it in rather than parse and re-encode it.
        return json.dumps(head, separators=(",", ":"))[:-1] + f',"{result_key}":{row["result"] or "null"}}}'

    def submit(kind: str, request: PlanRequest | CompareRequest) -> JSONResponse:
        job = prepare(kind, request, settings)
        manager().submit(job)
        links = _links(kind, job.id)
        return JSONResponse(
            {"id": job.id, "status": "queued", "links": links},
            status_code=202,
            headers={"Location": str(links["self"])},
        )

    async def accept(kind: str, request: Request) -> JSONResponse:
        """Small documents are checked on the loop (about a millisecond: less than the GIL hand-offs of
        a thread while the loop is busy); large ones and bundled names, whose problems may take a
        while to build, in the thread pool."""
        body = await request.body()
        if len(body) > settings.inline_body_bytes:
            parsed = await run_in_threadpool(parse_request, kind, body)
        else:
            parsed = parse_request(kind, body)
        if len(body) > settings.inline_body_bytes or isinstance(parsed.graph, str):
            return await run_in_threadpool(submit, kind, parsed)
        return submit(kind, parsed)

    def page(kind: str, limit: int, after: int | None, status: str | None) -> JSONResponse:
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
            following = f"/v1/{'plans' if kind == 'plan' else 'compare'}?{query}"
        return JSONResponse({"items": items, "total": total, "next": following})

    def trace(kind: str, job_id: str) -> JSONResponse:
        row = store().get_columns(job_id, "kind", "status", "lower_bound", "trace")
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no job with id {job_id!r}", "id")
        stored = json.loads(row["trace"]) if row["trace"] else {"records": [], "total_records": 0}
        live = manager().live_trace(job_id) if row["status"] == "running" else None
        if live:  # while it runs: the progress reports so far, a sample of the trace
            stored = {"records": live, "total_records": live[-1]["generation"] + 1}
        records = stored["records"]
        return JSONResponse(
            {
                "id": job_id,
                "status": row["status"],
                "lower_bound": row["lower_bound"],
                "records": records,
                "total_records": stored["total_records"],
                "thinned": stored["total_records"] > len(records),
            }
        )

    def cancel(kind: str, job_id: str) -> Response:
        row = store().get_columns(job_id, "kind")
        if row is None or row["kind"] != kind:
            raise ApiError(404, f"no job with id {job_id!r}", "id")
        outcome = manager().cancel(job_id)
        if outcome in ("done", "failed"):
            raise ApiError(409, f"the job has already finished ({outcome})", "id")
        status = 202 if outcome == "stopping" else 200
        return Response(job_json(kind, job_id), status_code=status, media_type=JSON)

    body_errors = {
        **_error(413, "The body, or the input's block count, is over the server's limit."),
        **_error(422, "A malformed body, an invalid input document or an option beyond the server's caps."),
        **_error(503, "The queue is full; retry later."),
    }

    def request_body(model: str) -> dict[str, Any]:
        schema = {"$ref": f"#/components/schemas/{model}"}
        return {"requestBody": {"required": True, "content": {JSON: {"schema": schema}}}}

    @v1.post(
        "/plans",
        status_code=202,
        response_model=Accepted,
        responses=body_errors,
        openapi_extra=request_body("PlanRequest"),
        summary="Submit a plan job",
    )
    async def create_plan(request: Request) -> JSONResponse:
        """Queue a search for `graph`; the answer's `Location` is the job to poll."""
        return await accept("plan", request)

    @v1.get("/plans", response_model=JobPage, responses=_error(422, "A malformed parameter."))
    def list_plans(
        limit: LimitQuery = 20, after: AfterQuery = None, status: StatusQuery = None
    ) -> JSONResponse:
        """Recent plan jobs, newest first."""
        return page("plan", limit, after, status)

    @v1.get("/plans/{job_id}", response_model=PlanJob, responses=ERRORS_READ, summary="A plan job")
    async def get_plan(job_id: str) -> Response:  # one indexed read: on the loop, no thread hop
        """Status, progress while it runs, and the verified plan once done."""
        return Response(job_json("plan", job_id), media_type=JSON)

    @v1.get("/plans/{job_id}/trace", response_model=Trace, responses=ERRORS_READ)
    def get_plan_trace(job_id: str) -> JSONResponse:
        """The convergence trace: best and mean peak per generation (once the job has finished)."""
        return trace("plan", job_id)

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

    @v1.delete(
        "/plans/{job_id}",
        response_model=PlanJob,
        responses={
            202: {"model": PlanJob, "description": "The search is stopping; it keeps its best plan."},
            **ERRORS_READ,
            **_error(409, "The job has already finished."),
        },
        summary="Cancel a plan job",
    )
    def cancel_plan(job_id: str) -> Response:
        """200 with the cancelled job when it was queued; 202 when it runs (it stops within a generation)."""
        return cancel("plan", job_id)

    @v1.post(
        "/compare",
        status_code=202,
        response_model=Accepted,
        responses=body_errors,
        openapi_extra=request_body("CompareRequest"),
        summary="Submit a comparison job",
    )
    async def create_comparison(request: Request) -> JSONResponse:
        """Queue first-fit, best-fit-coalescing, greedy-size and the GA on one input."""
        return await accept("compare", request)

    @v1.get("/compare", response_model=JobPage, responses=_error(422, "A malformed parameter."))
    def list_comparisons(
        limit: LimitQuery = 20, after: AfterQuery = None, status: StatusQuery = None
    ) -> JSONResponse:
        """Recent comparison jobs, newest first."""
        return page("compare", limit, after, status)

    @v1.get("/compare/{job_id}", response_model=CompareJob, responses=ERRORS_READ, summary="A comparison job")
    async def get_comparison(job_id: str) -> Response:
        """Status, the GA's progress while it runs, and the comparison table once done."""
        return Response(job_json("compare", job_id), media_type=JSON)

    @v1.get("/compare/{job_id}/trace", response_model=Trace, responses=ERRORS_READ)
    def get_comparison_trace(job_id: str) -> JSONResponse:
        """The GA's convergence trace in the comparison."""
        return trace("compare", job_id)

    @v1.delete(
        "/compare/{job_id}",
        response_model=CompareJob,
        responses={
            202: {"model": CompareJob, "description": "The search is stopping."},
            **ERRORS_READ,
            **_error(409, "The job has already finished."),
        },
        summary="Cancel a comparison job",
    )
    def cancel_comparison(job_id: str) -> Response:
        return cancel("compare", job_id)

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
