"""Several models in one memory pool: run one after another, at the same time, or interleaved.

Each model keeps its own id namespace (``MODEL/tensor``). One after another
(``sequential``), a model starts when the one before has finished, so every
byte can be reused; at the same time (``concurrent``), each model runs on its
own cores or streams and nothing live in one shares with anything live in
another; ``interleaved``, the models' operators run in a given order (a
``schedule`` of ``MODEL/operator`` ids: a runtime time-slicing two models on
one device), each model's own order kept. A model's outputs are read by its caller when that model ends. A
tensor listed in ``shared`` (a KV cache read by a prefill and a decode model,
say) is one buffer under its own name for every model that uses it, and
persists across them all.

Graphs pool into one graph (its happens-before order says who runs when);
buffer lists pool into one buffer list (shifted in time one after another, or
on vector clocks, one component per model, at the same time).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gaplanner.documents.lifetimes import WORKSPACE_SUFFIX
from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import (
    Document,
    Identifier,
    Memory,
    Operator,
    SyncEdge,
    Tensor,
    error_message,
    field_path,
    parse_document,
)
from gaplanner.errors import InputError
from gaplanner.problem.problem import Problem, build_problem, problem_from_arrays, problem_from_clocks

TOGETHER: tuple[str, ...] = ("sequential", "concurrent", "interleaved")
#: Separator between a model's id and its own ids in the pooled document.
MODEL_SEP = "/"
CALLER = "<caller>"  # reads a model's outputs when it ends
FEED = "<feed>"  # writes a model's inputs when it starts


class PooledModel(BaseModel):
    """One model of a pool: an id and its document (a graph or a buffer list)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: Identifier
    document: dict[str, Any]


