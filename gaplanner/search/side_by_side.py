"""The GA and the exact search sharing one time limit, each starting from the other's best plan.

Where the exact search can take the whole problem (``GASettings.exact_share``
None, the default, or a share given), the two run in one of two ways:

* **Side by side** (the default on a machine with two cores or more, the GA
  in this process): the exact probes run on a thread of their own for the
  whole time limit while the GA runs on the other cores. Once a generation
  they trade plans: the GA's best tightens the probes' upper end, and each
  better plan the probes find joins a GA island as an order by address, which
  first-fit decodes no higher. Both stop when either proves the optimum.
* **In turns** (one core, the GA on Ray workers, or a share given):
  1. exact probes for half the exact share: on many instances they reach the
     lower bound at once and prove it, and the search stops there;
  2. the GA for the rest of the time but the exact share, its population
     seeded with the exact search's best plan;
  3. exact probes for what is left, going on where the first turn stopped
     (its probes keep their work), with the GA's plan where it is better.

The plan's trace holds both searches' records in the order they came (the
exact search's ``evaluations``: placements tried; ``best_peak``: the best of
both so far), and its bound is the one the exact search proved. With
``exact_share`` 0 the GA runs alone, as the patent describes it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from gaplanner import native
from gaplanner.deadline import Deadline
from gaplanner.plans.plan import GenerationRecord, Plan, SearchStats, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.problem import Problem
from gaplanner.search.exact import ExactSearch, SearchResult, event_record, searchable, usable_cores
from gaplanner.search.ga import Exchange, GASettings, ProgressCallback, StopCheck
from gaplanner.search.pace import Pace
from gaplanner.search.starting_plans import starting_plans

#: The share of the time limit the exact probes get when the settings leave it open.
AUTO_EXACT_SHARE = 0.5

#: The shortest exact turn worth starting, in seconds.
LEAST_EXACT_SECONDS = 0.05


class GARunner(Protocol):
    """Runs the GA (in this process or on islands elsewhere)."""

    def __call__(
        self,
        settings: GASettings | None,
        seeds: Sequence[np.ndarray],
        report: ProgressCallback | None,
        exchange: Exchange | None,
        stop: StopCheck | None,
        deadline: Deadline | None = None,
        plans: dict[str, Plan] | None = None,
    ) -> Plan:
        """The GA's plan; its population seeded with ``seeds`` (offsets), trading plans with ``exchange``
        when it can (the GA in this process; others ignore it), stopping when ``stop`` says so or at
        ``deadline``; ``plans``: the starting plans, if made already."""
        ...


def exact_share(problem: Problem, settings: GASettings | None) -> float:
    """The share of the time limit for exact probes: 0 without a time limit or where they cannot help."""
    if settings is None or settings.time_limit is None or settings.exact_share == 0:
        return 0.0
    if settings.exact_share is not None:
        return settings.exact_share
    return AUTO_EXACT_SHARE if searchable(problem, seconds=settings.time_limit) else 0.0


@dataclass
class _Trace:
    """Both searches' records, numbered and timed as one search, passed on as they come."""

    started: float
    on_progress: ProgressCallback | None
    records: list[GenerationRecord] = field(default_factory=list)

    def add(self, record: GenerationRecord, seconds: float = 0.0) -> None:
        """Add ``record``, its time counted from ``seconds`` after the start."""
        best = min(record.best_peak, self.records[-1].best_peak) if self.records else record.best_peak
        self.records.append(
            replace(record, generation=len(self.records), best_peak=best, elapsed=record.elapsed + seconds)
        )
        if self.on_progress is not None:
            self.on_progress(self.records[-1])

    def from_now(self) -> ProgressCallback:
        """A callback for a search starting now, whose records' times count from its own start."""
        seconds = time.perf_counter() - self.started
        return lambda record: self.add(record, seconds)


def _finished(plan: Plan) -> bool:
    """Nothing is left to search for: the plan is proved optimal, or the caller asked to stop."""
    return plan.optimal or plan.stop_reason == "stopped by request"


