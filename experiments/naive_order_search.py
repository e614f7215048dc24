"""The anchor the order search must beat: naive local search over operator priorities, in plain Python.

Each operator has a priority; an order is decoded from them by a ready list
(the ready operator of lowest priority runs next, so every order is valid).
A step swaps the priorities of two operators drawn at random and keeps the
swap when the order's bound does not grow. It starts from the best of the
compiler orders (:data:`gaplanner.schedule.orders.STARTING_ORDERS`), as a
throwaway script would, and stops at its time budget. The loop is plain
Python; orders are scored by the same bound function as the search's
(:class:`gaplanner.schedule.memory.LoadModel`), so the two differ in how they
search, not in what they count.
"""

from __future__ import annotations

import heapq
import random
import time
from dataclasses import dataclass

import numpy as np

from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import Document
from gaplanner.schedule.choose import given_order
from gaplanner.schedule.dag import build_dag
from gaplanner.schedule.memory import LoadModel, build_blocks
from gaplanner.schedule.orders import STARTING_ORDERS


@dataclass(frozen=True)
class NaiveResult:
    """The best bound the naive search found, where it started, and how many orders it scored."""

    bound: int
    start: str
    start_bound: int
    evaluations: int
    seconds: float


def _decode(priority: list[float], successors: list[list[int]], indegree: list[int]) -> list[int]:
    waiting = list(indegree)
    ready = [(priority[k], k) for k, d in enumerate(waiting) if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, k = heapq.heappop(ready)
        order.append(k)
        for s in successors[k]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (priority[s], s))
    return order


def naive_order_search(
    document: Document, seconds: float, seed: int = 0, rules: Rules | None = None
) -> NaiveResult:
    """Random pairwise priority swaps for ``seconds``, from the best compiler order."""
    began = time.perf_counter()
    dag = build_dag(document)
    blocks = build_blocks(document, rules or Rules())
    model = LoadModel(blocks)
    given = given_order(document, dag)
    starts = {name: make(dag, blocks, given) for name, make in STARTING_ORDERS.items()}
    scores = {name: model.peak(order) for name, order in starts.items()}
    start = min(scores, key=scores.__getitem__)
    priority = [0.0] * dag.n
    for position, k in enumerate(starts[start].tolist()):
        priority[k] = float(position)
    successors = [dag.successors(k).tolist() for k in range(dag.n)]
    indegree = [len(dag.predecessors(k)) for k in range(dag.n)]
    rng = random.Random(seed)
    best, evaluations = scores[start], 0
    deadline = began + seconds
    while time.perf_counter() < deadline and dag.n > 1:
        i, j = rng.sample(range(dag.n), 2)
        priority[i], priority[j] = priority[j], priority[i]
        peak = model.peak(np.array(_decode(priority, successors, indegree), np.int64))
        evaluations += 1
        if peak <= best:
            best = peak
        else:
            priority[i], priority[j] = priority[j], priority[i]
    return NaiveResult(best, start, scores[start], evaluations, time.perf_counter() - began)
