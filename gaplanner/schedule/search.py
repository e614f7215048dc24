"""The order search: starting orders, then a local search and a random-key genetic search over valid orders.

Every genome is a vector of priorities (random keys) decoded through a ready
list, so it always decodes to a topological order; the starting orders are
put in as keys that decode to themselves. The loop is DEAP's ``eaSimple`` in
shape (select, vary, evaluate), with a biased crossover towards elite parents
(BRKGA) and, every few generations, a local search that moves one operator at
a time within its legal window. Deterministic for a seed and an evaluation
budget (the time limit only cuts it short).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from gaplanner.schedule.dag import Dag
from gaplanner.schedule.kernels import decode_keys, local_search, score_keys
from gaplanner.schedule.memory import LoadModel

#: Fractions of the population: elite genomes kept as they are, and fresh random ones each generation.
ELITE, MUTANTS = 0.2, 0.1
#: Probability that a child takes a gene from its elite parent.
BIAS = 0.7
#: One-operator moves in one call of the local search, at most; fewer on large graphs, where each move
#: scores a whole order: a call then stays a fraction of a second, so the deadline is kept.
MOVES_PER_ROUND = 4000
WORK_PER_ROUND = 200_000_000


@dataclass
class SearchState:
    """The best order found so far and what the search spent."""

    order: np.ndarray
    peak: int
    evaluations: int = 0
    generations: int = 0


def keys_of(order: np.ndarray) -> np.ndarray:
    """Keys that decode to ``order`` (a topological order): each operator's position, scaled to [0, 1)."""
    keys = np.empty(len(order), np.float64)
    keys[order] = np.arange(len(order)) / max(len(order), 1)
    return keys


class OrderSearch:
    """Improves a starting order of one graph's operators within a budget, stopping at a proved bound."""

    def __init__(self, dag: Dag, model: LoadModel, population: int, seed: int) -> None:
        self.dag, self.model = dag, model
        self.population = max(4, population)
        self.rng = np.random.default_rng(seed)
        self.args = model.args()
        self.floor = model.blocks.pinned_top  # no order places a pinned block lower
        work = dag.n + len(model.blocks.acc_op) + 1
        self.moves = max(50, min(MOVES_PER_ROUND, WORK_PER_ROUND // work))

    def _better(self, peak: int, order: np.ndarray, state: SearchState) -> None:
        peak = max(int(peak), self.floor)
        if peak < state.peak:
            state.order, state.peak = order.copy(), peak

    def improve(self, order: np.ndarray, moves: int, state: SearchState) -> np.ndarray:
        """``order`` after up to ``moves`` one-operator moves; updates ``state`` if it beats the best."""
        order = order.copy()
        dag = self.dag
        peak, _ = local_search(
            order, moves, int(self.rng.integers(2**31)), dag.pred_ptr, dag.pred_idx,
            dag.succ_ptr, dag.succ_idx, self.args,
        )  # fmt: skip
        state.evaluations += moves
        self._better(peak, order, state)
        return order

    def _score(self, keys: np.ndarray) -> np.ndarray:
        dag = self.dag
        return score_keys(keys, dag.pred_ptr, dag.succ_ptr, dag.succ_idx, self.args)

    def run(
        self, starts: list[np.ndarray], bound: int, evaluations: int, deadline: float, state: SearchState
    ) -> None:
        """Local search from the best start, then generations of the genetic search with local search on
        the best, until the budget or the deadline is spent or the bound is met."""
        n = self.dag.n
        if n < 2 or state.peak <= bound:
            return
        polished = self.improve(state.order, min(self.moves, evaluations), state)
        size = self.population
        keys = self.rng.random((size, n))
        seeds = [keys_of(o) for o in [*starts, polished]][: size // 2]
        keys[: len(seeds)] = seeds
        scores = self._score(keys)
        state.evaluations += size
        while state.evaluations < evaluations and time.perf_counter() < deadline and state.peak > bound:
            keys, scores = self._generation(keys, scores, state)
            if state.generations % 5 == 0:
                best = decode_keys(keys[0], self.dag.pred_ptr, self.dag.succ_ptr, self.dag.succ_idx)
                better = self.improve(best, min(self.moves, evaluations), state)
                keys[-1] = keys_of(better)
                scores[-1] = self._score(keys[-1:])[0]

    def _generation(
        self, keys: np.ndarray, scores: np.ndarray, state: SearchState
    ) -> tuple[np.ndarray, np.ndarray]:
        """One BRKGA generation: elites kept, mutants drawn, the rest children of an elite and another."""
        size, n = keys.shape
        rank = np.lexsort((scores[:, 1], scores[:, 0]))
        keys, scores = keys[rank], scores[rank]
        elite = max(1, math.ceil(ELITE * size))
        mutants = max(1, int(MUTANTS * size))
        children = size - elite - mutants
        a = self.rng.integers(0, elite, children)
        b = self.rng.integers(elite, size, children)
        take = self.rng.random((children, n)) < BIAS
        fresh = np.concatenate([np.where(take, keys[a], keys[b]), self.rng.random((mutants, n))])
        fresh_scores = self._score(fresh)
        state.evaluations += len(fresh)
        state.generations += 1
        keys = np.concatenate([keys[:elite], fresh])
        scores = np.concatenate([scores[:elite], fresh_scores])
        best = int(np.lexsort((scores[:, 1], scores[:, 0]))[0])
        if max(int(scores[best, 0]), self.floor) < state.peak:
            order = decode_keys(keys[best], self.dag.pred_ptr, self.dag.succ_ptr, self.dag.succ_idx)
            self._better(scores[best, 0], order, state)
        order = np.lexsort((scores[:, 1], scores[:, 0]))
        return keys[order], scores[order]
