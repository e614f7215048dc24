"""The plans every search starts from: the baselines' and the heaviest instant's blocks stacked first.

No plan is lower than the load at the heaviest instant, and a plan meets
that bound only if the blocks live then lie with no gap between them. The
baselines place them among everything else and leave gaps there; in a
training graph (iopddl's) the few instants near the max load decide the
peak, and everywhere else has room to spare.

So :func:`heaviest_instant_first` places the blocks live at the heaviest
instant first, in nesting order (earliest start first, then latest end, as
a stack of activations is freed last-in first-out), and then the rest in
greedy-size's order, all by first-fit. Those first blocks conflict pairwise,
so first-fit stacks them with no gap from address 0: the heaviest instant
costs exactly its load, and what is left must fit around a stack whose
blocks free their space from the top down on either side of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from gaplanner import native
from gaplanner.deadline import Deadline, no_deadline
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.bounds import load_profile
from gaplanner.problem.problem import Problem
from gaplanner.search.baselines import (
    BASELINES,
    best_fit_coalescing_offsets,
    first_fit_order,
    greedy_size_order,
)
from gaplanner.search.decoder import decode
from gaplanner.search.window_repair import repair, repairable

HEAVIEST_INSTANT_FIRST = "heaviest-instant-first"
#: The best starting plan with its blocks above the bound placed again, window by window
#: (:mod:`gaplanner.search.window_repair`), on an interval problem of any size: its work is bounded
#: by a few decodes of the problem. A small problem can need it as much as a large one: an order
#: chosen for its bound (:mod:`gaplanner.schedule`) keeps more bytes alive for long, their lifetimes
#: crossing instead of nested, and every starting plan then leaves long blocks above the bound.
REPAIRED = "repaired"
#: The share of the time left the repair may take: where the bound cannot be met (pangu), it gives up
#: only once its windows hold the whole run, and the searches need the rest.
REPAIR_SHARE = 0.3


def heaviest_instant_blocks(problem: Problem) -> np.ndarray:
    """The blocks live at the instant of the largest load on the problem's time axis (the first such)."""
    if problem.n == 0:
        return np.zeros(0, np.int64)
    times, load = load_profile(problem.lower, problem.upper, problem.sizes)
    instant = times[int(np.argmax(load))]
    return np.flatnonzero((problem.lower <= instant) & (problem.upper > instant))


def heaviest_instant_order(problem: Problem) -> np.ndarray:
    """The heaviest instant's blocks by start, latest end first on ties; then greedy-size's order."""
    first = heaviest_instant_blocks(problem)
    first = first[np.lexsort((first, -problem.upper[first], problem.lower[first]))]
    rest = greedy_size_order(problem)
    return np.concatenate([first, rest[~np.isin(rest, first)]])


def heaviest_instant_first(problem: Problem) -> Plan:
    """The verified plan of :func:`heaviest_instant_order`, decoded by first-fit."""
    return _make(HEAVIEST_INSTANT_FIRST, problem).plan(problem)


#: Each starting plan's offsets, made unverified: a plan is verified once it is known to be kept.
OFFSETS: dict[str, Callable[[Problem], np.ndarray]] = {
    "first-fit": lambda problem: decode(problem, first_fit_order(problem)),
    "best-fit-coalescing": best_fit_coalescing_offsets,
    HEAVIEST_INSTANT_FIRST: lambda problem: decode(problem, heaviest_instant_order(problem)),
    "greedy-size": lambda problem: decode(problem, greedy_size_order(problem)),
}
#: The starting plans whose plan records its decode's time: the GA measures its own decodes by them.
TIMED = ("first-fit", HEAVIEST_INSTANT_FIRST)


@contextmanager
def _one_thread() -> Iterator[None]:
    """The kernels' parallel loops run on this thread alone meanwhile.

    A starting plan decodes one order, which a parallel loop cannot share out; waking the loop's other
    threads for it anyway can cost more than the decode where the other cores are busy, or where
    another OpenMP runtime (torch's) shares the process.
    """
    with native.limited_threads(1):
        yield


@dataclass(frozen=True)
class _Made:
    """A starting plan's offsets, not verified yet: of the plans made, a run keeps the one at the bound
    alone where one meets it, so only the plans kept are verified."""

    name: str
    offsets: np.ndarray
    peak: int
    seconds: float  # making the offsets, its decode included

    def plan(self, problem: Problem) -> Plan:
        """The verified plan; its time counts making the offsets and verifying them."""
        started = time.perf_counter() - self.seconds
        decode_seconds = round(self.seconds, 6) if self.name in TIMED else None
        return make_plan(problem, self.offsets, self.name, started, decode_seconds=decode_seconds)


def _make(name: str, problem: Problem) -> _Made:
    started = time.perf_counter()
    with _one_thread():
        offsets = OFFSETS[name](problem)
    seconds = time.perf_counter() - started
    return _Made(name, offsets, int((offsets + problem.sizes).max(initial=0)), seconds)


#: Estimated seconds of one first-fit decode of the execution order, with its verification, per
#: conflicting pair and per block: high estimates from the large benchmark inputs on a loaded 2-core
#: machine (a plan whose estimate does not fit the time left is skipped, never overrun).
DECODE_SECONDS_PER_PAIR = 6e-8
DECODE_SECONDS_PER_BLOCK = 5e-6
#: Greedy-size's and the heaviest instant's orders place blocks out of time order: up to this many
#: times first-fit's time on those inputs.
OUT_OF_ORDER_FACTOR = 3.0

