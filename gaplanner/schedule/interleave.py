"""The interleaving of a pool of models as a decision: ``schedule="search"`` on ``together: interleaved``.

Models run interleaved share one timeline: a runtime time-slicing them on one
device runs each model's program in its own order and chooses only when to
switch between them. So the search's orders are exactly the schedules a user
may give (:mod:`gaplanner.problem.pools`): every operator of every model once,
each model's own order kept. Its dependency graph is the union of the models'
programs, each a chain (its feed, its operators as its document lists them, its
caller), so every data, ``after`` and ``sync`` edge of a model holds. Reordering
a model's own operators is another step, on that model alone
(``gaplanner plan MODEL --schedule search --write-model``).

The chosen interleaving comes back as ``MODEL/operator`` ids, the schedule a
user would give, and the plan's problem is the pool run in it: given back
(``--schedule FILE``), it is the same problem with the same bound.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document, Memory
from gaplanner.errors import InputError
from gaplanner.problem.pools import CALLER, FEED, MODEL_SEP, PoolDocument, pool_problem
from gaplanner.problem.problem import Problem
from gaplanner.schedule.choose import ScheduleResult, ScheduleSettings, search_schedule

_ONE_ARENA = "an order is planned in one arena; this pool has memories"


def model_operators(models: Sequence[tuple[str, Document]]) -> list[list[str]]:
    """Each model's operators as pool ids (``MODEL/operator``), in the order its document runs them."""
    return [[f"{model_id}{MODEL_SEP}{op.id}" for op in doc.operators or []] for model_id, doc in models]


def round_robin(models: Sequence[tuple[str, Document]], shared: Sequence[str] = ()) -> list[str]:
    """One operator of each model in turn (a time-slicing runtime's own interleaving); a model whose next
    operator reads a ``shared`` tensor another model writes waits for that writer."""
    writer: dict[str, str] = {}
    for own, (_, doc) in zip(model_operators(models), models, strict=True):
        for op_id, op in zip(own, doc.operators or [], strict=True):
            writer.update({t: writer.get(t, op_id) for t in op.outputs if t in shared})
    programs = []  # each model's operators, each with the other models' writers it waits for
    for own, (_, doc) in zip(model_operators(models), models, strict=True):
        ops = doc.operators or []
        waits = [[writer[t] for t in op.inputs if t in writer and writer[t] not in own] for op in ops]
        programs.append(list(zip(own, waits, strict=True)))
    order: list[str] = []
    while any(programs):
        turn = [p.pop(0)[0] for p in programs if p and all(w in order for w in p[0][1])]
        if not turn:  # the models wait on each other through shared tensors: the pool names one
            turn = [op_id for p in programs for op_id, _ in p]
            programs = []
        order += turn
    return order


def check_interleavable(together: str, memories: Sequence[Memory] | None, field: str = "together") -> None:
    """Refuse a pool whose models share no timeline to interleave, or one planned across memories."""
    if together != "interleaved":
        runs = (
            "one after another, each whole"
            if together == "sequential"
            else "each on its own cores or streams"
        )
        raise InputError(
            f"an interleaving is searched for models run 'interleaved'; {together!r} runs them {runs}",
            field,
        )
    if memories is not None:
        raise InputError(_ONE_ARENA, "memories")


def _free_document(pooled: Document, models: Sequence[tuple[str, Document]]) -> Document:
    """The pooled graph with its interleaving left open: each model's program chained by ``after``
    edges in its own order, everything on one timeline (core 0), listed in the given interleaving."""
    owner = {
        f"{model_id}{MODEL_SEP}{name}": model_id
        for model_id, doc in models
        for name in [FEED, CALLER, *(op.id for op in doc.operators or [])]
    }
    previous: dict[str, str] = {}
    operators = []
    for op in pooled.operators or []:
        model_id = owner[op.id]
        chained = [previous[model_id]] if model_id in previous else []
        operators.append(op.model_copy(update={"core": 0, "after": [*op.after, *chained]}))
        previous[model_id] = op.id
    # each model's sync edges join operators its chain already orders; the pool's join the interleaving
    return pooled.model_copy(update={"operators": operators, "sync": []})


