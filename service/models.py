"""The API's request and response bodies (pydantic); they are what /docs shows."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Annotated, Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model, field_validator

from gaplanner.plans.plan import GenerationRecord
from gaplanner.registry import ALGORITHMS
from gaplanner.search.ga import GASettings
from gaplanner.solve import ComparisonRow as LibraryComparisonRow

_GA = GASettings()

Status = Literal["queued", "running", "done", "failed", "cancelled"]
Kind = Literal["plan", "compare"]
Algorithm = Literal[tuple(ALGORITHMS)]  # type: ignore[valid-type]

#: What ``graph`` accepts, as OpenAPI shows it (``Document`` is the library's input schema).
GRAPH_SCHEMA: dict[str, Any] = {
    "description": (
        "A graph or buffer-list document (the schema of `gaplanner schema`), or the name of a bundled "
        "input: `zoo:NAME`, `zoo:NAME@N` (split over N cores) or `example:NAME`."
    ),
    "anyOf": [
        {"$ref": "#/components/schemas/Document"},
        {"type": "string", "pattern": "^(zoo|example):", "examples": ["zoo:resnet50", "zoo:resnet50@2"]},
    ],
}


def model_of(cls: type, name: str) -> type[BaseModel]:
    """A response model with the fields of one of the library's dataclasses.

    The service answers with what the library returns: deriving the model
    keeps the two from drifting apart.
    """
    hints = get_type_hints(cls)
    definitions: dict[str, Any] = {
        f.name: (hints[f.name], ... if f.default is MISSING else Field(f.default, exclude_if=_absent))
        for f in fields(cls)
    }  # a field the dataclass may leave None (a trace's best_cost, one arena) is left out when it is
    return create_model(name, __doc__=cls.__doc__, **definitions)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchOptions(_Body):
    """Genetic-search settings (see `gaplanner.search.ga.GASettings`); the server caps them."""

    seed: int = Field(_GA.seed, ge=0, le=2**63 - 1, description="Same seed and budget, same plan.")
    time_limit: float | None = Field(
        None, gt=0, description="Seconds of search (default and maximum are set by the server)."
    )
    population: int = Field(_GA.population, ge=4, description="Individuals per island.")
    generations: int | None = Field(_GA.generations, ge=0, description="Stop after this many generations.")
    stall_generations: int | None = Field(
        _GA.stall_generations, ge=1, description="Stop after this many generations without improvement."
    )
    islands: int = Field(_GA.islands, ge=1, description="Populations evolved side by side.")
    exact_share: float | None = Field(
        None, ge=0, lt=1, description="Share of the time limit for exact probes beside the GA "
        "(default: half where the exact search takes the whole problem; 0: the GA alone).",
    )  # fmt: skip
    workers: int | None = Field(
        None, ge=1, description="Processes for the islands, where the planner supports it (1: in-process)."
    )
    inplace: Literal["auto", "always", "never"] = Field(
        "auto", description="Declared in-place writes: take those that cannot raise the bound, all, or none."
    )
    views: bool = Field(True, description="Declared views share their input's bytes (false: copies).")
    keep_outputs: bool = Field(
        True, description="Model outputs stay intact until the model ends (false: copied out when written)."
    )


class PlanOptions(SearchOptions):
    algorithm: Algorithm = Field(
        "ga", description="The planner: `ga` by default, a baseline, or `random-search`."
    )
    schedule: Literal["fixed", "search"] = Field(
        "fixed",
        description="The operators' order: the graph's own (fixed), or one searched to lower the bound "
        "(search: the plan carries `schedule` and `certificate`); for a pool of models run interleaved, "
        "their interleaving (`MODEL/operator` ids).",
    )


GraphField = Annotated[Any, WithJsonSchema(GRAPH_SCHEMA)]


class _GraphRequest(_Body):
    graph: GraphField

    @field_validator("graph")
    @classmethod
    def _object_or_name(cls, value: Any) -> Any:
        if not isinstance(value, dict | str):
            raise ValueError(
                "expected a graph or buffer-list document (a JSON object) or a name such as zoo:resnet50"
            )
        return value


class PlanRequest(_GraphRequest):
    """A plan job: the input and, optionally, how to search."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"graph": "zoo:resnet50", "options": {"time_limit": 2}},
                {
                    "graph": {
                        "buffers": [
                            {"id": "a", "lower": 0, "upper": 2, "size": 1024},
                            {"id": "b", "lower": 1, "upper": 3, "size": 2048},
                            {"id": "c", "lower": 2, "upper": 4, "size": 1024},
                        ]
                    },
                    "options": {"algorithm": "ga", "seed": 1, "time_limit": 1},
                },
            ]
        }
    )
    options: PlanOptions = Field(default_factory=PlanOptions)


