"""Exact search over placements: find the smallest arena, or prove a higher lower bound.

A branch and bound in the style of MiniMalloc (Moffitt, ASPLOS 2023), for
interval lifetimes and for conflict graphs (multi-core partial orders). It
decides one question at a time: *is there a plan whose peak is at most T?*

* **Canonical placements.** Blocks are placed one at a time, each at its
  lowest offset above the placed blocks it conflicts with (its *floor*), and in
  non-decreasing order of offset (ties by a fixed block rank). Pushing every
  block of a plan down as far as it goes never raises the peak, and a plan
  pushed down is found by exactly one such sequence, so no other is tried.
* **Pruning.** A *clique* is a set of pairwise conflicting blocks (for
  intervals: the blocks live in one time section). Every unplaced block of a
  clique lies above the clique's floor, so floor + their total size must fit
  under T. A block placed above the top another unplaced block could have
  taken leaves a hole that block could fill: skipped (dominance). A block with
  nothing unplaced above it fixes nothing else, so when its branch fails its
  siblings do too. Blocks with the same size, lifetime and conflicts are
  interchangeable: only one order of them is tried.
* **Splitting.** Blocks in different connected components of the conflict
  graph (for intervals: separated by a time no block crosses) are planned
  separately, and a probe splits its blocks again whenever a placement leaves
  them in pieces that no longer conflict (:mod:`gaplanner.search.exact.dfs`).
* **Targets.** Probes run at the lower bound, halfway up to the best plan
  known (the incumbent: the better of first-fit and greedy-size, or one given),
  an eighth of the way down from it and just below it, taking turns in short
  slices (the lower bound's twice as often); beside one full probe per
  tie-break order, restarting probes try shuffled orders (search times are
  heavy-tailed; at the lower bound of a conflict graph only these). A
  probe that proves T infeasible raises the lower bound past T; one that
  succeeds lowers the incumbent. The search stops at the time limit or when
  the two meet.
* **Threads.** On each other core, :class:`RandomTargets` draws a target
  between the bound and the best plan and an order, and gives that probe a
  few descents, then draws again: every pair gets its chance, where the fixed
  targets can spend the whole time on pairs that never answer.

The depth-first search keeps its whole state in arrays, so it runs in slices
of nodes and the clock is read between slices: the time limit always holds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gaplanner.deadline import Deadline
from gaplanner.plans.plan import GenerationRecord, Plan, SearchStats, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.exact.parts_search import OnEvent, PartsSearch, SearchResult
from gaplanner.search.exact.settings import ExactSettings
from gaplanner.search.exact.strands import RandomTargets, run_strands

# --- the front door -----------------------------------------------------------------------------


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _bound_holds_for_every_plan(problem: Problem) -> bool:
    """A bound proved for these blocks binds every plan, unless other in-place choices give other blocks."""
    doc = problem.document
    if doc is None or problem.rules.inplace == "never":
        return True
    return not any(op.inplace for op in doc.operators or [])


def incumbent_plan(problem: Problem, plans: dict[str, Plan] | None = None) -> np.ndarray:
    """The offsets the exact search's targets start from: the better of first-fit's and greedy-size's
    plans (of ``plans``, the baselines' plans if given).

    Not best-fit-coalescing's, often lower still: on a large part the targets
    above the bound are spaced from this plan's peak, and spaced from that
    lower one they found fewer plans (see docs/decisions.md). The exact search
    alone keeps it aside as its best plan known instead.
    """
    from gaplanner.search.baselines import first_fit, greedy_size  # the baselines import the plan module too

    if plans is None:
        plans = {"first-fit": first_fit(problem), "greedy-size": greedy_size(problem)}
    either = [plans[name] for name in ("first-fit", "greedy-size") if name in plans]
    return min(either or plans.values(), key=lambda plan: plan.peak).offsets  # skipped: the best made


def start_search(
    problem: Problem,
    started: float,
    seconds: float | None,
    plans: dict[str, Plan] | None = None,
    deadline: Deadline | None = None,
) -> PartsSearch:
    """A search whose targets start from :func:`incumbent_plan`, holding the best starting plan
    (:mod:`gaplanner.search.starting_plans`, made within ``deadline``, or ``plans`` if given) aside as
    the best known: one at the bound ends it at once. Its parts are those :func:`searchable` in the
    ``seconds`` left after the starting plans."""
    from gaplanner.search.starting_plans import starting_plans  # imports the plan module, as the baselines do

    plans = plans if plans is not None else starting_plans(problem, deadline)
    if deadline is not None and deadline.limit is not None:
        seconds = deadline.left()
    search = PartsSearch(problem, incumbent_plan(problem, plans), started, seconds=seconds)
    search.post(min(plans.values(), key=lambda plan: plan.peak).offsets, steer=False)
    return search


class ExactSearch:
    """The exact search as another search drives it (the GA beside it, :mod:`gaplanner.search.side_by_side`).

    Start it on a problem (:meth:`start`); run it to a deadline or a work budget
    (:meth:`advance`, resumable: its probes keep their work) or for some seconds
    as a plan (:meth:`run_for`); offer it plans found elsewhere (:meth:`offer`
    between runs, :meth:`post` from another thread); read its best plan
    (:meth:`best_offsets`), the bound it proved (:attr:`lower_bound`), the
    placements tried (:attr:`nodes`), the sizes of its parts (:meth:`part_sizes`) and the plan of a run's
    result (:meth:`plan`).
    """

    def __init__(self, problem: Problem, parts: PartsSearch) -> None:
        self.problem, self.parts = problem, parts

    @classmethod
    def start(
        cls,
        problem: Problem,
        started: float,
        seconds: float | None,
        plans: dict[str, Plan] | None = None,
        deadline: Deadline | None = None,
    ) -> ExactSearch:
        """A search whose targets start from :func:`incumbent_plan`, the best starting plan held aside
        (see :func:`start_search`)."""
        return cls(problem, start_search(problem, started, seconds, plans, deadline))

    @property
    def started(self) -> float:
        return self.parts.started

    @property
    def lower_bound(self) -> int:
        """The bound proved so far for these blocks."""
        return self.parts.lo

    @property
    def nodes(self) -> int:
        """The placements tried so far."""
        return self.parts.nodes

    def part_sizes(self) -> list[int]:
        """The blocks of each part the probes still search: those whose best plan lies above their bound
        (blocks of parts too large to search are kept)."""
        return [len(state.part.sizes) for state in self.parts.states if state.hi > state.lo]

    def note(self, on_event: OnEvent | None) -> None:
        """Report the search's state now (its best peak and bound) as an event."""
        self.parts._note(on_event)

    def advance(
        self,
        deadline: float,
        on_event: OnEvent | None = None,
        should_stop: Callable[[], bool] | None = None,
        nodes: int | None = None,
    ) -> SearchResult:
        """Probe on until ``deadline``, ``nodes`` placements in all (a budget counted in work), the
        bound is met, or ``should_stop`` says so (see :meth:`PartsSearch.advance`)."""
        return self.parts.advance(deadline, on_event, should_stop, nodes)

    def run_for(self, seconds: float, seed: int, **hooks: Any) -> Plan:
        """Probe for ``seconds`` more; the verified plan (``hooks``: on_progress, should_stop)."""
        settings = ExactSettings(time_limit=seconds, seed=seed)
        return exact_search(self.problem, settings, search=self.parts, **hooks)

    def offer(self, offsets: np.ndarray) -> None:
        """A valid plan found elsewhere, taken where it is lower (between runs)."""
        self.parts.offer(offsets)

    def post(self, offsets: np.ndarray, lower_bound: int = 0, steer: bool = True) -> None:
        """From another thread: a valid plan (and a bound), taken between two rounds of a run."""
        self.parts.post(offsets, lower_bound, steer)

    def best_offsets(self) -> np.ndarray:
        """The offsets of the best plan known."""
        return self.parts.result().offsets

    def result(self) -> SearchResult:
        """The best plan known, the bound and how the last run ended."""
        return self.parts.result()

    def plan(self, result: SearchResult, seed: int) -> Plan:
        """The verified plan of a run's ``result``."""
        return search_plan(self.problem, self.parts, result, [], seed)


def exact_search(
    problem: Problem,
    settings: ExactSettings | None = None,
    incumbent: np.ndarray | None = None,
    *,
    search: PartsSearch | None = None,
    on_progress: Callable[[GenerationRecord], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    deadline: Deadline | None = None,
) -> Plan:
    """The best plan the exact search finds within the time limit, with the lower bound it proved.

    ``incumbent``: offsets of a valid plan to start from (default: see
    :func:`incumbent_plan`; the best of :mod:`gaplanner.search.starting_plans` is
    the best known from the start). ``search``: a search begun before, to go on
    with (its probes keep their work; ``incumbent`` is offered to it). The
    plan is ``optimal`` only when its peak meets a proved bound: the problem's
    own, or one the search raised (``bound_origin`` "exact search"). Its trace
    has a record each time the best peak or the bound changed (``evaluations``:
    placements tried so far; times from the search's start), passed to
    ``on_progress`` as it comes; ``should_stop``: as for the GA, True ends the
    search with its best plan. With more than one thread (``settings.threads``),
    :class:`RandomTargets` run beside the portfolio, drawing from ``settings.seed``.
    ``deadline``: the run's (:mod:`gaplanner.deadline`; default: the time limit from after loading),
    which the starting plans, the set-up and the probes spend, the plan's verification kept back.
    """
    settings = settings or ExactSettings()
    started = time.perf_counter()  # the time limit is the search's budget, as for the GA
    deadline = (deadline or Deadline(settings.time_limit)).keeping(verify_seconds(problem))
    if search is None and incumbent is None:
        search = start_search(problem, started, settings.time_limit, deadline=deadline)
    elif search is None:
        search = PartsSearch(problem, incumbent, started, seconds=deadline.left())
    elif incumbent is not None:
        search.offer(incumbent)
    threads = settings.threads or usable_cores()
    offsets, small_parts = search.result().offsets, any(not s.part.large for s in search.states)
    others = [
        RandomTargets(problem, offsets, started, search.lo, parts_of=search, seed=settings.seed + k)
        for k in range(threads - 1 if small_parts else 0)
    ]
    records: list[GenerationRecord] = []

    def record(event: dict[str, float | int]) -> None:
        records.append(event_record(event, len(records)))
        if on_progress is not None:
            on_progress(records[-1])

    deadline.stage("exact search")
    result = run_strands(search, others, deadline.end, record, should_stop)
    deadline.stage("verification")
    return search_plan(problem, search, result, records, settings.seed)


def event_record(event: dict[str, float | int], index: int) -> GenerationRecord:
    """The trace record of a search event (``evaluations``: placements tried so far)."""
    peak, nodes, elapsed = int(event["peak"]), int(event["nodes"]), float(event["elapsed"])
    return GenerationRecord(index, peak, float(peak), nodes, elapsed)


def search_plan(
    problem: Problem, search: PartsSearch, result: SearchResult, records: list[GenerationRecord], seed: int
) -> Plan:
    """The verified plan of a search's ``result``, with the bound it proved and why it ended."""
    bound = problem.lower_bound
    if _bound_holds_for_every_plan(problem):
        bound = max(bound, result.lower_bound)
    peak = int((result.offsets + problem.sizes).max())
    if peak <= bound:
        stop = "optimal"
    elif result.closed:
        stop = "best for these blocks (other in-place choices could do better)"
    else:
        stop = "stopped by request" if result.stopped else "time limit"
    return make_plan(
        problem, result.offsets, "exact", search.started, stop_reason=stop, trace=records,
        search=SearchStats(generations=len(records), evaluations=result.nodes, seed=seed),
        proved_bound=bound, bound_origin="exact search",
    )  # fmt: skip