def given_interleaving(
    models: Sequence[tuple[str, Document]],
    shared: Sequence[str] = (),
    rules: Rules | None = None,
    given: Sequence[str] | None = None,
    memories: list[Memory] | None = None,
    name: str = "pool",
) -> tuple[Problem, Document]:
    """The pool run in the given interleaving, and its graph with the interleaving left open.

    Without ``given``: :func:`round_robin`. A given interleaving that runs an
    operator before the writer of a shared tensor it reads is refused naming
    both (field ``schedule``).
    """
    check_interleavable("interleaved", memories)
    order = list(given) if given is not None else round_robin(models, shared)
    try:
        problem = pool_problem(models, "interleaved", shared, rules, name, memories, order)
    except InputError as exc:  # an operator reading a shared tensor before its writer: in the schedule
        raise InputError(
            exc.reason, "schedule" if (exc.field or "").startswith("operators") else exc.field
        ) from None
    if problem.memories is not None:  # the models' own documents list memories
        raise InputError(_ONE_ARENA, "models")
    assert problem.document is not None  # a pool of graphs (buffer lists refuse an interleaving)
    free = _free_document(problem.document, models)
    return problem, free


def search_interleaving(
    models: Sequence[tuple[str, Document]],
    shared: Sequence[str] = (),
    rules: Rules | None = None,
    settings: ScheduleSettings | None = None,
    *,
    given: Sequence[str] | None = None,
    memories: list[Memory] | None = None,
    name: str = "pool",
) -> tuple[Problem, ScheduleResult]:
    """The pool run in the interleaving found with the lowest bound, and its certificate.

    ``given``: the interleaving to compare against (and start from); without it,
    round robin (see :func:`given_interleaving`). The certificate's
    ``given_bound`` and ``chosen_bound`` are the pooled problems' own bounds;
    ``order_free_bound`` holds for every interleaving.
    """
    began = time.perf_counter()
    given_problem, free = given_interleaving(models, shared, rules, given, memories, name)
    # the pooled graph keeps its shared tensors to the end, its models' outputs as the rules say
    found = search_schedule(free, replace(rules or Rules(), keep_outputs=True), settings)
    owned = {op_id for own in model_operators(models) for op_id in own}
    given = [op.id for op in free.operators or [] if op.id in owned]
    chosen = [op_id for op_id in found.order if op_id in owned]  # feeds and callers follow
    problem = pool_problem(models, "interleaved", shared, rules, name, memories, chosen)
    given_bound, chosen_bound = int(given_problem.lower_bound), int(problem.lower_bound)
    chosen_from = found.chosen_from
    if chosen_bound > given_bound:  # the search's score and the pool's bound disagree: keep the given
        problem, chosen, chosen_bound, chosen_from = given_problem, given, given_bound, "given"
    result = replace(
        found,
        order=tuple(chosen),
        given_bound=given_bound,
        chosen_bound=chosen_bound,
        chosen_from=chosen_from,
        seconds=time.perf_counter() - began,
    )
    return problem, result


def scheduled_pool(
    pool: PoolDocument,
    models: Sequence[tuple[str, Document]],
    schedule: str | Sequence[str] = "fixed",
    rules: Rules | None = None,
    settings: ScheduleSettings | None = None,
    name: str | None = None,
) -> tuple[Problem, ScheduleResult | None]:
    """The pool's problem run in the interleaving ``schedule`` names, and the search's result if any.

    ``fixed``: the pool's own ``schedule`` (if it runs interleaved); ``search``:
    the best interleaving found, compared with the pool's own (round robin
    without one); a list of ``MODEL/operator`` ids: that interleaving.
    """
    name = name or pool.name or "pool"
    if schedule == "search":
        check_interleavable(pool.together, pool.memories)
        return search_interleaving(
            models, pool.shared, rules, settings, given=pool.schedule, memories=pool.memories, name=name
        )
    if isinstance(schedule, str) and schedule != "fixed":
        raise InputError(
            f"must be fixed or search, or a list of MODEL/operator ids; got {schedule!r}", "schedule"
        )
    order = pool.schedule if schedule == "fixed" else list(schedule)
    return pool_problem(models, pool.together, pool.shared, rules, name, pool.memories, order), None
