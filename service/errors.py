"""Errors the API answers with: a status, one line naming the problem, and the field at fault."""

from __future__ import annotations


class ApiError(Exception):
    """An error response: ``{"detail": "<field>: <message>", "field": "<field>"}``."""

    def __init__(
        self, status: int, message: str, field: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        self.status, self.message, self.field, self.headers = status, message, field, headers
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message

    def body(self) -> dict[str, str | None]:
        return {"detail": self.detail, "field": self.field}