def ga_with_exact(
    problem: Problem,
    settings: GASettings | None,
    run_ga: GARunner,
    on_progress: ProgressCallback | None = None,
    should_stop: StopCheck | None = None,
    *,
    side_by_side: bool = True,
    deadline: Deadline | None = None,
) -> Plan:
    """``run_ga`` (the GA, in-process or on islands) with the exact probes, see the module's text.

    ``side_by_side``: whether ``run_ga`` trades plans with an exchange (the GA in this process).
    ``deadline``: the run's (default: the time limit from the call); the starting plans are
    made once within it, and the exact search is set up only when it takes the problem in the time
    left then (its set-up on a large part takes seconds).
    """
    share = exact_share(problem, settings)
    if settings is None or share == 0:
        return run_ga(settings, (), on_progress, None, should_stop, deadline)
    started = time.perf_counter()
    deadline = deadline or Deadline(settings.time_limit)
    # Two plans are verified at the end, the GA's and the exact search's: both are kept back.
    searching = deadline.keeping(2 * verify_seconds(problem))
    plans = starting_plans(problem, searching)
    best = min(plans.values(), key=lambda plan: plan.peak)
    if best.peak <= problem.lower_bound:  # nothing to search for: no thread, no probes, no GA
        return _starting_plan_kept(problem, best, len(plans), settings, started, on_progress)
    if not searchable(problem, seconds=searching.left()):  # no time left to set it up and search
        return run_ga(settings, (), on_progress, None, should_stop, deadline, plans)
    searching.stage("exact search set-up")
    search = ExactSearch.start(problem, started, None, plans, searching)
    trace, requests = _Trace(started, on_progress), _StopRequests(should_stop)
    if side_by_side and settings.exact_share is None and usable_cores() >= 2:
        found = _side_by_side(problem, settings, run_ga, search, trace, requests, deadline, plans)
    else:
        found = _in_turns(problem, settings, share, run_ga, search, trace, requests, deadline, plans)
    best = min(reversed(found), key=lambda plan: plan.peak)
    ga_plan = next((plan for plan in found if plan.search and plan.search.population), None)
    bound = max(plan.lower_bound for plan in found)
    reason = "optimal" if best.peak <= bound else "stopped by request" if requests.asked else None
    return make_plan(
        problem, best.offsets, "ga", started, stop_reason=reason or found[-1].stop_reason,
        trace=trace.records,
        search=(ga_plan or found[0]).search, ray=ga_plan.ray if ga_plan else None, proved_bound=bound,
        bound_origin="exact search", verified_by=best,
    )  # fmt: skip


def _starting_plan_kept(
    problem: Problem,
    best: Plan,
    made: int,
    settings: GASettings,
    started: float,
    on_progress: ProgressCallback | None,
) -> Plan:
    """A starting plan at the lower bound as the run's: one record, no search."""
    start = GenerationRecord(0, best.peak, float(best.peak), made, time.perf_counter() - started)
    if on_progress is not None:
        on_progress(start)
    stats = SearchStats(0, made, settings.seed, settings.population)
    return make_plan(
        problem, best.offsets, "ga", started, stop_reason="optimal", trace=[start], search=stats,
        verified_by=best,
    )  # fmt: skip


def _in_turns(
    problem: Problem, settings: GASettings, share: float, run_ga: GARunner, search: ExactSearch,
    trace: _Trace, should_stop: _StopRequests, deadline: Deadline, starting: dict[str, Plan],
) -> list[Plan]:  # fmt: skip
    """Exact probes, the GA from their plan, exact probes from the GA's: the plans of the turns run.

    Each turn's plan is verified as it ends; the GA's turn keeps back the last exact turn's share and
    that turn's verification."""
    verifying = verify_seconds(problem)
    exact_turns = deadline.keeping(verifying)
    last_turn = (settings.time_limit or 0.0) * share / 2

    def exact(seconds: float, incumbent: np.ndarray | None = None) -> Plan:
        if incumbent is not None:
            search.offer(incumbent)
        seconds = max(min(seconds, exact_turns.left()), LEAST_EXACT_SECONDS)
        return search.run_for(seconds, settings.seed, on_progress=trace.add, should_stop=should_stop)

    plans = [exact(last_turn)]
    if not _finished(plans[0]):
        ga_settings = replace(settings, time_limit=(settings.time_limit or 0.0) * (1 - share))
        ga_deadline = deadline.keeping(verifying + last_turn)
        seeds = (plans[0].offsets,)
        plans.append(run_ga(ga_settings, seeds, trace.from_now(), None, should_stop, ga_deadline, starting))
        if not _finished(plans[-1]) and exact_turns.left() >= LEAST_EXACT_SECONDS:
            plans.append(exact(exact_turns.left(), plans[-1].offsets))
    return plans