class PoolDocument(BaseModel):
    """Several models planned into one pool (``gaplanner plan A B --together ...``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None = None
    models: Annotated[list[PooledModel], Field(min_length=1)]
    together: Literal["sequential", "concurrent", "interleaved"] = "sequential"
    shared: list[Identifier] = Field(default_factory=list, description="Tensor ids shared by the models.")
    schedule: list[Identifier] | None = Field(
        None,
        description="With together 'interleaved': every model's operators (MODEL/operator) in run order.",
    )
    memories: list[Memory] | None = Field(
        None, description="One memory map for every model (graphs); the models may pin tensors to them."
    )


def _check_ids(models: Sequence[tuple[str, Document]]) -> None:
    seen: set[str] = set()
    for k, (model_id, _) in enumerate(models):
        if model_id in seen:
            raise InputError(f"model id {model_id!r} is used twice", f"models[{k}].id")
        seen.add(model_id)


def _shared_sizes(models: Sequence[tuple[str, Document]], shared: Sequence[str]) -> dict[str, Tensor]:
    found: dict[str, Tensor] = {}
    for k, (model_id, doc) in enumerate(models):
        for tensor in doc.tensors or []:
            if tensor.id not in shared:
                continue
            if tensor.id in found and found[tensor.id].nbytes != tensor.nbytes:
                raise InputError(
                    f"shared tensor {tensor.id!r} has {tensor.nbytes} bytes in model {model_id!r}, "
                    f"{found[tensor.id].nbytes} before",
                    f"models[{k}].document.tensors",
                )
            if tensor.id in found and found[tensor.id].memory != tensor.memory:
                raise InputError(
                    f"shared tensor {tensor.id!r} is pinned to memory {tensor.memory!r} in model "
                    f"{model_id!r}, {found[tensor.id].memory!r} before",
                    f"models[{k}].document.tensors",
                )
            aligned = _aligned(tensor, doc)
            if tensor.id in found:  # one buffer for every model: aligned as each of them asks
                aligned = int(np.lcm(aligned, found[tensor.id].alignment or 1))
            found[tensor.id] = found.get(tensor.id, tensor).model_copy(update={"alignment": aligned})
    for name in shared:
        if name not in found:
            raise InputError(f"no model has a tensor {name!r}", "shared")
    return found


def _model_outputs(doc: Document) -> list[str]:
    if doc.outputs is not None:
        return list(doc.outputs)
    read = {t for op in doc.operators or [] for t in op.inputs}
    return [t for op in doc.operators or [] for t in op.outputs if t not in read]


def _renamed_operators(model_id: str, doc: Document, rename: Any, core_base: int) -> list[Operator]:
    ops = []
    for op in doc.operators or []:
        hosts = {o: [rename(t) for t in ([i] if isinstance(i, str) else i)] for o, i in op.inplace.items()}
        ops.append(
            op.model_copy(
                update={
                    "id": f"{model_id}{MODEL_SEP}{op.id}",
                    "inputs": [rename(t) for t in op.inputs],
                    "outputs": [rename(t) for t in op.outputs],
                    "views": {rename(o): rename(i) for o, i in op.views.items()},
                    "inplace": {rename(o): h for o, h in zip(hosts, hosts.values(), strict=True)},
                    "core": core_base + op.core,
                    "after": [f"{model_id}{MODEL_SEP}{a}" for a in op.after],
                }
            )
        )
    return ops


def _pool_graphs(
    models: Sequence[tuple[str, Document]],
    together: str,
    shared: Sequence[str],
    keep_outputs: bool,
    memories: list[Memory] | None,
    schedule: Sequence[str] | None = None,
) -> Document:
    shared_tensors = _shared_sizes(models, shared)
    tensors: list[Tensor] = list(shared_tensors.values())
    operators: list[Operator] = []
    sync: list[SyncEdge] = []
    previous_ends: list[str] = []
    core_base = 0
    for model_id, doc in models:

        def rename(t: str, model_id: str = model_id) -> str:
            return t if t in shared_tensors else f"{model_id}{MODEL_SEP}{t}"

        tensors += [
            t.model_copy(
                update={
                    "id": rename(t.id),
                    "part_of": t.part_of and rename(t.part_of),
                    "alignment": _aligned(t, doc),
                }
            )
            for t in doc.tensors or []
            if t.id not in shared
        ]
        ops = _renamed_operators(model_id, doc, rename, core_base)
        sync += [
            SyncEdge(before=f"{model_id}{MODEL_SEP}{e.before}", after=f"{model_id}{MODEL_SEP}{e.after}")
            for e in doc.sync
        ]
        inputs = [rename(t) for t in _model_inputs(doc) if t not in shared_tensors]
        feed = Operator(id=f"{model_id}{MODEL_SEP}{FEED}", outputs=inputs, core=core_base)
        sync += [SyncEdge(before=feed.id, after=op.id) for op in _firsts(ops) if op.core != feed.core]
        if together == "sequential" and previous_ends:  # this model starts when the last one has ended
            starts = [feed, *_firsts(ops)]
            sync += [SyncEdge(before=end, after=op.id) for end in previous_ends for op in starts]
        caller = Operator(
            id=f"{model_id}{MODEL_SEP}{CALLER}",
            inputs=[rename(t) for t in _model_outputs(doc)] if keep_outputs else [],  # else copied out
            core=core_base,
        )
        sync += [SyncEdge(before=op.id, after=caller.id) for op in _lasts(ops) if op.core != caller.core]
        operators += [feed, *ops, caller]
        previous_ends = [caller.id] if together == "sequential" else []
        cores = {op.core for op in doc.operators or []}
        if together == "concurrent":
            core_base += max(cores) + 1
    if together == "interleaved":
        operators, sync = _interleaved(models, operators, sync, schedule or [])
    written = {t for op in operators for t in op.outputs}
    return Document(
        name=None,
        alignment=1,  # each tensor carries its own model's alignment, each workspace gets it after
        # (_model_alignments): a model's alignment is no rule for another's blocks
        tensors=tensors,
        operators=operators,
        sync=sync,
        # each model's own inputs are written by its feed when it starts
        inputs=[t for t in shared_tensors if t not in written],
        outputs=list(shared_tensors),
        memories=memories,
    )


def _interleaved(
    models: Sequence[tuple[str, Document]], operators: list[Operator], sync: list[SyncEdge],
    schedule: Sequence[str],
) -> tuple[list[Operator], list[SyncEdge]]:  # fmt: skip
    """The pooled operators in ``schedule``'s order, each model's feed just before its first operator
    and its caller just after its last, chained across cores so that the order holds everywhere."""
    by_id = {op.id: op for op in operators}
    position = _schedule_positions(schedule, by_id)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for model_id, doc in models:
        own = [f"{model_id}{MODEL_SEP}{op.id}" for op in doc.operators or []]
        if not own:
            raise InputError(f"model {model_id!r} has no operators to interleave", "schedule")
        _check_model_order(own, position)
        first[model_id], last[model_id] = position[own[0]], position[own[-1]]
    ordered: list[Operator] = []
    for k, op_id in enumerate(schedule):
        model_id = op_id.split(MODEL_SEP, 1)[0]
        if first[model_id] == k:
            ordered.append(by_id[f"{model_id}{MODEL_SEP}{FEED}"])
        ordered.append(by_id[op_id])
        if last[model_id] == k:
            ordered.append(by_id[f"{model_id}{MODEL_SEP}{CALLER}"])
    chain = [SyncEdge(before=a.id, after=b.id) for a, b in itertools.pairwise(ordered) if a.core != b.core]
    return ordered, [*sync, *chain]


def _schedule_positions(schedule: Sequence[str], operators: dict[str, Operator]) -> dict[str, int]:
    position: dict[str, int] = {}
    for k, op_id in enumerate(schedule):
        if op_id not in operators or op_id.endswith((FEED, CALLER)):
            where = f"ids are MODEL{MODEL_SEP}operator"
            raise InputError(f"no operator {op_id!r} in the pool ({where})", f"schedule[{k}]")
        if op_id in position:
            raise InputError(f"operator {op_id!r} is listed twice", f"schedule[{k}]")
        position[op_id] = k
    return position


def _check_model_order(own: list[str], position: dict[str, int]) -> None:
    """A model's operators are all scheduled, in the order its document runs them."""
    if missing := [op_id for op_id in own if op_id not in position]:
        raise InputError(f"operator {missing[0]!r} is not in the schedule", "schedule")
    for before, after in itertools.pairwise(own):
        if position[after] < position[before]:
            raise InputError(
                f"{after!r} is scheduled before {before!r}, which its model runs first",
                f"schedule[{position[after]}]",
            )


