"""Variation operators on allocation orders (permutations).

Every random choice comes from the caller's ``numpy.random.Generator``: no
operator touches Python's global ``random`` (which DEAP's own operators use),
so concurrent searches in one process stay reproducible.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def _ordered_crossover(first, second, cut_a, cut_b, child, taken):
    """Linear order crossover: ``first[a:b]`` in place, the rest in ``second``'s order."""
    taken[:] = False
    child[cut_a:cut_b] = first[cut_a:cut_b]
    for g in first[cut_a:cut_b]:
        taken[g] = True
    pos = 0
    for g in second:
        if taken[g]:
            continue
        if pos == cut_a:
            pos = cut_b
        child[pos] = g
        pos += 1


@nb.njit(cache=True)
def _crossover_all(parents, pairs, cuts, children):
    taken = np.zeros(parents.shape[1], np.bool_)
    for i in range(len(pairs)):
        _ordered_crossover(
            parents[pairs[i, 0]], parents[pairs[i, 1]], cuts[i, 0], cuts[i, 1], children[i], taken
        )


def ordered_crossover(parents: np.ndarray, pairs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One child per row of ``pairs`` (indices into ``parents``), with random cut points."""
    n = parents.shape[1]
    cuts = np.sort(rng.integers(0, n + 1, size=(len(pairs), 2)), axis=1)
    children = np.empty((len(pairs), n), np.int64)
    _crossover_all(parents, pairs, cuts, children)
    return children


def swap(order: np.ndarray, rng: np.random.Generator) -> None:
    i, j = rng.integers(0, len(order), 2)
    order[i], order[j] = order[j], order[i]


def insertion(order: np.ndarray, rng: np.random.Generator) -> None:
    i, j = rng.integers(0, len(order), 2)
    move_to(order, i, j)


def inversion(order: np.ndarray, rng: np.random.Generator) -> None:
    i, j = np.sort(rng.integers(0, len(order) + 1, 2))
    order[i:j] = order[i:j][::-1].copy()


def move_to(order: np.ndarray, source: int, target: int) -> None:
    """Move the gene at ``source`` to ``target``, shifting the ones between."""
    gene = order[source]
    if source < target:
        order[source:target] = order[source + 1 : target + 1].copy()
    elif target < source:
        order[target + 1 : source + 1] = order[target:source].copy()
    order[target] = gene


def peak_move(order: np.ndarray, critical: np.ndarray, rng: np.random.Generator) -> None:
    """Move one block that reaches the peak to a random earlier place in the order.

    The blocks ending at the peak are the ones to lower; placing one of them
    earlier lets first-fit find it a lower gap before the others fill it.
    """
    if len(critical) == 0:
        return
    gene = critical[rng.integers(len(critical))]
    source = int(np.flatnonzero(order == gene)[0])
    if source > 0:
        move_to(order, source, int(rng.integers(0, source)))


MUTATIONS = {"swap": swap, "insertion": insertion, "inversion": inversion}
