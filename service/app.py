"""The FastAPI application: routes under ``/v1``, limits, errors, API key, OpenAPI.

Routes are a thin shell: :mod:`service.routes` declares them,
:mod:`service.inputs` validates with the library's own checks,
:mod:`service.jobs` queues and runs ``gaplanner.solve`` /
``gaplanner.compare`` in worker processes, :mod:`service.store` keeps
everything in SQLite.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import Depends, FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic.json_schema import models_json_schema
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gaplanner.documents.schema import Document
from service.config import ServiceSettings
from service.errors import ApiError
from service.jobs import JobManager
from service.models import CompareRequest, Health, PlanRequest
from service.polls import StatusPolls, key_digest, key_matches
from service.routes import JSON, JobHandlers, error_response, job_router
from service.store import JobStore
from service.viewer import planner_page

log = logging.getLogger("service")

try:
    VERSION = version("gaplanner")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
    VERSION = "0+unknown"


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


def _add_error_handlers(app: FastAPI) -> None:
    """Errors: one line naming the problem, never a stack trace."""

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

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, exc: ClientDisconnect) -> JSONResponse:
        # The body was cut short by the client: nothing was accepted, and nobody is there to answer.
        log.info("%s %s: the client closed the connection mid-body", request.method, request.url.path)
        error = ApiError(400, "the connection closed before the whole body arrived", "body")
        return JSONResponse(error.body(), status_code=400, headers={"Connection": "close"})

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal server error (see the server log)", "field": None}, 500)


def _access(settings: ServiceSettings) -> list[Any]:
    """The routes' dependencies: the API key, when the server has one."""
    dependencies = []
    if settings.api_key:
        key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The server's API key.")
        bearer = HTTPBearer(auto_error=False, description="The server's API key as a bearer token.")
        expected = key_digest(settings.api_key)

        def require_key(  # defaults, not Annotated: the annotations are strings, the schemes are local
            key: str | None = Security(key_header),
            token: HTTPAuthorizationCredentials | None = Security(bearer),  # noqa: B008
        ) -> None:
            supplied = key or (token.credentials if token else None)
            if not key_matches(supplied, expected):  # constant time, on digests
                raise ApiError(
                    401,
                    "missing or wrong API key (send X-API-Key: KEY or Authorization: Bearer KEY)",
                    None,
                    {"WWW-Authenticate": "Bearer"},
                )

        dependencies.append(Depends(require_key))
    return dependencies


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The schema, with the request bodies the service parses itself and JSON errors everywhere."""
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
    handlers = JobHandlers(settings, state)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    # Outermost of the service's own: status polls skip the routing and the body limit they do not need.
    app.add_middleware(StatusPolls, handlers=handlers, api_key=settings.api_key)

    _add_error_handlers(app)

    dependencies = _access(settings)
    unauthorized = error_response(401, "Missing or wrong API key.") if settings.api_key else {}
    v1 = job_router(handlers, dependencies, unauthorized)
    app.include_router(v1)

    @app.get("/v1/health", response_model=Health, tags=["health"])
    async def health() -> dict[str, Any]:
        """Liveness and queue depth; needs no API key."""
        return {"status": "ok", **state["manager"].health(), "version": VERSION}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        """The page to plan from (static: it calls the routes above from the browser)."""
        return HTMLResponse(planner_page())

    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
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
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level=log_level,
        access_log=settings.access_log,
        timeout_graceful_shutdown=10,
    )