def _aligned(tensor: Tensor, doc: Document) -> int:
    """The tensor's alignment in its own model: its own and its document's."""
    return int(np.lcm(tensor.alignment or 1, doc.alignment))


def _model_alignments(problem: Problem, models: Sequence[tuple[str, Document]]) -> Problem:
    """The pooled graph's problem with each workspace aligned as its own model asks."""
    step = {
        f"{model_id}{MODEL_SEP}{op.id}{WORKSPACE_SUFFIX}": doc.alignment
        for model_id, doc in models
        for op in doc.operators or []
        if op.workspace is not None
    }
    alignments = problem.alignments.copy()
    for b, bid in enumerate(problem.ids):
        if bid in step:
            alignments[b] = np.lcm(alignments[b], step[bid])
    return replace(problem, alignments=alignments)


def _copied_out_reads(
    problem: Problem, models: Sequence[tuple[str, Document]], shared: Sequence[str]
) -> Problem:
    """Copied out, each model output is still read once by the caller (as a model planned alone), though
    no operator of the pooled graph reads it: its bytes count in the access cost across memories."""
    system, tensors = problem.memories, problem.tensors
    if system is None or tensors is None:
        return problem
    block = dict(zip(tensors.ids, tensors.block_of.tolist(), strict=True))
    size = dict(zip(tensors.ids, tensors.sizes.tolist(), strict=True))
    read = system.read_bytes.copy()
    for model_id, doc in models:
        for t in _model_outputs(doc):
            if t not in shared:
                read[block[f"{model_id}{MODEL_SEP}{t}"]] += size[f"{model_id}{MODEL_SEP}{t}"]
    return replace(problem, memories=replace(system, read_bytes=read))


def _model_inputs(doc: Document) -> list[str]:
    written = {t for op in doc.operators or [] for t in op.outputs}
    return [t.id for t in doc.tensors or [] if t.id not in written]


def _firsts(ops: list[Operator]) -> list[Operator]:
    firsts: dict[int, Operator] = {}
    for op in ops:
        firsts.setdefault(op.core, op)
    return list(firsts.values())


def _lasts(ops: list[Operator]) -> list[Operator]:
    return list({op.core: op for op in ops}.values())


def _pool_buffers(models: Sequence[tuple[str, Document]], together: str, name: str) -> Problem:
    ids, sizes, lower, upper, pinned, alignments = [], [], [], [], [], []
    for k, (model_id, doc) in enumerate(models):
        for i, b in enumerate(doc.buffers or []):
            if b.offset is not None and b.offset % doc.alignment:
                raise InputError(
                    f"a pinned offset must be a multiple of the alignment {doc.alignment}, got {b.offset}",
                    f"models[{k}].document.buffers[{i}].offset",
                )
            ids.append(f"{model_id}{MODEL_SEP}{b.id}")
            sizes.append(b.size)
            lower.append((k, b.lower))
            upper.append((k, b.upper))
            pinned.append(-1 if b.offset is None else b.offset)
            alignments.append(doc.alignment)
    offsets = np.array(pinned, np.int64)
    if together == "sequential":
        span = [
            max(b.upper for b in doc.buffers or []) - min(b.lower for b in doc.buffers or [])
            for _, doc in models
        ]
        start = np.concatenate([[0], np.cumsum(span)])
        first = [min(b.lower for b in doc.buffers or []) for _, doc in models]
        lo = np.array([start[k] + t - first[k] for k, t in lower])
        up = np.array([start[k] + t - first[k] for k, t in upper])
        problem = problem_from_arrays(np.array(sizes), lo, up, ids=tuple(ids), name=name, offsets=offsets)
    else:
        clocks = np.zeros((2, len(ids), len(models)), np.int64)
        for row, ((k, lo), (_, up)) in enumerate(zip(lower, upper, strict=True)):
            clocks[0, row, k], clocks[1, row, k] = lo, up
        problem = problem_from_clocks(np.array(sizes), clocks[0], clocks[1], ids=tuple(ids), name=name,
                                      offsets=offsets)  # fmt: skip
    return replace(problem, alignments=np.array(alignments, np.int64))  # each model keeps its own alignment


