"""From a request body to a job the store can keep: parsing, limits and the library's own checks.

Runs on the event loop for small bodies, in a thread of the server's pool for
larger ones (:meth:`service.routes.JobHandlers.accept`): it parses the
JSON and builds the problem once (conflicts, cycles, unknown ids, sizes are
all the library's checks), so a job that is accepted will plan.
"""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

from pydantic import BaseModel, ValidationError

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Buffer, Document, error_message, parse_document
from gaplanner.documents.zoo import ZOO_PREFIX, zoo_document
from gaplanner.errors import InputError
from gaplanner.plans.capacity import fits_question
from gaplanner.problem.loading import load_document, load_pool_data, load_problem
from gaplanner.problem.pools import PoolDocument, problem_from_pool_document, read_pool_document
from gaplanner.problem.problem import build_problem
from gaplanner.registry import lookup
from gaplanner.schedule.choose import given_order
from gaplanner.schedule.dag import build_dag
from gaplanner.schedule.interleave import check_interleavable, given_interleaving
from gaplanner.solve import settings_for
from service.config import ServiceSettings
from service.errors import ApiError
from service.models import CompareRequest, PlanRequest
from service.store import NewJob

NAME_PREFIXES = (ZOO_PREFIX, "example:")


def _path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else ("." if path else "") + str(part)
    return path


def _graph_error(exc: InputError) -> ApiError:
    field = "graph" if exc.field in (None, "input") else f"graph.{exc.field}"
    return ApiError(422, exc.reason, field)


def parse_body(body: bytes, model: type[BaseModel]) -> BaseModel:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(422, f"the body is not valid JSON ({exc})", "body") from None
    except RecursionError:
        raise ApiError(422, "the body is nested too deeply", "body") from None
    if not isinstance(data, dict):
        raise ApiError(422, 'expected a JSON object {"graph": ..., "options": {...}}', "body")
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise ApiError(422, error_message(first), _path(first["loc"]) or "body") from None


def _check_blocks(count: int, field: str, settings: ServiceSettings) -> None:
    if count > settings.max_blocks:
        raise ApiError(413, f"{count} blocks; this server plans at most {settings.max_blocks} per job", field)


def _raw_block_count(graph: dict[str, Any]) -> tuple[int, str]:
    for key in ("buffers", "tensors"):
        if isinstance(graph.get(key), list):
            return len(graph[key]), f"graph.{key}"
    return 0, "graph"


#: Largest integer a document may hold: exact in every JSON reader, and far from the library's int64.
MAX_INTEGER = 2**53 - 1
#: Sizes (plus alignment padding) must add up to less than this, so no sum or offset overflows int64.
MAX_TOTAL_BYTES = 2**62


#: Integers written with at most this many digits lie below 10**12, far within MAX_INTEGER.
SHORT_DIGITS = 12
_DIGITS_AS_ONES = bytes.maketrans(b"0123456789", b"1" * 10)


def short_numbers(body: bytes) -> bool:
    """Whether no run of digits in ``body`` is longer than SHORT_DIGITS: then the integer checks below,
    which walk every value of the parsed document in Python, have nothing to find."""
    return b"1" * (SHORT_DIGITS + 1) not in body.translate(_DIGITS_AS_ONES)


