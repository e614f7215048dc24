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

import numpy as np

from gaplanner.plans.plan import Plan, make_plan
from gaplanner.problem.bounds import load_profile
from gaplanner.problem.problem import Problem
from gaplanner.search.baselines import BASELINES, baseline_plans, best_fit_coalescing, greedy_size_order
from gaplanner.search.decoder import decode

HEAVIEST_INSTANT_FIRST = "heaviest-instant-first"


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
    return make_plan(problem, offsets, HEAVIEST_INSTANT_FIRST, started)


def starting_plans(problem: Problem) -> dict[str, Plan]:
    """Every baseline's plan that can plan ``problem`` and the heaviest instant's, by name."""
    return {**baseline_plans(problem), HEAVIEST_INSTANT_FIRST: heaviest_instant_first(problem)}


def plan_at_bound(problem: Problem) -> tuple[Plan | None, int]:
    """The first starting plan that meets the lower bound, trying them one at a time (None if none
    does), and how many were made.

    At the bound nothing is left to search for, so a search that is handed one
    costs what these plans cost: the ones most often at the bound on single-core
    and split graphs go first, and the rest are not run once one is found.
    """
    makers = [BASELINES["best-fit-coalescing"], BASELINES["greedy-size"], heaviest_instant_first]
    makers.append(BASELINES["first-fit"])
    made = 0
    for make in makers:
        if problem.has_pinned and make is best_fit_coalescing:
            continue
        plan, made = make(problem), made + 1
        if plan.peak <= problem.lower_bound:
            return plan, made
    return None, made
