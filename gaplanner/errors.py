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
        self.field = None if field is None else one_line(field)
        self.reason = one_line(message)
        super().__init__(f"{self.field}: {self.reason}" if self.field else self.reason)


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped: an error stays one line
    even when it quotes a key or value of the input that holds them."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class PlanError(GaplannerError):
    """A plan violates the problem: overlapping conflicting blocks, misaligned
    or negative offsets, or a block outside the arena."""


class DoesNotFit(GaplannerError):
    """No placement found keeps every block within its memory's capacity."""
