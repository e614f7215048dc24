"""Several inputs planned in one pool, and each on its own: what pooling saves.

``gaplanner plan A B --together`` reads each input (JSON, CSV, ONNX, zoo,
example) as one model, pools them (:mod:`gaplanner.problem.pools`) and plans the pool;
:func:`compare_alone` plans each model on its own arena too, so the plan can
report the pooled arena beside the sum and the largest of the arenas the
models need apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaplanner.deadline import Deadline, no_deadline
from gaplanner.documents.rules import Rules
from gaplanner.documents.zoo import ZOO_PREFIX
from gaplanner.errors import InputError
from gaplanner.plans.plan import Plan
from gaplanner.problem.loading import EXAMPLE_PREFIX, load_document
from gaplanner.problem.pools import pool_problem
from gaplanner.problem.problem import Problem, build_problem
from gaplanner.schedule.choose import ScheduleResult, ScheduleSettings
from gaplanner.schedule.interleave import check_interleavable, search_interleaving


@dataclass(frozen=True, eq=False)
class Pool:
    """Several models pooled: the pooled problem and each model's own problem, by model id."""

    together: str
    shared: tuple[str, ...]
    problem: Problem
    models: tuple[tuple[str, Problem], ...]
    #: with a searched interleaving: it (``order``) and its certificate
    certificate: ScheduleResult | None = None


@dataclass(frozen=True)
class ModelAlone:
    """One model planned on its own arena."""

    id: str
    peak: int
    lower_bound: int
    #: the access cost, for plans across memories
    cost: float | None = None


@dataclass(frozen=True)
class PoolComparison:
    """The pooled arena beside the arenas the models need apart."""

    together: str
    shared: tuple[str, ...]
    pooled_peak: int
    pooled_lower_bound: int
    alone: tuple[ModelAlone, ...]
    #: the pooled plan's access cost, for plans across memories
    pooled_cost: float | None = None

    @property
    def sum_alone(self) -> int:
        """Bytes for every model's own arena side by side."""
        return sum(m.peak for m in self.alone)

    @property
    def max_alone(self) -> int:
        """The largest arena one model needs alone."""
        return max(m.peak for m in self.alone)

    def to_dict(self) -> dict[str, Any]:
        costs = {}
        if self.pooled_cost is not None:  # across memories the models also compete for the fast ones
            alone_cost = sum(m.cost or 0.0 for m in self.alone)
            costs = {"cost": self.pooled_cost, "sum_alone_cost": alone_cost}
        return {
            "together": self.together,
            "shared": list(self.shared),
            "peak": self.pooled_peak,
            "lower_bound": self.pooled_lower_bound,
            "models": [
                {"id": m.id, "peak": m.peak, "lower_bound": m.lower_bound}
                | ({} if m.cost is None else {"cost": m.cost})
                for m in self.alone
            ],
            "sum_alone": self.sum_alone,
            "max_alone": self.max_alone,
            "saving": self.sum_alone - self.pooled_peak,
            **costs,
        }


def model_id(source: str | Path) -> str:
    """A model's id from its input: the file's stem, or the zoo or example name."""
    text = str(source)
    for prefix in (ZOO_PREFIX, EXAMPLE_PREFIX):
        if text.startswith(prefix):
            return text.removeprefix(prefix)
    return Path(text).stem or text


def _unique(ids: list[str]) -> list[str]:
    """The same model given twice runs twice: the second copy is ``id-2``, and so on."""
    seen: dict[str, int] = {}
    unique = []
    for name in ids:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return unique


def _name_input(exc: InputError, sources: Sequence[str | Path]) -> InputError:
    """An error about ``models[k]`` of the pool, told as the k-th input."""
    field = exc.field or ""
    if field.startswith("models[") and "]" in field:
        k = int(field[len("models[") : field.index("]")])
        rest = field[field.index("]") + 1 :].removeprefix(".document").lstrip(".")
        return InputError(exc.reason, f"{sources[k]}" + (f": {rest}" if rest else ""))
    return exc


