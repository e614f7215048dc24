"""Status polls answered before FastAPI's routing: the service's most frequent request, made cheap.

A client waiting for a job polls ``GET /v1/plans/{id}`` (or ``/v1/compare/{id}``)
over and over. Its answer is a few bytes the handlers keep rendered for a
finished job; what costs is the framework around it: routing, dependency
resolution, the exception and exit-stack middleware, the response class. This
ASGI middleware answers those requests itself with the same bytes and
headers, and hands everything else, including any poll it is not sure of (a
missing or wrong API key, an unknown job, an id FastAPI would not match), to
the application, which answers as it always did.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from service.errors import ApiError

if TYPE_CHECKING:
    from service.routes import JobHandlers

#: The job routes a poll may take, by path prefix: the kind of job each serves.
POLL_PREFIXES = {"/v1/plans/": "plan", "/v1/compare/": "compare"}


def key_digest(key: str) -> bytes:
    """The SHA-256 digest keys are compared on: neither a key's bytes nor its length show in the timing."""
    return hashlib.sha256(key.encode()).digest()


def key_matches(supplied: str | None, expected: bytes) -> bool:
    """Whether ``supplied`` is the key whose digest is ``expected``, compared in constant time."""
    digest = key_digest(supplied or "")
    return hmac.compare_digest(digest, expected) and supplied is not None


def poll_target(path: str) -> tuple[str, str] | None:
    """``(kind, job_id)`` when ``path`` is a job's status route, else None (sub-routes, empty ids)."""
    for prefix, kind in POLL_PREFIXES.items():
        if path.startswith(prefix):
            job_id = path[len(prefix) :]
            return (kind, job_id) if job_id and "/" not in job_id else None
    return None


def supplied_key(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The API key a request carries, as the application reads it: ``X-API-Key`` first, else
    ``Authorization: Bearer``; None for neither."""
    found = {name: value for name, value in reversed(headers) if name in (b"x-api-key", b"authorization")}
    if b"x-api-key" in found:
        return found[b"x-api-key"].decode("latin-1")
    scheme, _, token = found.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token if scheme.lower() == "bearer" and token else None


class StatusPolls:
    """Answers authorised status polls from :meth:`JobHandlers.job_json`; the rest goes to ``app``."""

    def __init__(self, app: ASGIApp, handlers: JobHandlers, api_key: str | None) -> None:
        self.app, self.handlers = app, handlers
        self.expected = None if not api_key else key_digest(api_key)

    def _authorised(self, scope: Scope) -> bool:
        return self.expected is None or key_matches(supplied_key(scope["headers"]), self.expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        target = poll_target(scope["path"])
        if target is None or not self._authorised(scope):
            await self.app(scope, receive, send)
            return
        try:
            body = self.handlers.job_json(*target)
        except ApiError:  # no such job: the application answers it, as it answers every error
            await self.app(scope, receive, send)
            return
        headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