#: The order the plans are made in: first-fit (the GA's measure of a decode), best-fit-coalescing, the
#: heaviest instant's (at the bound on the training graphs), greedy-size. Where the time left is too
#: short for a first-fit decode, best-fit-coalescing (a walk over time, the cheapest) goes first. Over
#: a conflict graph (multi-core) it is no walk over time but a scan of each block's conflicts, costlier
#: than a decode: it goes last, so that a decode at the bound ends the making before it.
MAKING_ORDER = ("first-fit", "best-fit-coalescing", HEAVIEST_INSTANT_FIRST, "greedy-size")


def decode_estimate(problem: Problem) -> float:
    """About how long one first-fit decode of ``problem`` takes, verified."""
    return DECODE_SECONDS_PER_PAIR * problem.conflicts.edge_count + DECODE_SECONDS_PER_BLOCK * problem.n


def _making_order(problem: Problem, deadline: Deadline) -> list[str]:
    order = list(MAKING_ORDER)
    if problem.has_pinned:  # best-fit-coalescing moves blocks up as the arena grows
        order.remove("best-fit-coalescing")
    elif not deadline.fits(decode_estimate(problem)):
        order.insert(0, order.pop(order.index("best-fit-coalescing")))
    elif not problem.interval_conflicts:
        order.append(order.pop(order.index("best-fit-coalescing")))
    return order


def first_plan(problem: Problem, deadline: Deadline) -> Plan:
    """The plan :func:`starting_plans` makes first: first-fit's, or where the time left is too short
    for a first-fit decode, best-fit-coalescing's (the cheapest). A run needs a plan even when the
    search it was asked for has no time to make one."""
    return _make(_making_order(problem, deadline)[0], problem).plan(problem)


def _estimate(name: str, problem: Problem, made: dict[str, _Made]) -> float:
    """The estimated seconds of making the plan ``name`` and verifying every plan made so far and it:
    from first-fit's measured decode where it was made (best-fit-coalescing's walk over time costs at
    most about as much), else from :func:`decode_estimate`."""
    first_fit = made["first-fit"].seconds if "first-fit" in made else decode_estimate(problem)
    in_order = name in ("first-fit", "best-fit-coalescing")
    making = first_fit if in_order else OUT_OF_ORDER_FACTOR * first_fit
    return making + (len(made) + 1) * verify_seconds(problem)


def starting_plans(problem: Problem, deadline: Deadline | None = None) -> dict[str, Plan]:
    """The baselines' plans that can plan ``problem`` and the heaviest instant's, by name, verified.

    Made in :data:`MAKING_ORDER`, they stop at the first plan at the lower bound
    (nothing is left to search for): that plan alone comes back, and it alone is
    verified, so a run at the bound costs a few decodes and one verification.
    With a ``deadline`` the first is always made
    (a run needs a plan: the cheapest, when the time left is short); each other
    only when its estimated time, with the verification of every plan made, fits what is left, so a
    run of a million blocks with a short time limit starts from fewer plans instead of overrunning it.
    On an interval problem none of them at the bound, the best is repaired
    window by window too (:data:`REPAIRED`, kept when lower).
    The plans come back in the baselines' order, then the heaviest instant's, then the repaired one.
    """
    deadline = deadline or no_deadline()
    deadline.stage("starting plans")
    made: dict[str, _Made] = {}
    repairing = True  # the best plan is repaired once: the heaviest instant's when best, else the last best
    repaired: Plan | None = None
    for name in _making_order(problem, deadline):
        if made and not deadline.fits(_estimate(name, problem, made)):
            continue
        made[name] = _make(name, problem)
        if made[name].peak <= problem.lower_bound:
            return {name: made[name].plan(problem)}
        # The heaviest instant's plan misses the bound by a few blocks where it misses it: repaired, it
        # may meet it before greedy-size is made (the last, and on large problems the costliest).
        if name == HEAVIEST_INSTANT_FIRST and made[name] is _best(made):
            repairing = False
            repaired = _repair_best(problem, made, deadline)
            if repaired is not None and repaired.peak <= problem.lower_bound:
                break
    else:
        if repairing:
            repaired = _repair_best(problem, made, deadline)
    plans = {name: made[name].plan(problem) for name in (*BASELINES, HEAVIEST_INSTANT_FIRST) if name in made}
    return plans if repaired is None else {**plans, REPAIRED: repaired}


def _best(made: dict[str, _Made]) -> _Made:
    return min(made.values(), key=lambda plan: plan.peak)


def _repair_best(problem: Problem, made: dict[str, _Made], deadline: Deadline) -> Plan | None:
    """The best plan ``made`` (on an interval problem) repaired, verified, where that lowers it."""
    best = _best(made)
    if not repairable(problem):
        return None
    # A repaired plan is verified, and so is every plan made (a decode is kept back for what follows):
    # none is made without time.
    verifying = (len(made) + 1) * verify_seconds(problem)
    window = deadline.keeping(decode_estimate(problem) + verifying).share(REPAIR_SHARE)
    if window.passed():
        return None
    started = time.perf_counter()
    offsets = repair(problem, best.offsets, window)
    if int((offsets + problem.sizes).max(initial=0)) >= best.peak:  # not lower: nothing to verify
        return None
    return make_plan(problem, offsets, REPAIRED, started)