class CompareRequest(_GraphRequest):
    """A comparison job: every baseline and the GA on one input."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"graph": "zoo:mobilenetv2@2", "options": {"time_limit": 2}}]}
    )
    options: SearchOptions = Field(default_factory=SearchOptions)


class Links(BaseModel):
    self: str
    trace: str
    view: str | None = None


class Accepted(BaseModel):
    id: str
    status: Status
    links: Links


class InputSummary(BaseModel):
    name: str
    blocks: int
    lower_bound: int


class Progress(BaseModel):
    """The search so far: null until the job has started."""

    generation: int | None = None
    best_peak: int | None = None
    lower_bound: int
    elapsed_seconds: float | None = None
    evaluations: int | None = None


def _absent(value: Any) -> bool:
    """Fields of plans across memories are left out of one-arena plans (and the other way round)."""
    return value is None


class PlanBlock(BaseModel):
    id: str
    memory: str | None = Field(
        None, description="The memory it is in (documents with `memories`).", exclude_if=_absent
    )
    offset: int = Field(description="Bytes from the start of its memory (or of the one arena).")
    size: int


class MemoryUse(BaseModel):
    """One memory of a plan across memories."""

    id: str
    capacity: int | None = Field(description="Bytes; null for an unbounded memory.")
    peak: int = Field(description="The highest byte used in it.")
    blocks: int = Field(description="Blocks placed in it.")
    read_cost: float
    write_cost: float


class PlanResult(BaseModel):
    """The plan JSON `gaplanner plan` prints, less the trace (served at .../trace).

    One arena: `peak`, `lower_bound`, `ratio`, `optimal`. Across memories (a
    document with `memories`): `memories` (each memory's peak and blocks), each
    block's `memory`, the total access `cost` and `cost_lower_bound`; `peak` is
    the sum of the memories' peaks, `lower_bound` a bound on that sum, and
    `optimal` true when the cost meets `cost_lower_bound`. A document whose memories all have a
    capacity (or one memory with a capacity) asks whether it fits: `fits` is
    true on a plan (a job that does not fit fails, saying why).
    """

    model_config = ConfigDict(extra="allow")

    name: str
    algorithm: str
    peak: int
    lower_bound: int | None = Field(None, exclude_if=_absent)
    ratio: float | None = Field(None, exclude_if=_absent)
    optimal: bool | None = Field(None, exclude_if=_absent)
    elapsed_seconds: float
    blocks: list[PlanBlock]
    memories: list[MemoryUse] | None = Field(None, exclude_if=_absent)
    cost: float | None = Field(
        None, description="Bytes written and read, times their memory's cost per byte.", exclude_if=_absent
    )
    cost_lower_bound: float | None = Field(None, description="No plan costs less.", exclude_if=_absent)
    fits: bool | None = Field(None, exclude_if=_absent)
    capacity: int | None = Field(None, exclude_if=_absent)


ComparisonRow = model_of(LibraryComparisonRow, "ComparisonRow")


class Comparison(BaseModel):
    name: str
    blocks: int
    lower_bound: int
    rows: list[ComparisonRow] = Field(description="The baselines, then the GA.")  # type: ignore[valid-type]


class _Job(BaseModel):
    id: str
    kind: Kind
    status: Status
    created_at: str = Field(description="ISO 8601, UTC.")
    started_at: str | None
    finished_at: str | None
    input: InputSummary
    progress: Progress
    error: str | None = Field(description="Why the job failed, when it did.")
    cancel_requested: bool
    attempts: int = Field(description="Runs interrupted by a server restart or a worker crash.")
    links: Links


class PlanJob(_Job):
    options: PlanOptions
    plan: PlanResult | None = Field(
        description="When done (or cancelled after a plan was found): the verified plan."
    )


class CompareJob(_Job):
    options: SearchOptions
    comparison: Comparison | None = Field(description="When done: the comparison table.")


class JobSummary(BaseModel):
    id: str
    kind: Kind
    status: Status
    created_at: str
    finished_at: str | None
    name: str
    blocks: int
    algorithm: str
    lower_bound: int
    peak: int | None
    links: Links


class JobPage(BaseModel):
    items: list[JobSummary]
    total: int = Field(description="Jobs matching the filter.")
    next: str | None = Field(description="The next page, or null on the last one.")


TraceRecord = model_of(GenerationRecord, "TraceRecord")


class Trace(BaseModel):
    id: str
    status: Status
    lower_bound: int
    records: list[TraceRecord] = Field(  # type: ignore[valid-type]
        description="One per generation once finished (empty for baselines); while the search runs, "
        "the progress reports so far (about ten a second)."
    )
    total_records: int = Field(description="Generations recorded; more than len(records) when thinned.")
    thinned: bool


class UploadedInput(BaseModel):
    """A file read as an input: submit its ``graph`` to ``/v1/plans`` or ``/v1/compare``."""

    name: str
    blocks: int
    lower_bound: int
    graph: dict[str, Any] = Field(description="The graph or buffer-list document the file describes.")


class BundledInputs(BaseModel):
    zoo: list[str] = Field(description="Bundled networks, `zoo:NAME` (add `@N` to split over N cores).")
    examples: list[str] = Field(description="Bundled examples, `example:NAME`.")


class Health(BaseModel):
    status: Literal["ok"]
    queue_depth: int = Field(description="Jobs waiting for a worker.")
    running: int
    workers: int
    version: str


class ErrorBody(BaseModel):
    detail: str = Field(description="One line naming the problem.")
    field: str | None = Field(description="The request field at fault, when there is one.")
