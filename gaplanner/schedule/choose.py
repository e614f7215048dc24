"""``search_schedule``: the operator order that lowers the memory bound, with a certificate.

The certificate compares three numbers: the bound of the order the document
gives, the bound of the order chosen, and a lower bound valid for every order
(with its origin). The chosen order is proved optimal only when its bound meets
that order-free bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaplanner.deadline import Deadline
from gaplanner.documents.lifetimes import analyse_graph
from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document
from gaplanner.errors import InputError
from gaplanner.problem.problem import build_problem
from gaplanner.schedule.bounds import surely_live
from gaplanner.schedule.cuts import cut_bound
from gaplanner.schedule.dag import Dag, build_dag, check_order
from gaplanner.schedule.exact import PartsResult, solve_parts
from gaplanner.schedule.memory import LoadModel, build_blocks
from gaplanner.schedule.orders import STARTING_ORDERS
from gaplanner.schedule.search import OrderSearch, SearchState
from gaplanner.schedule.tighten import tighten


@dataclass(frozen=True)
class ScheduleSettings:
    """Budget of the order search.

    ``evaluations``: orders scored at most (genomes decoded plus one-operator
    moves); with a ``seed`` it makes the search repeatable. ``time_limit``
    (seconds) cuts it short on a slow machine. ``exact_states``: sets of
    operators a part's exact search may hold (a part needing more keeps the
    reachability bound). ``cut_seconds``: time for the minimum-cut bound at the
    chosen order's heaviest operators (0: none).
    """

    time_limit: float = 10.0
    evaluations: int = 200_000
    seed: int = 0
    population: int = 32
    exact_states: int = 100_000
    cut_seconds: float = 2.0

    def __post_init__(self) -> None:
        if (
            not (isinstance(self.time_limit, int | float) and math.isfinite(self.time_limit))
            or self.time_limit <= 0
        ):
            raise InputError(f"must be a positive number of seconds, got {self.time_limit}", "time_limit")
        if (
            not (isinstance(self.cut_seconds, int | float) and math.isfinite(self.cut_seconds))
            or self.cut_seconds < 0
        ):
            raise InputError(
                f"must be a non-negative number of seconds, got {self.cut_seconds}", "cut_seconds"
            )
        for name in ("evaluations", "population", "exact_states"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"must be a non-negative integer, got {value!r}", name)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputError(f"must be an integer, got {self.seed!r}", "seed")


@dataclass(frozen=True)
class ScheduleResult:
    """The chosen order (operator ids) and its certificate."""

    order: tuple[str, ...]
    given_bound: int
    chosen_bound: int
    order_free_bound: int
    bound_origin: str
    baselines: dict[str, int] = field(default_factory=dict)
    chosen_from: str = "given"
    seconds: float = 0.0
    evaluations: int = 0

    @property
    def optimal(self) -> bool:
        """Proved: no order of the operators has a lower bound."""
        return self.chosen_bound <= self.order_free_bound

    def to_dict(self) -> dict[str, Any]:
        return {
            "given_bound": self.given_bound,
            "chosen_bound": self.chosen_bound,
            "order_free_bound": self.order_free_bound,
            "bound_origin": self.bound_origin,
            "optimal": self.optimal,
            "chosen_from": self.chosen_from,
            "baselines": dict(self.baselines),
            "seconds": round(self.seconds, 6),
            "evaluations": self.evaluations,
        }


def given_order(document: Document, dag: Dag) -> np.ndarray:
    """The order the document runs its operators in (operator indices), refused if it breaks a dependency."""
    operators = document.operators or []
    if len({op.core for op in operators}) == 1:
        check_order(dag, list(range(dag.n)), field="operators")
        return np.arange(dag.n, dtype=np.int64)
    index = {op_id: k for k, op_id in enumerate(dag.ids)}
    return np.array([index[i] for i in analyse_graph(document).operator_ids], np.int64)


#: Of the order search's time limit, what is kept for tightening the chosen order's lifetimes
#: (:mod:`gaplanner.schedule.tighten`), which ends sooner when a pass moves nothing.
TIGHTEN_SHARE = 0.1

#: Of a run's time limit, the most the order search may take; the layout search gets what is left
#: after it (all the rest when the order search ends early).
SCHEDULE_SHARE = 0.5


def settings_within(deadline: Deadline | None, **given: Any) -> ScheduleSettings:
    """The order search's settings (``given``), with a time limit of up to :data:`SCHEDULE_SHARE` of
    what is left of ``deadline`` (the run's), the cut bound's seconds out of it."""
    if deadline is not None and deadline.limit is not None:
        seconds = max(SCHEDULE_SHARE * deadline.left(), 0.01)
        given.update(time_limit=seconds, cut_seconds=min(ScheduleSettings().cut_seconds, seconds / 5))
    return ScheduleSettings(**given)


def search_schedule(
    document: Document, rules: Rules | None = None, settings: ScheduleSettings | None = None
) -> ScheduleResult:
    """The best order found for ``document``'s operators under ``rules``, and its certificate."""
    began = time.perf_counter()
    settings = settings or ScheduleSettings()
    rules = rules or Rules()
    if not document.is_graph:
        raise InputError("a buffer list has no operators to order", "schedule")
    dag = build_dag(document)
    given = given_order(document, dag)
    blocks = build_blocks(document, rules)
    model = LoadModel(blocks)
    starts = {name: make(dag, blocks, given) for name, make in STARTING_ORDERS.items()}
    baselines = {name: model.peak(order) for name, order in starts.items()}
    live = surely_live(dag, blocks, given)
    parts = solve_parts(dag, blocks, given, live, settings.exact_states)
    bound = max(live.bound, parts.bound)
    if parts.solved:  # the parts solved exactly in their best order, the others as given
        starts["exact parts"] = parts.order
        baselines["exact parts"] = model.peak(parts.order)
    best = min(baselines, key=lambda name: baselines[name])  # the first of equals: given wins ties
    state = SearchState(order=starts[best].copy(), peak=baselines[best])
    search = OrderSearch(dag, model, settings.population, settings.seed)
    deadline = began + settings.time_limit  # the cut bound's seconds come out of it, and a margin
    tighten_end = deadline - settings.cut_seconds - 0.02 * settings.time_limit
    search_end = tighten_end - TIGHTEN_SHARE * settings.time_limit
    search.run(list(starts.values()), bound, settings.evaluations, search_end, state)
    chosen_from = "search" if state.peak < baselines[best] else best
    state.order = tighten(state.order, dag, model, tighten_end)
    state.peak = min(state.peak, model.peak(state.order))
    origin = _origin(parts, live.bound)
    if state.peak > bound and settings.cut_seconds > 0:  # where the chosen order is heaviest first
        heaviest = np.argsort(-model.profile(state.order)[:-1], kind="stable")
        seconds = min(settings.cut_seconds, max(0.0, deadline - time.perf_counter()))
        cut = cut_bound(dag, blocks, state.order[heaviest], seconds)
        if cut > bound:
            bound, origin = cut, "minimum cut (bytes live at an operator whichever others have run)"
    given_bound, chosen_bound = baselines["given"], state.peak
    if len({op.core for op in document.operators or []}) > 1:
        # Cores overlap in time: the planner's bound is that of the cores' programs, not of one timeline.
        given_bound, chosen_bound = (_multicore_bound(document, rules, dag, o) for o in (given, state.order))
        if chosen_bound > given_bound:
            state.order, chosen_bound, chosen_from = given, given_bound, "given"
    return ScheduleResult(
        order=tuple(dag.ids[k] for k in state.order.tolist()),
        given_bound=given_bound,
        chosen_bound=chosen_bound,
        order_free_bound=bound,
        bound_origin=origin,
        baselines=baselines,
        chosen_from=chosen_from,
        seconds=time.perf_counter() - began,
        evaluations=state.evaluations,
    )


def _origin(parts: PartsResult, reachability: int) -> str:
    """Where the order-free bound comes from, in words."""
    if parts.exact:
        return f"exact (dynamic programming on all {parts.parts} parts between cuts)"
    if parts.bound > reachability:
        return f"exact on {parts.solved} of {parts.parts} parts between cuts, reachability on the others"
    return "reachability (bytes live across each operator in every order)"


def _multicore_bound(document: Document, rules: Rules, dag: Dag, order: np.ndarray) -> int:
    """The planner's bound for a multi-core document whose operators run in ``order`` on their cores."""
    operators = document.operators or []
    reordered = document.model_copy(update={"operators": [operators[k] for k in order.tolist()]})
    return build_problem(reordered, rules=rules).lower_bound
