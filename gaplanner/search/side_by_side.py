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

import numba
import numpy as np

from gaplanner.plans.plan import GenerationRecord, Plan, make_plan
from gaplanner.problem.problem import Problem
from gaplanner.search.exact.search import (
    ExactSettings,
    PartsSearch,
    SearchResult,
    event_record,
    exact_search,
    search_plan,
    searchable,
    start_search,
    usable_cores,
)  # fmt: skip
from gaplanner.search.exact.search import warm_up as warm_up_exact
from gaplanner.search.ga import Exchange, GASettings, ProgressCallback, StopCheck
from gaplanner.search.kernels import warm_up as warm_up_kernels

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
    ) -> Plan:
        """The GA's plan; its population seeded with ``seeds`` (offsets), trading plans with ``exchange``
        when it can (the GA in this process; others ignore it), stopping when ``stop`` says so."""
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
) -> Plan:
    """``run_ga`` (the GA, in-process or on islands) with the exact probes, see the module's text.

    ``side_by_side``: whether ``run_ga`` trades plans with an exchange (the GA in this process).
    """
    share = exact_share(problem, settings)
    if settings is None or share == 0:
        return run_ga(settings, (), on_progress, None, should_stop)
    warm_up_kernels()
    warm_up_exact()
    started = time.perf_counter()  # like each search's own, the time limit counts from after loading
    search = start_search(problem, started, settings.time_limit)
    trace, requests = _Trace(started, on_progress), _StopRequests(should_stop)
    if side_by_side and settings.exact_share is None and usable_cores() >= 2:
        plans = _side_by_side(problem, settings, run_ga, search, trace, requests)
    else:
        plans = _in_turns(problem, settings, share, run_ga, search, trace, requests)
    best = min(reversed(plans), key=lambda plan: plan.peak)
    ga_plan = next((plan for plan in plans if plan.search and plan.search.population), None)
    bound = max(plan.lower_bound for plan in plans)
    reason = "optimal" if best.peak <= bound else "stopped by request" if requests.asked else None
    return make_plan(
        problem, best.offsets, "ga", started, stop_reason=reason or plans[-1].stop_reason,
        trace=trace.records,
        search=(ga_plan or plans[0]).search, ray=ga_plan.ray if ga_plan else None, proved_bound=bound,
        bound_origin="exact search",
    )  # fmt: skip


def _exact_turn(problem: Problem, search: PartsSearch, seconds: float, seed: int, **hooks) -> Plan:
    return exact_search(problem, ExactSettings(time_limit=seconds, seed=seed), search=search, **hooks)


def _in_turns(
    problem: Problem, settings: GASettings, share: float, run_ga: GARunner, search: PartsSearch,
    trace: _Trace, should_stop: _StopRequests,
) -> list[Plan]:  # fmt: skip
    """Exact probes, the GA from their plan, exact probes from the GA's: the plans of the turns run."""
    limit = settings.time_limit or 0.0

    def exact(seconds: float, incumbent: np.ndarray | None = None) -> Plan:
        if incumbent is not None:
            search.offer(incumbent)
        return _exact_turn(
            problem, search, seconds, settings.seed, on_progress=trace.add, should_stop=should_stop
        )

    plans = [exact(limit * share / 2)]
    if not _finished(plans[0]):
        ga_settings = replace(settings, time_limit=limit * (1 - share))
        plans.append(run_ga(ga_settings, (plans[0].offsets,), trace.from_now(), None, should_stop))
        left = limit - (time.perf_counter() - trace.started)
        if not _finished(plans[-1]) and left >= LEAST_EXACT_SECONDS:
            plans.append(exact(left, plans[-1].offsets))
    return plans


class _ExactBeside:
    """The exact probes on a thread of their own, trading plans with the GA (its :class:`Exchange`).

    The thread runs the probes' compiled search and nothing else (no parallel
    kernels, none of the caller's hooks): the exact search's records wait in a
    queue until the GA's thread passes them on, and the plan is built there.
    """

    def __init__(self, problem: Problem, search: PartsSearch, deadline: float) -> None:
        self.problem, self.search = problem, search
        self.done = threading.Event()  # the exact search ended, or the caller asked both to stop
        self.records: queue.SimpleQueue[GenerationRecord] = queue.SimpleQueue()
        self.result: SearchResult | None = None
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._found: np.ndarray | None = None  # the exact search's newest better plan, not yet traded
        self._given = np.iinfo(np.int64).max  # the peak of the GA's best plan given so far
        self._count = 0  # the exact search's records so far
        self._thread = threading.Thread(target=self._run, args=(deadline,), daemon=True)

    def _run(self, deadline: float) -> None:
        best = np.iinfo(np.int64).max

        def report(event: dict[str, float | int]) -> None:
            nonlocal best
            self.records.put(event_record(event, self._count))
            self._count += 1
            if int(event["peak"]) < best:
                best = int(event["peak"])
                with self._lock:
                    self._found = self.search.result().offsets

        try:
            self.result = self.search.run(deadline, report, self.done.is_set)
        except BaseException as error:  # raised again on the caller's thread
            self.error = error
        finally:
            self.done.set()

    def start(self) -> None:
        self._thread.start()

    def trade(self, offsets: np.ndarray) -> Sequence[np.ndarray]:
        peak = int((offsets + self.problem.sizes).max())
        if peak < self._given:
            self._given = peak
            self.search.post(offsets)
        with self._lock:
            found, self._found = self._found, None
        if found is None or int((found + self.problem.sizes).max()) >= peak:
            return ()
        return (found,)

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
                self.done.set()
        self.pass_on(trace)
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return search_plan(self.problem, self.search, self.result, [], seed)


class _StopRequests:
    """The caller's stop check, remembering whether it ever said stop."""

    def __init__(self, should_stop: StopCheck | None) -> None:
        self.should_stop, self.asked = should_stop, False

    def __call__(self) -> bool:
        if not self.asked and self.should_stop is not None:
            self.asked = bool(self.should_stop())
        return self.asked


def _side_by_side(
    problem: Problem, settings: GASettings, run_ga: GARunner, search: PartsSearch, trace: _Trace,
    requests: _StopRequests,
) -> list[Plan]:  # fmt: skip
    """The GA here and the exact probes on their own thread, both for the whole time limit."""
    exact = _ExactBeside(problem, search, trace.started + (settings.time_limit or 0.0))

    class Trading:
        """The GA's side of the exchange: it also passes the exact search's records on as it trades."""

        def trade(self, offsets: np.ndarray) -> Sequence[np.ndarray]:
            exact.pass_on(trace)
            return exact.trade(offsets)

    def stop() -> bool:
        if requests():
            exact.done.set()
        return exact.done.is_set()

    threads = numba.get_num_threads()  # set per thread: the exact search keeps a core to itself
    exact.start()
    try:
        numba.set_num_threads(max(1, min(threads, usable_cores() - 1)))
        ga_plan = run_ga(settings, (), trace.from_now(), Trading(), stop)
    except BaseException:
        exact.done.set()
        raise
    finally:
        numba.set_num_threads(threads)
    exact.trade(ga_plan.offsets)  # the GA may have ended before its first trade (a plan at the bound)
    return [ga_plan, exact.join(trace, requests, settings.seed)]