class _ExactBeside:
    """The exact probes on a thread of their own, in step with the GA (its :class:`Exchange`).

    Each GA generation the probes get a quantum of placements, about as long
    as the generation (:class:`gaplanner.search.pace.Pace`: so many per
    evaluation the GA made since the last trade), run while the GA runs the
    generation. Between two generations the GA waits for the quantum to end
    (its stop check), then they trade: the GA's best plan goes to the probes
    and theirs, if lower, to the GA, and the next quantum starts. So both
    exchange plans at points counted in work, never in seconds, and the same
    seed and generations give the same plan whatever the machine's load,
    unless the time limit ends the run first. The thread runs the probes'
    compiled search and nothing else (no parallel kernels, none of the
    caller's hooks): the exact search's records wait in a queue until the
    GA's thread passes them on, and the plan is built there.
    """

    def __init__(self, problem: Problem, search: ExactSearch, deadline: float, pace: Pace) -> None:
        self.problem, self.search, self.pace = problem, search, pace
        self.quantum = pace.first_quantum  # placements of the quantum under way
        self._evaluations = 0  # the GA's at the last trade
        self.done = threading.Event()  # the exact search ended, or the caller asked both to stop
        self.records: queue.SimpleQueue[GenerationRecord] = queue.SimpleQueue()
        self.result: SearchResult | None = None
        self.error: BaseException | None = None
        self._idle = threading.Event()  # the quantum ended: the GA may trade
        self._go = threading.Event()  # the GA traded: the next quantum may start
        self._given = self._taken = np.iinfo(np.int64).max  # the peaks of the plans traded so far
        self._count = 0  # the exact search's records so far
        self.ended_alone = False  # the search ended on its own (closed, or at the deadline), not with the GA
        self._thread = threading.Thread(target=self._run, args=(deadline,), daemon=True)

    def _report(self, event: dict[str, float | int]) -> None:
        self.records.put(event_record(event, self._count))
        self._count += 1

    def _run(self, deadline: float) -> None:
        try:
            self.search.note(self._report)
            while not self.done.is_set():
                budget = self.search.nodes + self.quantum
                self.result = self.search.advance(deadline, self._report, self.done.is_set, nodes=budget)
                if self.result.closed or self.result.stopped or time.perf_counter() >= deadline:
                    self.ended_alone = not self.result.stopped
                    break
                self._idle.set()
                self._go.wait()
                self._go.clear()
        except BaseException as error:  # raised again on the caller's thread
            self.error = error
        finally:
            if self.result is None:
                self.result = self.search.result()
            self.done.set()
            self._idle.set()

    def start(self) -> None:
        self._thread.start()

    def finished(self) -> bool:
        """Wait for the quantum under way to end; whether the exact search has ended."""
        self._idle.wait()
        return self.done.is_set()

    def trade(self, offsets: np.ndarray, evaluations: int) -> Sequence[np.ndarray]:
        """Between two quanta: take the GA's plan, give back the probes' if lower, start the next quantum,
        as long as the GA's evaluations since the last trade (``evaluations``: its so far) took."""
        self._idle.wait()
        self.quantum = self.pace.quantum(evaluations - self._evaluations)
        self._evaluations = evaluations
        peak = int((offsets + self.problem.sizes).max())
        if peak < self._given:
            self._given = peak
            self.search.post(offsets)
        found = self.search.best_offsets()
        top = int((found + self.problem.sizes).max())
        self._idle.clear()
        self._go.set()
        if top >= min(peak, self._taken):
            return ()
        self._taken = top
        return (found,)

    def finish(self, offsets: np.ndarray) -> None:
        """The GA has ended with ``offsets``: the probes take its plan and stop after their quantum."""
        self._idle.wait()
        self.search.post(offsets)
        self.done.set()
        self._go.set()

    def cancel(self) -> None:
        """Stop the probes (the GA failed, or the caller asked both to stop)."""
        self.done.set()
        self._go.set()

    def pass_on(self, trace: _Trace) -> None:
        """Hand the exact search's waiting records to ``trace`` (on the caller's thread)."""
        while True:
            try:
                trace.add(self.records.get_nowait())
            except queue.Empty:
                return

    def join(self, trace: _Trace, stop: StopCheck, seed: int) -> Plan:
        """Wait for the exact search, passing its records on and asking ``stop`` meanwhile; its plan."""
        while self._thread.is_alive():
            self._thread.join(0.05)
            self.pass_on(trace)
            if stop():
                self.cancel()
        self.pass_on(trace)
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.search.plan(self.result, seed)


class _StopRequests:
    """The caller's stop check, remembering whether it ever said stop."""

    def __init__(self, should_stop: StopCheck | None) -> None:
        self.should_stop, self.asked = should_stop, False

    def __call__(self) -> bool:
        if not self.asked and self.should_stop is not None:
            self.asked = bool(self.should_stop())
        return self.asked


def _side_by_side(
    problem: Problem, settings: GASettings, run_ga: GARunner, search: ExactSearch, trace: _Trace,
    requests: _StopRequests, deadline: Deadline, starting: dict[str, Plan],
) -> list[Plan]:  # fmt: skip
    """The GA here and the exact probes on their own thread, both until ``deadline``, less the time
    to verify both their plans (the GA keeps back one more, its own)."""
    verifying = verify_seconds(problem)
    end = deadline.keeping(2 * verifying).end
    exact = _ExactBeside(problem, search, end, Pace.of(problem, search, settings))

    class Trading:
        """The GA's side of the exchange: it also passes the exact search's records on as it trades."""

        def trade(self, offsets: np.ndarray, evaluations: int) -> Sequence[np.ndarray]:
            exact.pass_on(trace)
            return exact.trade(offsets, evaluations)

    def stop() -> bool:
        if requests():
            exact.cancel()
        return exact.finished()

    exact.start()
    try:
        with native.limited_threads(max(1, min(native.threads(), usable_cores() - 1))):
            ga_plan = run_ga(
                settings, (), trace.from_now(), Trading(), stop, deadline.keeping(verifying), starting
            )
    except BaseException:
        exact.cancel()
        raise
    exact.finish(ga_plan.offsets)  # the GA may have ended before its first trade (a plan at the bound)
    exact_plan = exact.join(trace, requests, settings.seed)
    # The plan of the search that ended the run goes last: its stop reason is the run's.
    return [ga_plan, exact_plan] if exact.ended_alone else [exact_plan, ga_plan]
