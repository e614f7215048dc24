"""The runtime's memory rules a plan follows: what may share bytes, and for how long."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gaplanner.errors import InputError

InplaceChoice = Literal["auto", "always", "never"]
INPLACE_CHOICES: tuple[str, ...] = ("auto", "always", "never")


@dataclass(frozen=True)
class Rules:
    """How the model's runtime treats memory; the defaults are what runtimes do.

    ``keep_outputs``: the caller reads the model's outputs after the last
    operator, so they stay intact until the model ends. A runtime that copies
    each output out as soon as it is written sets it to False.

    ``views``: an operator's declared view shares its input's bytes (one block,
    lifetimes merged). False plans every view as a copy.

    ``inplace``: what to do with the operators' declared in-place chances (an
    output written over an input that dies there). ``auto`` takes a chance when
    it cannot raise the lower bound (always when the output is as large as the
    input), ``always`` takes every legal one, ``never`` none.
    """

    keep_outputs: bool = True
    views: bool = True
    inplace: InplaceChoice = "auto"

    def __post_init__(self) -> None:
        if self.inplace not in INPLACE_CHOICES:
            raise InputError(f"must be one of {', '.join(INPLACE_CHOICES)}, got {self.inplace!r}", "inplace")