def _memory_map(models: Sequence[tuple[str, Document]], memories: list[Memory] | None) -> list[Memory] | None:
    """The pool's one memory map: ``memories`` if given, else the one the models list; they must agree."""
    source = "the pool's" if memories is not None else None
    for k, (model_id, doc) in enumerate(models):
        if doc.memories is None:
            continue
        if memories is None:
            memories, source = doc.memories, f"model {model_id!r}'s"
        elif doc.memories != memories:
            raise InputError(
                f"lists other memories than {source}; the models of a pool share one memory map",
                f"models[{k}].document.memories",
            )
    return memories


def _check_pins(models: Sequence[tuple[str, Document]], memories: list[Memory] | None) -> None:
    """Each tensor pinned to a memory names one of the pool's (errors name the model's field)."""
    known = [m.id for m in memories or []]
    for k, (_, doc) in enumerate(models):
        for i, tensor in enumerate(doc.tensors or []):
            if tensor.memory is not None and tensor.memory not in known:
                lists = f"the pool lists {', '.join(known)}" if known else "the pool lists no memories"
                raise InputError(
                    f"no memory {tensor.memory!r}; {lists}", f"models[{k}].document.tensors[{i}].memory"
                )


def pool_problem(
    models: Sequence[tuple[str, Document]],
    together: str = "sequential",
    shared: Sequence[str] = (),
    rules: Rules | None = None,
    name: str = "pool",
    memories: list[Memory] | None = None,
    schedule: Sequence[str] | None = None,
) -> Problem:
    """The pooled problem of several models (see the module doc).

    ``memories``: one memory map for every model (graphs only); without it,
    the memories the models' documents list, which must then be the same.
    ``schedule``: for ``interleaved``, every operator (``MODEL/operator``) in run order.
    """
    if together not in TOGETHER:
        raise InputError(f"must be one of {', '.join(TOGETHER)}, got {together!r}", "together")
    if (schedule is not None) != (together == "interleaved"):
        raise InputError("a schedule is given with together 'interleaved', and only then", "schedule")
    _check_ids(models)
    for k, (_, doc) in enumerate(models):
        if doc.devices is not None:
            raise InputError(
                "a pool does not take devices; plan this model on its own", f"models[{k}].document.devices"
            )
    graphs = [doc.is_graph for _, doc in models]
    memory_map = _memory_map(models, memories)
    if all(graphs):
        keep_outputs = rules.keep_outputs if rules is not None else True
        _check_pins(models, memory_map)
        pooled = _pool_graphs(models, together, shared, keep_outputs, memory_map, schedule)
        # Each model's caller reads its outputs (or not, copied out): the pooled graph's own outputs are
        # the shared tensors, which persist to the end whatever the models' runtime does with outputs.
        pooled_rules = replace(rules or Rules(), keep_outputs=True)
        problem = _model_alignments(build_problem(pooled, name, pooled_rules), models)
        return problem if keep_outputs else _copied_out_reads(problem, models, shared)
    if any(graphs):
        raise InputError("pool graphs with graphs and buffer lists with buffer lists", "models")
    if together == "interleaved":
        raise InputError("an interleaving orders graph operators; buffer lists have none", "together")
    if memory_map is not None:
        raise InputError("memories apply to pools of graphs; buffer lists pool into one arena", "memories")
    if shared:
        raise InputError("shared tensors name graph tensors; buffer lists share nothing", "shared")
    return _pool_buffers(models, together, name)


def read_pool_document(data: dict[str, Any]) -> tuple[PoolDocument, list[tuple[str, Document]]]:
    """A ``{"models": [...], "together": ..., "shared": [...]}`` document and its models' documents."""
    try:
        pool = PoolDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise InputError(error_message(first), field_path(first["loc"]) or None) from None
    models = []
    for k, model in enumerate(pool.models):
        try:
            models.append((model.id, parse_document(model.document)))
        except InputError as exc:
            where = f"models[{k}].document" + (f".{exc.field}" if exc.field else "")
            raise InputError(exc.reason, where) from None
    return pool, models


def problem_from_pool_document(
    data: dict[str, Any], name: str | None = None, rules: Rules | None = None
) -> Problem:
    """A problem from a ``{"models": [...], "together": ..., "shared": [...]}`` document."""
    pool, models = read_pool_document(data)
    return pool_problem(
        models, pool.together, pool.shared, rules, name or pool.name or "pool", pool.memories, pool.schedule
    )
