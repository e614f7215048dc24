"""Hypothesis strategies for small random problems: interval buffers, vector clocks and multi-core graphs."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gaplanner import parse_document
from gaplanner.problem.problem import Problem, problem_from_arrays, problem_from_clocks
from gaplanner.search.decoder import Decoder

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def interval_problems(draw: st.DrawFn, max_blocks: int = 6, alignment: int | None = None):
    n = draw(st.integers(1, max_blocks))
    lower = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    align = alignment or draw(st.sampled_from([1, 1, 2, 4]))
    return problem_from_arrays(
        np.array(sizes), np.array(lower), np.array(lower) + np.array(length), alignment=align
    )


@st.composite
def graph_documents(draw: st.DrawFn, max_ops: int = 7):
    """Random acyclic multi-core graphs: operators read tensors written earlier in the list."""
    n_ops = draw(st.integers(1, max_ops))
    cores = draw(st.integers(1, 3))
    tensors: list[dict] = [{"id": "in0", "size": draw(st.integers(1, 9))}]
    operators: list[dict] = []
    for k in range(n_ops):
        available = [t["id"] for t in tensors]
        inputs = draw(st.lists(st.sampled_from(available), max_size=3, unique=True))
        outputs = [f"t{k}_{m}" for m in range(draw(st.integers(0 if inputs else 1, 2)))]
        tensors += [{"id": o, "size": draw(st.integers(1, 9))} for o in outputs]
        operators.append(
            {"id": f"op{k}", "inputs": inputs, "outputs": outputs, "core": draw(st.integers(0, cores - 1))}
        )
    used = {t for op in operators for t in op["inputs"] + op["outputs"]}
    doc = {"tensors": [t for t in tensors if t["id"] in used], "operators": operators}
    if n_ops > 1 and draw(st.booleans()):
        a, b = sorted(draw(st.lists(st.integers(0, n_ops - 1), min_size=2, max_size=2, unique=True)))
        doc["sync"] = [{"before": f"op{a}", "after": f"op{b}"}]
    return parse_document(doc)


@st.composite
def clock_problems(draw: st.DrawFn, max_buffers: int = 9) -> Problem:
    """Random vector clocks (not necessarily any program's), sizes, an alignment, some pinned blocks."""
    d = draw(st.integers(2, 4))
    n = draw(st.integers(1, max_buffers))
    lower = np.array([[draw(st.integers(0, 5)) for _ in range(d)] for _ in range(n)])
    upper = lower + np.array([[draw(st.integers(0, 3)) for _ in range(d)] for _ in range(n)])
    upper[np.arange(n), draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n))] += 1
    sizes = np.array(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)))
    alignment = draw(st.sampled_from([1, 2, 4]))
    free = problem_from_clocks(sizes, lower, upper, alignment=alignment)
    plan = Decoder.for_problem(free, pairs=True).decode(np.array(draw(st.permutations(range(n)))))
    pins = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return problem_from_clocks(sizes, lower, upper, alignment=alignment, offsets=np.where(pins, plan, -1))
