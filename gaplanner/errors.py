"""Exceptions raised by the library.

Every error a user can cause is an :class:`InputError` whose message names the
offending field; a plan that fails verification raises :class:`PlanError`.
"""

from __future__ import annotations


class GaplannerError(Exception):
    """Base class of every error the library raises on purpose."""


class InputError(GaplannerError, ValueError):
    """The input document is malformed or inconsistent.

    ``field`` is a dotted/indexed path into the document (``tensors[3].size``)
    when the problem can be pinned to one field.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}" if field else message)


class PlanError(GaplannerError):
    """A plan violates the problem: overlapping conflicting blocks, misaligned
    or negative offsets, or a block outside the arena."""
