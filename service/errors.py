"""Errors the API answers with: a status, one line naming the problem, and the field at fault."""

from __future__ import annotations

from gaplanner.errors import one_line


class ApiError(Exception):
    """An error response: ``{"detail": "<field>: <message>", "field": "<field>"}``."""

    def __init__(
        self, status: int, message: str, field: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        # A key or value quoted from the request may hold line breaks: the answer stays one line.
        self.status, self.message, self.headers = status, one_line(message), headers
        self.field = None if field is None else one_line(field)
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message

    def body(self) -> dict[str, str | None]:
        return {"detail": self.detail, "field": self.field}
