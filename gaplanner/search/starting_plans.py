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
from collections.abc import Callable

import numpy as np

from gaplanner.deadline import Deadline, no_deadline
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.plans.verify import verify_seconds
from gaplanner.problem.bounds import load_profile
from gaplanner.problem.problem import Problem
from gaplanner.search.baselines import BASELINES, greedy_size_order
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
    started = time.perf_counter()
    offsets = decode(problem, heaviest_instant_order(problem))
    seconds = round(time.perf_counter() - started, 6)  # a decode out of time order, as the GA's are
    return make_plan(problem, offsets, HEAVIEST_INSTANT_FIRST, started, decode_seconds=seconds)


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
#: short for a first-fit decode, best-fit-coalescing (a walk over time, the cheapest) goes first.
MAKING_ORDER = ("first-fit", "best-fit-coalescing", HEAVIEST_INSTANT_FIRST, "greedy-size")


def decode_estimate(problem: Problem) -> float:
    """About how long one first-fit decode of ``problem`` takes, verified."""
    return DECODE_SECONDS_PER_PAIR * problem.conflicts.edge_count + DECODE_SECONDS_PER_BLOCK * problem.n


def _makers(problem: Problem, deadline: Deadline) -> dict[str, Callable[[Problem], Plan]]:
    makers = {**BASELINES, HEAVIEST_INSTANT_FIRST: heaviest_instant_first}
    order = list(MAKING_ORDER)
    if problem.has_pinned:  # best-fit-coalescing moves blocks up as the arena grows
        order.remove("best-fit-coalescing")
    elif not deadline.fits(decode_estimate(problem)):
        order.insert(0, order.pop(order.index("best-fit-coalescing")))
    return {name: makers[name] for name in order}


def first_plan(problem: Problem, deadline: Deadline) -> Plan:
    """The plan :func:`starting_plans` makes first: first-fit's, or where the time left is too short
    for a first-fit decode, best-fit-coalescing's (the cheapest). A run needs a plan even when the
    search it was asked for has no time to make one."""
    make = next(iter(_makers(problem, deadline).values()))
    return make(problem)


def _estimate(name: str, problem: Problem, made: dict[str, Plan]) -> float:
    """The estimated seconds of the plan ``name``, from first-fit's measured time where it was made
    (best-fit-coalescing's walk over time costs at most about as much)."""
    first_fit = made["first-fit"].elapsed if "first-fit" in made else decode_estimate(problem)
    in_order = name in ("first-fit", "best-fit-coalescing")
    return first_fit if in_order else OUT_OF_ORDER_FACTOR * first_fit


def starting_plans(problem: Problem, deadline: Deadline | None = None) -> dict[str, Plan]:
    """The baselines' plans that can plan ``problem`` and the heaviest instant's, by name.

    Made in :data:`MAKING_ORDER`, they stop at the first plan at the lower bound
    (nothing is left to search for). With a ``deadline`` the first is always made
    (a run needs a plan: the cheapest, when the time left is short); each other
    only when its estimated time fits what is left, so a run of a million blocks
    with a short time limit starts from fewer plans instead of overrunning it.
    On an interval problem none of them at the bound, the best is repaired
    window by window too (:data:`REPAIRED`, kept when lower).
    The plans come back in the baselines' order, then the heaviest instant's, then the repaired one.
    """
    deadline = deadline or no_deadline()
    deadline.stage("starting plans")
    made: dict[str, Plan] = {}
    repairing = True  # the best plan is repaired once: the heaviest instant's when best, else the last best
    for name, make in _makers(problem, deadline).items():
        if made and not deadline.fits(_estimate(name, problem, made)):
            continue
        made[name] = make(problem)
        if made[name].peak <= problem.lower_bound:
            break
        # The heaviest instant's plan misses the bound by a few blocks where it misses it: repaired, it
        # may meet it before greedy-size is made (the last, and on large problems the costliest).
        if name == HEAVIEST_INSTANT_FIRST and made[name] is _best(made):
            repairing = False
            if _repair_best(problem, made, deadline):
                break
    else:
        if repairing:
            _repair_best(problem, made, deadline)
    return {name: made[name] for name in (*BASELINES, HEAVIEST_INSTANT_FIRST, REPAIRED) if name in made}


def _best(made: dict[str, Plan]) -> Plan:
    return min(made.values(), key=lambda plan: plan.peak)


def _repair_best(problem: Problem, made: dict[str, Plan], deadline: Deadline) -> bool:
    """Repair the best plan ``made`` (on an interval problem) and keep it as :data:`REPAIRED` when
    lower; whether it now meets the bound."""
    best = _best(made)
    if not repairable(problem):
        return False
    # A repaired plan is verified (and a decode kept back for what follows): none is made without time.
    window = deadline.keeping(decode_estimate(problem) + verify_seconds(problem)).share(REPAIR_SHARE)
    if window.passed():
        return False
    started = time.perf_counter()
    offsets = repair(problem, best.offsets, window)
    if int((offsets + problem.sizes).max(initial=0)) >= best.peak:  # not lower: nothing to verify
        return False
    made[REPAIRED] = make_plan(problem, offsets, REPAIRED, started)
    return made[REPAIRED].peak <= problem.lower_bound