def _any_huge_integer(value: Any) -> bool:
    """Whether parsed JSON holds an integer beyond ±MAX_INTEGER (no paths built: the common case)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INTEGER:
            return True
    return False


def _huge_integer(value: Any, path: str) -> str | None:
    """The path of the first integer beyond ±MAX_INTEGER in parsed JSON, or None."""
    if not _any_huge_integer(value):
        return None
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INTEGER:
            return where
    return None


def _total_bytes(document: Document) -> int:
    """The blocks' sizes plus a bound on each one's alignment padding, in Python integers."""
    blocks = document.buffers if document.buffers is not None else document.tensors or []
    total = 0
    devices = max((d.alignment for d in document.devices or []), default=1)  # a bound on any device's padding
    for block in blocks:
        size = block.size if isinstance(block, Buffer) else block.nbytes
        total += size + max(document.alignment, block.__dict__.get("alignment") or 1, devices)
    return total


def _small_buffer_list(document: Document) -> bool:
    """Whether a document whose numbers are all short (:func:`short_numbers`) is sure to total less
    than MAX_TOTAL_BYTES: a buffer list (sizes as written; a tensor's comes from its shape), and
    below two million blocks, each adding a size and a padding under 10**SHORT_DIGITS."""
    return document.buffers is not None and len(document.buffers) * 2 * 10**SHORT_DIGITS < MAX_TOTAL_BYTES


def _check_total(total: int, field: str) -> None:
    if total >= MAX_TOTAL_BYTES:
        raise ApiError(422, f"the blocks add up to {total} bytes; at most 2**62 can be planned", field)


def rules_from_options(options: dict[str, Any]) -> Rules:
    """The runtime's memory rules a request's options name (the library's defaults otherwise)."""
    return Rules(
        keep_outputs=options.get("keep_outputs", True),
        views=options.get("views", True),
        inplace=options.get("inplace", "auto"),
    )


def _problem(
    kind: str,
    graph: Any,
    settings: ServiceSettings,
    rules: Rules,
    algorithm: str,
    searched: bool = False,
    short: bool = False,
):
    """The problem of a request's ``graph``, with the server's limits applied first.

    A document with ``memories`` is planned across them (plan jobs only; a
    comparison plans one arena), by an algorithm that plans across memories.
    ``searched``: the order is searched (a pool's interleaving need not be given).
    ``short``: the request's numbers are all short (:func:`short_numbers`).
    """
    problem = _one_arena_problem(graph, settings, rules, searched, short)
    if problem.memories is None:
        return problem
    if kind == "compare":
        raise ApiError(
            422, "a comparison plans one arena; submit documents with memories to /v1/plans", "graph.memories"
        )
    question, _ = fits_question(problem, None)  # one memory with a capacity: a one-arena question
    if question.memories is not None:
        try:
            lookup(algorithm).refuse(question, None)
        except InputError as exc:
            raise ApiError(422, exc.reason, "options.algorithm") from None
    return problem


def _one_arena_problem(
    graph: Any, settings: ServiceSettings, rules: Rules, searched: bool = False, short: bool = False
):
    try:
        if isinstance(graph, str):
            if not graph.startswith(NAME_PREFIXES):
                raise ApiError(
                    422,
                    "a name must be zoo:NAME, zoo:NAME@N or example:NAME (or give a graph document)",
                    "graph",
                )
            if graph.startswith(ZOO_PREFIX):
                document = zoo_document(graph)
                _check_blocks(document.block_count, "graph", settings)
                return build_problem(document, document.name, rules)
            problem = load_problem(graph, rules=rules)
            _check_blocks(problem.n, "graph", settings)
            return problem
        _check_blocks(*_raw_block_count(graph), settings)
        if not short and (path := _huge_integer(graph, "graph")) is not None:
            raise ApiError(422, f"integers must lie within ±{MAX_INTEGER} (2**53 - 1)", path)
        if isinstance(graph, dict) and "models" in graph:
            return _pool_problem(graph, settings, rules, searched)
        document = parse_document(graph)
        _check_blocks(document.block_count, "graph", settings)
        if not (short and _small_buffer_list(document)):
            field = "graph.buffers" if document.buffers is not None else "graph.tensors"
            _check_total(_total_bytes(document), field)
        return build_problem(document, rules=rules)
    except InputError as exc:
        raise _graph_error(exc) from None
    except RecursionError:
        raise ApiError(422, "the document is nested too deeply", "graph") from None


def _pool_problem(graph: dict[str, Any], settings: ServiceSettings, rules: Rules, searched: bool = False):
    """Several models in one pool (a ``models`` document), within the limits one document has; with
    ``searched``, interleaved models run in their given interleaving (round robin without one)."""
    models = graph["models"] if isinstance(graph["models"], list) else []
    documents = [m["document"] for m in models if isinstance(m, dict) and isinstance(m.get("document"), dict)]
    _check_blocks(sum(_raw_block_count(d)[0] for d in documents), "graph.models", settings)
    _check_total(sum(_parsed_total(d) for d in documents), "graph.models")
    pool, models = read_pool_document(graph)  # errors name the model's field
    if searched and pool.together == "interleaved":
        problem, _ = given_interleaving(
            models, pool.shared, rules, pool.schedule, pool.memories, pool.name or "pool"
        )
    else:
        problem = problem_from_pool_document(graph, rules=rules)
    _check_blocks(problem.n, "graph.models", settings)
    return problem


def _parsed_total(data: dict[str, Any]) -> int:
    try:
        return _total_bytes(parse_document(data))
    except InputError:  # the pool's own reading names the field
        return 0


def _options(kind: str, options: dict[str, Any], settings: ServiceSettings) -> dict[str, Any]:
    """Options with the server's defaults filled in and its caps checked."""
    limit = options.get("time_limit")
    if limit is None:
        options["time_limit"] = min(settings.default_time_limit, settings.max_time_limit)
    elif not math.isfinite(limit) or limit > settings.max_time_limit:
        raise ApiError(
            422,
            f"at most {settings.max_time_limit:g} seconds on this server, got {limit:g}",
            "options.time_limit",
        )
    if options["population"] > settings.max_population:
        raise ApiError(422, f"at most {settings.max_population}", "options.population")
    if options["islands"] > settings.max_islands:
        raise ApiError(422, f"at most {settings.max_islands}", "options.islands")
    workers = options.get("workers")
    if workers is None:
        options.pop("workers", None)
    elif workers != 1:
        if kind == "compare":  # a comparison runs in this process (gaplanner.solve.compare)
            raise ApiError(
                422, f"{kind} jobs run their search in-process here; workers must be 1", "options.workers"
            )
        if workers > settings.max_job_workers:
            raise ApiError(422, f"at most {settings.max_job_workers}", "options.workers")
    try:
        settings_for(options.get("algorithm", "ga") if kind == "plan" else "ga", options)
    except InputError as exc:
        raise ApiError(422, exc.reason, f"options.{exc.field}" if exc.field else "options") from None
    return options


def parse_request(kind: str, body: bytes) -> PlanRequest | CompareRequest:
    """The body of ``POST /v1/plans`` (kind ``plan``) or ``POST /v1/compare`` (``compare``)."""
    return parse_body(body, PlanRequest if kind == "plan" else CompareRequest)  # type: ignore[return-value]


def prepare(
    kind: str, request: PlanRequest | CompareRequest, settings: ServiceSettings, body: bytes | None = None
) -> NewJob:
    """A validated job: options within the server's caps, an input that builds a problem. ``body``, the
    request's JSON text, is what the job stores and its worker reads."""
    options = _options(kind, request.options.model_dump(), settings)  # type: ignore[attr-defined]
    graph = request.graph  # type: ignore[attr-defined]
    algorithm = options.get("algorithm", "ga") if kind == "plan" else "ga"
    searched = kind == "plan" and options.get("schedule") == "search"
    short = body is not None and short_numbers(body)
    problem = _problem(kind, graph, settings, rules_from_options(options), algorithm, searched, short)
    if searched:  # after _problem: a name is one the server knows
        _check_schedulable(graph)
    return NewJob(
        id=uuid.uuid4().hex,
        kind=kind,
        graph=graph,
        options=options,
        name=problem.name,
        blocks=problem.n,
        lower_bound=problem.lower_bound,
        algorithm=options.get("algorithm", "compare"),
        request=body,
    )


def schedulable_pool(graph: Any) -> tuple[PoolDocument, list[tuple[str, Document]]] | None:
    """The pool (a ``models`` document, inline or by name) whose interleaving a plan job searches;
    None for any other input."""
    if isinstance(graph, dict):
        data = graph if "models" in graph else None
    else:
        data = (load_pool_data(graph) or (None, ""))[0]
    return None if data is None else read_pool_document(data)


def schedulable_document(graph: Any) -> Document:
    """The graph document whose operator order a plan job searches (a name or a document)."""
    document = load_document(graph) if isinstance(graph, str) else parse_document(graph)
    if not document.is_graph:
        raise ApiError(422, "a buffer list has no operators to order", "options.schedule")
    if document.memories is not None:
        raise ApiError(
            422, "an order is planned in one arena; this document has memories", "options.schedule"
        )
    return document


def _check_schedulable(graph: Any) -> None:
    """Refuse at once what the order search would: a dependency cycle, a listed order breaking one."""
    try:
        if (pool := schedulable_pool(graph)) is not None:
            found, models = pool
            check_interleavable(found.together, found.memories)
            given_interleaving(models, found.shared, None, found.schedule, found.memories)
            return
        document = schedulable_document(graph)
        given_order(document, build_dag(document))
    except InputError as exc:
        raise _graph_error(exc) from None
    except RecursionError:
        raise ApiError(422, "the document is nested too deeply", "graph") from None
