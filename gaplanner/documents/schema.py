"""Input documents: pydantic models for graph JSON and buffer lists.

A document carries either a *graph* (``tensors`` + ``operators`` and optional
cross-core ``sync`` edges) or a *buffer list* (``buffers`` with half-open
lifetimes). :func:`parse_document` turns raw JSON data into a validated
:class:`Document` and converts pydantic's errors into one :class:`InputError`
naming the field.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gaplanner.errors import InputError

#: Bytes per element of the dtypes a tensor may declare.
DTYPE_BYTES: dict[str, int] = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "float8": 1,
    "float8_e4m3": 1,
    "float8_e5m2": 1,
    "int16": 2,
    "uint16": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
}

#: Characters no id may hold: C0 and C1 controls (NUL, line breaks, ...), the line and paragraph
#: separators, and the bidirectional marks, embeddings, overrides and isolates that show a name other
#: than the one stored.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
FORBIDDEN_IN_IDS = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}\\u2028\\u2029]")


def id_problem(text: str) -> str | None:
    """Why ``text`` cannot be an id (a control or bidirectional-override character), or None."""
    found = FORBIDDEN_IN_IDS.search(text)
    if found is None:
        return None
    return f"an id may not hold control character U+{ord(found.group()):04X} (at position {found.start()})"


def _printable_id(text: str) -> str:
    if (problem := id_problem(text)) is not None:
        raise ValueError(problem)
    return text


Identifier = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_printable_id)]
#: Integers stay within JSON's exact range (and far inside int64, so sums do not overflow).
MAX_INTEGER = 2**53


def _json_integer(value: Any) -> Any:
    """Sizes, offsets and times are JSON integers: ``"10"``, ``10.0`` or ``true`` are refused, never
    converted (an integer of another kind, a numpy one say, is still one)."""
    if type(value) is int:  # what JSON gives: skip the slower check of the abstract class
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        kind = {str: "a string", float: "a fraction", bool: "a boolean"}.get(
            type(value), type(value).__name__
        )
        raise ValueError(f"expected a JSON integer, got {kind} {value!r}")
    return value


# The limits come before the JSON-integer check in each Annotated: limits after a BeforeValidator
# are exported to the JSON Schema as pydantic's own names (gt, le), which no schema tool reads.
PositiveInt = Annotated[int, Field(gt=0, le=MAX_INTEGER), BeforeValidator(_json_integer)]
Offset = Annotated[int, Field(ge=0, le=MAX_INTEGER), BeforeValidator(_json_integer)]
Time = Annotated[int, Field(ge=-MAX_INTEGER, le=MAX_INTEGER), BeforeValidator(_json_integer)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tensor(_Strict):
    """A tensor (block). Give ``size`` in bytes, or ``shape`` and ``dtype``."""

    id: Identifier
    size: PositiveInt | None = Field(None, description="Size in bytes.")
    shape: list[Offset] | None = Field(None, description="Dimensions; bytes = product(shape) * bytes(dtype).")
    dtype: str | None = Field(None, description=f"One of {', '.join(DTYPE_BYTES)}.")
    alignment: PositiveInt | None = Field(
        None, description="This tensor's offset must be a multiple of it (and of the graph's)."
    )
    part_of: Identifier | None = Field(
        None, description="The whole tensor this one is a per-core part of (multi-core splits)."
    )
    offset: Offset | None = Field(
        None, description="Pinned: the runtime places this tensor at this offset; every plan keeps it there."
    )
    memory: Identifier | None = Field(
        None, description="Pinned to this memory (an id from the document's 'memories')."
    )

    @model_validator(mode="after")
    def _size_or_shape(self) -> Self:
        if self.size is None and self.shape is None:
            raise ValueError("give either 'size' or 'shape' and 'dtype'")
        if self.shape is None:
            if self.dtype is not None:
                raise ValueError("'dtype' needs a 'shape'")
            return self
        if self.dtype is None:
            raise ValueError("'shape' needs a 'dtype'")
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"unknown dtype {self.dtype!r}")
        if self._shape_bytes() <= 0:
            raise ValueError("shape x dtype gives 0 bytes; sizes must be positive")
        if self._shape_bytes() > MAX_INTEGER:
            raise ValueError("shape x dtype gives more than 2**53 bytes")
        if self.size is not None and self.size != self._shape_bytes():
            raise ValueError(f"'size' {self.size} disagrees with shape x dtype = {self._shape_bytes()}")
        return self

    def _shape_bytes(self) -> int:
        assert self.shape is not None and self.dtype is not None
        return math.prod(self.shape) * DTYPE_BYTES.get(self.dtype, 0)

    @property
    def nbytes(self) -> int:
        return self.size if self.size is not None else self._shape_bytes()


class Operator(_Strict):
    """An operator. Its position in ``operators`` is its place in its core's program."""

    id: Identifier
    inputs: list[Identifier] = Field(default_factory=list, description="Tensor ids it reads.")
    outputs: list[Identifier] = Field(default_factory=list, description="Tensor ids it writes.")
    core: Offset = Field(0, description="The core whose program runs it.")
    views: dict[Identifier, Identifier] = Field(
        default_factory=dict,
        description="Outputs that are views of an input ({output: input}): the same bytes, no copy.",
    )
    inplace: dict[Identifier, Identifier | list[Identifier]] = Field(
        default_factory=dict,
        description="Outputs the operator may write over an input ({output: input or [inputs]}); "
        "the planner decides whether to.",
    )
    workspace: PositiveInt | None = Field(
        None, description="Scratch bytes the operator needs while it runs, and only then."
    )
    device: Identifier | None = Field(
        None, description="The compute unit that runs it (an id from the document's 'devices')."
    )
    after: list[Identifier] = Field(
        default_factory=list,
        description="Operators that must finish before this one starts, beside its data inputs "
        "(side effects, in-place mutation of a buffer, I/O): kept when the order is searched.",
    )


