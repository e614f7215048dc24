"""Placing a model's nodes around a schedule: topological, the listed nodes in the schedule's order."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaplanner.documents.node_order import place_nodes
from gaplanner.errors import InputError


@st.composite
def scheduled_graphs(draw: st.DrawFn):
    """A DAG numbered in a topological order, a subset of it listed in a random valid order."""
    n = draw(st.integers(1, 12))
    inputs = [sorted(draw(st.sets(st.integers(0, k - 1), max_size=3))) if k else [] for k in range(n)]
    listed = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1)))
    rng = random.Random(draw(st.integers(0, 2**16)))
    done: set[int] = set()
    schedule: list[int] = []
    while len(done) < n:  # a random topological order of the whole graph, then its listed part
        ready = [k for k in range(n) if k not in done and set(inputs[k]) <= done]
        node = rng.choice(ready)
        done.add(node)
        schedule += [node] if node in listed else []
    return inputs, schedule


@settings(max_examples=200, deadline=None)
@given(scheduled_graphs())
def test_every_node_is_placed_after_its_inputs_and_the_listed_ones_keep_the_schedule(graph):
    inputs, schedule = graph
    order = place_nodes(inputs, {k: p for p, k in enumerate(schedule)}, [f"n{k}" for k in range(len(inputs))])
    assert sorted(order) == list(range(len(inputs)))
    position = {k: p for p, k in enumerate(order)}
    assert all(position[s] < position[k] for k, sources in enumerate(inputs) for s in sources)
    assert [k for k in order if k in set(schedule)] == schedule


def test_a_node_that_must_follow_another_goes_right_after_it():
    inputs = [[], [0], [1], [0]]  # 1 reads 0's tuple; 2 reads 1; 3 reads 0
    order = place_nodes(inputs, {0: 0, 3: 1, 2: 2}, ["a", "item", "b", "c"], follows={1: 0})
    assert order == [0, 1, 3, 2]


def test_a_schedule_reading_through_an_unlisted_node_too_early_names_both_operators():
    inputs = [[], [0], [1]]  # c reads a through the unlisted b
    with pytest.raises(InputError, match=r"schedule\[0\]: operator 'c' reads 'a' before it is written"):
        place_nodes(inputs, {2: 0, 0: 1}, ["a", "b", "c"])