def pool_inputs(
    sources: Sequence[str | Path],
    together: str = "sequential",
    shared: Sequence[str] = (),
    rules: Rules | None = None,
    schedule: str | Sequence[str] | None = None,
    batch: int | None = None,
    dims: Mapping[str, int] | None = None,
    schedule_settings: ScheduleSettings | None = None,
) -> Pool:
    """Each input as one model (ids from their names), pooled.

    See :func:`gaplanner.problem.pools.pool_problem`; ``schedule``: the
    interleaving (``MODEL/operator`` ids), or ``search`` for the one with the
    lowest bound found (:mod:`gaplanner.schedule.interleave`). ``batch``,
    ``dims``: the symbolic dimensions of the ONNX inputs among them.
    """
    if not sources:
        raise InputError("give at least one input to pool", "input")
    if (batch is not None or dims) and not any(str(s).lower().endswith(".onnx") for s in sources):
        raise InputError("applies to ONNX models only; no input is one", "batch" if batch else "dims")
    documents = []
    for source in sources:
        shapes = {"batch": batch, "dims": dims} if str(source).lower().endswith(".onnx") else {}
        try:
            documents.append(load_document(source, **shapes))
        except InputError as exc:
            named = exc.field in (None, "input") and str(source) in exc.reason
            where = (
                "input"
                if named
                else str(source)
                if exc.field in (None, "input")
                else f"{source}: {exc.field}"
            )
            raise InputError(exc.reason, where) from None
    kinds = [doc.is_graph for doc in documents]
    if len(set(kinds)) > 1:
        graph, buffers = sources[kinds.index(True)], sources[kinds.index(False)]
        raise InputError(
            f"{graph} is a graph and {buffers} a buffer list; pool graphs with graphs, buffer lists with "
            "buffer lists",
            "input",
        )
    ids = _unique([model_id(s) for s in sources])
    models = list(zip(ids, documents, strict=True))
    name = "+".join(ids)
    certificate = None
    try:
        if schedule == "search":
            check_interleavable(together, None)
            pooled, certificate = search_interleaving(models, shared, rules, schedule_settings, name=name)
        else:
            pooled = pool_problem(models, together, shared, rules, name, schedule=schedule)
        alone = tuple((i, build_problem(doc, i, rules)) for i, doc in models)
    except InputError as exc:
        raise _name_input(exc, sources) from None
    return Pool(together, tuple(shared), pooled, alone, certificate)


def pooled_share(pool: Pool) -> float:
    """The share of a run's time left the pooled plan takes (the rest plans each model alone): its
    blocks' share of all the blocks planned."""
    alone = sum(problem.n for _, problem in pool.models)
    return pool.problem.n / max(1, pool.problem.n + alone)


def compare_alone(
    pool: Pool,
    pooled: Plan,
    plan_one: Callable[[Problem, Deadline], Plan],
    deadline: Deadline | None = None,
) -> PoolComparison:
    """Plan each model of ``pool`` on its own (``plan_one``) beside the pooled plan.

    ``deadline``: when the last must end; each model is given the share of the time left that its
    blocks are of the blocks still to plan (with no time limit, no deadline).
    """
    deadline = deadline or no_deadline()
    alone = []
    blocks_left = sum(problem.n for _, problem in pool.models)
    for model, problem in pool.models:
        plan = plan_one(problem, deadline.share(problem.n / max(1, blocks_left)))
        blocks_left -= problem.n
        alone.append(ModelAlone(model, plan.peak, int(problem.lower_bound), plan.cost))
    return PoolComparison(
        pool.together, pool.shared, pooled.peak, int(pool.problem.lower_bound), tuple(alone), pooled.cost
    )


def read_schedule(path: str) -> list[str]:
    """A schedule file: one ``MODEL/operator`` per line (blank lines and ``#`` comments skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", "--schedule"
        ) from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def schedule_line(path: str, entry: int) -> int:
    """The line number of a schedule file's ``entry``-th operator (comments and blank lines skipped)."""
    lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    numbered = [k + 1 for k, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    return numbered[entry]