class SyncEdge(_Strict):
    """An explicit cross-core ordering: operator ``before`` finishes before ``after`` starts."""

    before: Identifier
    after: Identifier


class Buffer(_Strict):
    """A block with a known half-open lifetime ``[lower, upper)`` (MiniMalloc's convention)."""

    id: Identifier
    lower: Time
    upper: Time
    size: PositiveInt
    offset: Offset | None = Field(None, description="Pinned: every plan keeps the buffer at this offset.")
    memory: Identifier | None = Field(
        None, description="Pinned to this memory (an id from the document's 'memories')."
    )

    @model_validator(mode="after")
    def _non_empty_lifetime(self) -> Self:
        if self.upper <= self.lower:
            raise ValueError(f"upper ({self.upper}) must be greater than lower ({self.lower})")
        return self


Cost = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Memory(_Strict):
    """A memory blocks may be placed in (on-chip SRAM, DRAM, ...); ``memories`` lists them fastest first."""

    id: Identifier
    capacity: PositiveInt | None = Field(
        None, description="Bytes; optional for the last (slowest) memory, which is then unbounded."
    )
    alignment: PositiveInt | None = Field(
        None, description="Every offset in this memory is a multiple of it (a power of two)."
    )
    read_cost: Cost | None = Field(
        None,
        description="Cost of reading one byte; default: 1 for the first memory, 10 times the one before "
        "for each next one.",
    )
    write_cost: Cost | None = Field(None, description="Cost of writing one byte; default: the read cost.")


class Device(_Strict):
    """A compute unit (NPU, DSP, CPU, ...): the alignment it needs and the memories it can reach."""

    id: Identifier
    alignment: PositiveInt = Field(
        1, description="Every tensor it reads or writes sits at a multiple of it (bytes, a power of two)."
    )
    memories: list[Identifier] | None = Field(
        None,
        description="The memories it can read and write (ids from the document's 'memories'); "
        "default: every one.",
    )

    @field_validator("alignment", mode="before")
    @classmethod
    def _power_of_two(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and (value < 1 or value & (value - 1)):
            raise ValueError(f"must be a positive power of two, got {value}")
        return value


class Document(_Strict):
    """A planning input: a graph (tensors + operators) or a buffer list."""

    name: str | None = Field(None, description="A label carried into the plan.")
    alignment: PositiveInt = Field(1, description="Every offset is a multiple of it (bytes).")
    tensors: list[Tensor] | None = None
    operators: list[Operator] | None = None
    sync: list[SyncEdge] = Field(default_factory=list, description="Cross-core ordering edges.")
    inputs: list[Identifier] | None = Field(
        None, description="The model's inputs (tensor ids); default: the tensors no operator writes."
    )
    outputs: list[Identifier] | None = Field(
        None,
        description="The model's outputs (tensor ids), kept intact until the model ends; "
        "default: the tensors no operator reads.",
    )
    buffers: list[Buffer] | None = None
    memories: list[Memory] | None = Field(
        None,
        description="Memories with capacities and access costs, fastest first; without it, one unbounded "
        "arena.",
    )
    devices: list[Device] | None = Field(
        None,
        description="Compute units operators run on ('device' on an operator): each tensor is one buffer "
        "aligned for, and in a memory reachable by, every unit that reads or writes it.",
    )

    @model_validator(mode="after")
    def _graph_or_buffers(self) -> Self:
        has_graph = self.tensors is not None or self.operators is not None
        if has_graph and self.buffers is not None:
            raise ValueError("give either 'tensors'/'operators' or 'buffers', not both")
        if self.buffers is not None:
            if not self.buffers:
                raise ValueError("'buffers' is empty")
            if self.sync:
                raise ValueError("'sync' only applies to graphs")
            if self.inputs is not None or self.outputs is not None:
                raise ValueError("'inputs' and 'outputs' only apply to graphs")
            if self.devices is not None:
                raise ValueError("'devices' only apply to graphs (operators run on them)")
            return self
        if not self.tensors:
            raise ValueError("'tensors' is missing or empty (or give 'buffers')")
        if not self.operators:
            raise ValueError("'operators' is missing or empty")
        return self

    @property
    def is_graph(self) -> bool:
        return self.buffers is None

    @property
    def block_count(self) -> int:
        return len(self.buffers) if self.buffers is not None else len(self.tensors or [])


def field_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:  # a dict key quoted with its control characters escaped: the message stays one line
            path += ("." if path else "") + (repr(part) if id_problem(str(part)) else str(part))
    return path


def error_message(error: Any) -> str:
    """One of pydantic's errors in the user's words: a JSON string or fraction given for an integer
    says what it got (documents are read strictly: ``"size": "10"`` is refused, never converted)."""
    if error["type"] in ("int_type", "int_from_float", "int_parsing"):
        value = error.get("input")
        kind = {str: "a string", float: "a fraction", bool: "a boolean"}.get(
            type(value), type(value).__name__
        )
        return f"expected a JSON integer, got {kind} {value!r}"
    return str(error["msg"]).removeprefix("Value error, ")


def parse_document(data: Any) -> Document:
    """Validate raw JSON data into a :class:`Document`; raise :class:`InputError` otherwise.

    Integers must be JSON integers (a size is not ``"10"`` nor ``10.0``):
    nothing is silently converted.
    """
    if not isinstance(data, dict):
        raise InputError("a document must be a JSON object with 'tensors'/'operators' or 'buffers'")
    try:
        return Document.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise InputError(error_message(first), field_path(first["loc"]) or None) from None


def document_json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`Document` (exported to ``gaplanner/documents/schema/``)."""
    schema = Document.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gaplanner input document"
    return schema
