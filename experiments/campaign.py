"""The planner-vs-oracle campaign: many small random problems, every algorithm's plan checked.

Each seed makes one small problem of a kind the library accepts (a buffer
list or arrays with alignment and pinned buffers, vector-clock buffers, a
graph on one or several cores with views, in-place chances, workspaces,
declared inputs and outputs, pinned tensors and operators on units of
different alignments under random rules, several models in one pool one after
another or at once, some sharing a tensor, buffer lists, graphs and pools of
graphs across memories with capacities, alignments, costs and pins). Every
algorithm plans it (and the GA with its exact turns), and each
plan is checked against the campaign's own reading of the rules
(experiments/oracle.py) and, where the problem is small, against the
brute-force optimum: no plan below it, the lower bound never above it,
``optimal`` claimed only when the peak (across memories, the cost) is that
optimum, and the exact search reaching it.

    python -m experiments.campaign --seeds 0:200000 --processes 2 --minutes 60

The problems depend only on the seed range (not on the processes); the exact
search and the hybrid run under small time limits, so what they find may
depend on the machine's load, never whether a plan is valid. A failing seed is
printed as a document that reproduces it (``--show SEED`` prints any).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from experiments import oracle
from experiments.schedule_campaign import add_order_edges, best_over_orders, check_searched_orders

#: The GA's and random search's budgets: tiny, fixed in generations and evaluations (no clock).
GA_OPTIONS = {"generations": 3, "population": 8, "islands": 1, "time_limit": None, "stall_generations": None}
RANDOM_SEARCH_OPTIONS = {"evaluations": 32, "batch": 16}
#: The exact search alone, and the hybrid in turns (a share given): the GA between two exact turns.
EXACT_OPTIONS = {"time_limit": 0.5}
HYBRID_OPTIONS = {**GA_OPTIONS, "time_limit": 0.5, "exact_share": 0.5}
#: The default hybrid: the exact probes on a thread of their own beside the GA, trading plans.
BESIDE_OPTIONS = {**GA_OPTIONS, "time_limit": 0.5}
#: Beside every algorithm of gaplanner.ALGORITHMS (its own options above), the GA with its exact turns.
HYBRID, BESIDE = "ga+exact", "ga beside exact"
#: The names above, each the GA with other exact options.
GA_VARIANTS = {HYBRID: HYBRID_OPTIONS, BESIDE: BESIDE_OPTIONS}
#: The exact search on the problem with its blocks of one lifetime merged
#: (gaplanner.search.exact.shared_lifetimes),
#: its plan expanded to the original: ``solve`` takes that path only on problems too large whole.
MERGED = "exact, families merged"
#: The brute force orders at most this many free blocks (its cost is their factorial).
MAX_BRUTE_FORCE_BLOCKS = 6
#: Across memories the brute force tries at most this many assignments of blocks to memories (cheapest
#: first), and orders the blocks of each memory (at most MAX_BRUTE_FORCE_BLOCKS blocks).
MAX_MEMORY_ASSIGNMENTS = 243
KINDS = (
    "arrays", "buffers", "clocks", "graph", "multicore", "pool", "memories", "memory-graph", "shared",
    "memory-pool", "schedule",
)  # fmt: skip


# --- Random problems -------------------------------------------------------------------------------


def _buffers(rng: np.random.Generator, n: int, components: int = 1) -> dict[str, Any]:
    """Lifetimes, sizes, one alignment and a few pinned buffers."""
    alignment = int(rng.choice([1, 1, 2, 4, 8]))
    lower = rng.integers(0, 5, (n, components))
    upper = lower + rng.integers(0, 4, (n, components))
    upper[np.arange(n), rng.integers(0, components, n)] += 1  # every end after its start
    offsets = [-1] * n
    if rng.random() < 0.3:
        offsets[int(rng.integers(n))] = alignment * int(rng.integers(0, 4))
    sizes = [int(s) for s in rng.integers(1, 17, n)]
    return {"sizes": sizes, "lower": lower.tolist(), "upper": upper.tolist(), "alignment": alignment,
            "offsets": offsets}  # fmt: skip


def _buffer_document(rng: np.random.Generator, n: int, model: str = "b") -> dict[str, Any]:
    raw = _buffers(rng, n)
    buffers = []
    for i in range(n):
        buffer = {
            "id": f"{model}{i}",
            "lower": raw["lower"][i][0],
            "upper": raw["upper"][i][0],
            "size": raw["sizes"][i],
        }
        if raw["offsets"][i] >= 0:
            buffer["offset"] = raw["offsets"][i]
        buffers.append(buffer)
    return {"alignment": raw["alignment"], "buffers": buffers}


def _tensor(rng: np.random.Generator, tid: str, size: int) -> dict[str, Any]:
    tensor: dict[str, Any] = {"id": tid}
    if size % 4 == 0 and rng.random() < 0.3:
        tensor.update(shape=[1, size // 4], dtype="float32")
    else:
        tensor["size"] = size
    if rng.random() < 0.15:
        tensor["alignment"] = int(rng.choice([2, 4, 8]))
    return tensor


def _graph(rng: np.random.Generator, cores: int) -> dict[str, Any]:
    """A small graph: each operator reads earlier tensors and writes new ones; optional declarations."""
    sizes: dict[str, int] = {}
    for i in range(int(rng.integers(1, 3))):
        sizes[f"x{i}"] = int(rng.integers(1, 17))
    ops: list[dict[str, Any]] = []
    for k in range(int(rng.integers(1, 5))):
        existing = list(sizes)
        reads = sorted({existing[int(j)] for j in rng.integers(0, len(existing), int(rng.integers(1, 3)))})
        op: dict[str, Any] = {"id": f"op{k}", "inputs": reads, "outputs": []}
        if cores > 1:
            op["core"] = int(rng.integers(cores))
        for m in range(1 if rng.random() < 0.8 else 2):
            out = f"t{k}{'ab'[m]}"
            host = reads[int(rng.integers(len(reads)))]
            choice = rng.random()
            if choice < 0.2 and m == 0:
                sizes[out] = sizes[host]
                op["views"] = {out: host}
            elif choice < 0.5:
                sizes[out] = (
                    max(1, sizes[host] - int(rng.integers(0, 3))) if rng.random() < 0.9 else sizes[host] + 1
                )
                op.setdefault("inplace", {})[out] = host if rng.random() < 0.7 else reads
            else:
                sizes[out] = int(rng.integers(1, 17))
            op["outputs"].append(out)
        if rng.random() < 0.25:
            op["workspace"] = int(rng.integers(1, 9))
        ops.append(op)
    doc: dict[str, Any] = {"operators": ops}
    if rng.random() < 0.3:
        doc["alignment"] = int(rng.choice([2, 4]))
    tensors = [_tensor(rng, tid, size) for tid, size in sizes.items()]
    views = {out for op in ops for out in op.get("views", {})}
    if rng.random() < 0.25:
        pin = tensors[int(rng.integers(len(tensors)))]
        if pin["id"] not in views:
            pin["offset"] = 8 * int(rng.integers(0, 3))
    doc["tensors"] = tensors
    written = [t for op in ops for t in op["outputs"]]
    if rng.random() < 0.3:
        doc["inputs"] = [t for t in sizes if t not in written]
    if rng.random() < 0.3:
        doc["outputs"] = sorted(
            {written[int(j)] for j in rng.integers(0, len(written), int(rng.integers(1, 3)))}
        )
    if cores > 1 and len(ops) > 1 and rng.random() < 0.5:
        i, j = sorted(int(v) for v in rng.choice(len(ops), 2, replace=False))
        doc["sync"] = [{"before": ops[i]["id"], "after": ops[j]["id"]}]
    return doc


def _on_devices(doc: dict[str, Any], rng: np.random.Generator) -> None:
    """Sometimes, a table of two units of different alignments and operators run on them (or on none)."""
    if rng.random() >= 0.4:
        return
    doc["devices"] = [
        {"id": "npu", "alignment": int(rng.choice([4, 8, 16]))},
        {"id": "dsp", "alignment": int(rng.choice([1, 2, 4]))},
    ]
    for op in doc["operators"]:
        unit = rng.choice(["npu", "dsp", ""])
        if unit:
            op["device"] = str(unit)


def _rules(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "keep_outputs": bool(rng.random() < 0.8),
        "views": bool(rng.random() < 0.8),
        "inplace": str(rng.choice(["auto", "auto", "always", "never"])),
    }


def _memories(rng: np.random.Generator) -> list[dict[str, Any]]:
    """Two or three memories, fastest first: small capacities (the last mostly unbounded), alignments,
    costs given for some (the others take the defaults)."""
    count, costs, read = int(rng.integers(2, 4)), bool(rng.random() < 0.6), 0
    memories = []
    for k in range(count):
        memory: dict[str, Any] = {"id": f"mem{k}"}
        if k < count - 1 or rng.random() < 0.2:  # all bounded: the plan answers whether it fits
            memory["capacity"] = int(rng.integers(4, 41)) * (1 if k < count - 1 else 2)
        if rng.random() < 0.3:
            memory["alignment"] = int(rng.choice([2, 4, 8]))
        read += int(rng.integers(1, 6))
        if costs and rng.random() < 0.8:
            memory["read_cost"] = read
        if costs and rng.random() < 0.3:
            memory["write_cost"] = int(rng.integers(0, 8))
        memories.append(memory)
    return memories


def _pin_to_memories(rng: np.random.Generator, items: list[dict[str, Any]], memories: list) -> None:
    """Pin some items to a memory; a pinned offset always names its memory."""
    for item in items:
        if "offset" in item or rng.random() < 0.2:
            item["memory"] = memories[int(rng.integers(len(memories)))]["id"]


def _shared_pool(rng: np.random.Generator) -> dict[str, Any]:
    """Two graphs sharing their first input (a KV cache): one tensor both read, the same in each."""
    docs = [_graph(rng, 1) for _ in range(2)]
    first = next(t for t in docs[0]["tensors"] if t["id"] == "x0")
    docs[1]["tensors"] = [dict(first) if t["id"] == "x0" else t for t in docs[1]["tensors"]]
    models = [{"id": f"m{k}", "document": doc} for k, doc in enumerate(docs)]
    together = str(rng.choice(["sequential", "concurrent"]))
    return {"models": models, "together": together, "shared": ["x0"]}


def make_case(seed: int) -> dict[str, Any]:
    """The problem of one seed, as a JSON document that rebuilds it (see :func:`build`)."""
    rng = np.random.default_rng(seed)
    kind = KINDS[seed % len(KINDS)]
    if kind == "arrays":
        return {"kind": kind, **_buffers(rng, int(rng.integers(1, 7)))}
    if kind == "clocks":
        return {"kind": kind, **_buffers(rng, int(rng.integers(1, 7)), int(rng.integers(2, 4)))}
    if kind == "buffers":
        return {"kind": kind, "document": _buffer_document(rng, int(rng.integers(1, 7)))}
    if kind in ("graph", "multicore"):
        cores = 1 if kind == "graph" else int(rng.integers(2, 4))
        doc = _graph(rng, cores)
        _on_devices(doc, np.random.default_rng((seed, 25)))  # its own stream: the graphs stay as they were
        return {"kind": kind, "document": doc, "rules": _rules(rng)}
    if kind == "memories":
        document = _buffer_document(rng, int(rng.integers(1, 7)))
        document["memories"] = _memories(rng)
        _pin_to_memories(rng, document["buffers"], document["memories"])
        return {"kind": kind, "document": document}
    if kind == "memory-graph":
        document = _graph(rng, int(rng.choice([1, 1, 2])))
        document["memories"] = _memories(rng)
        _pin_to_memories(rng, document["tensors"], document["memories"])
        return {"kind": kind, "document": document, "rules": _rules(rng)}
    if kind == "shared":
        return {"kind": kind, "pool": _shared_pool(rng), "rules": _rules(rng)}
    if kind == "schedule":
        doc = _graph(rng, 1)
        add_order_edges(doc, rng)
        return {"kind": kind, "document": doc, "rules": _rules(rng)}
    if kind == "memory-pool":
        memories = _memories(rng)
        models = [{"id": f"m{k}", "document": _graph(rng, 1)} for k in range(2)]
        for model in models:
            _pin_to_memories(rng, model["document"]["tensors"], memories)
        together = str(rng.choice(["sequential", "concurrent"]))
        pool = {"models": models, "together": together, "memories": memories}
        return {"kind": kind, "pool": pool, "rules": _rules(rng)}
    together = str(rng.choice(["sequential", "concurrent"]))
    if rng.random() < 0.5:
        models = [{"id": f"m{k}", "document": _graph(rng, 1)} for k in range(2)]
        return {"kind": kind, "pool": {"models": models, "together": together}, "rules": _rules(rng)}
    models = [{"id": f"m{k}", "document": _buffer_document(rng, int(rng.integers(1, 4)))} for k in range(2)]
    return {"kind": kind, "pool": {"models": models, "together": together}}


# --- The library's problem and the oracle's reading of one case ------------------------------------


def build(case: dict[str, Any]):  # -> gaplanner.Problem
    """The library's problem for a case (raises the library's InputError when it refuses it)."""
    from gaplanner.documents.rules import Rules
    from gaplanner.problem.loading import problem_from_json
    from gaplanner.problem.pools import problem_from_pool_document
    from gaplanner.problem.problem import problem_from_arrays, problem_from_clocks

    kind = case["kind"]
    rules = Rules(**case["rules"]) if "rules" in case else None
    if kind in ("arrays", "clocks"):
        make = problem_from_arrays if kind == "arrays" else problem_from_clocks
        lower, upper = np.array(case["lower"]), np.array(case["upper"])
        if kind == "arrays":
            lower, upper = lower[:, 0], upper[:, 0]
        return make(np.array(case["sizes"]), lower, upper, alignment=case["alignment"],
                    offsets=np.array(case["offsets"]))  # fmt: skip
    if kind in ("pool", "shared", "memory-pool"):
        return problem_from_pool_document(case["pool"], rules=rules)
    return problem_from_json(case["document"], rules=rules)


def read(case: dict[str, Any]) -> oracle.Reading | oracle.MemoryReading:
    """The oracle's reading of a case, from the rules alone."""
    kind = case["kind"]
    rules = case.get("rules", {})
    if kind == "memories":
        return oracle.buffer_memory_reading(case["document"])
    if kind == "memory-graph":
        return oracle.graph_memory_reading(case["document"], **rules)
    if kind == "memory-pool":
        pool = case["pool"]
        models = [
            (m["id"], oracle.graph_memory_reading({**m["document"], "memories": pool["memories"]}, **rules))
            for m in pool["models"]
        ]
        return oracle.pool_memory_reading(models, pool["together"], oracle.memory_specs(pool))
    if kind in ("arrays", "clocks"):
        ids = [str(i) for i in range(len(case["sizes"]))]
        lower = case["lower"] if kind == "clocks" else [t[0] for t in case["lower"]]
        upper = case["upper"] if kind == "clocks" else [t[0] for t in case["upper"]]
        return oracle.interval_reading(ids, case["sizes"], lower, upper, case["alignment"], case["offsets"])
    if kind == "buffers":
        return oracle.buffer_document_reading(case["document"])
    if kind in ("pool", "shared"):
        models = []
        for model in case["pool"]["models"]:
            doc = model["document"]
            one = (
                oracle.graph_reading(doc, **rules)
                if "operators" in doc
                else oracle.buffer_document_reading(doc)
            )
            models.append((model["id"], one))
        return oracle.pool_reading(models, case["pool"]["together"], case["pool"].get("shared", ()))
    return oracle.graph_reading(case["document"], **rules)


# --- Checking every algorithm on one case ----------------------------------------------------------


@dataclass
class Tally:
    """What a run of the campaign counted, and its first failures."""

    problems: int = 0
    refused: int = 0
    plans: int = 0
    invalid: int = 0
    false_optimal: int = 0
    below_optimum: int = 0
    bound_above_optimum: int = 0
    exact_missed: int = 0
    crashes: int = 0
    with_optimum: int = 0
    memory_plans: int = 0
    exact_plans: int = 0
    merged_plans: int = 0
    merged_missed: int = 0
    scheduled_plans: int = 0
    no_fit: int = 0
    missed_fit: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failures = sorted(self.failures + other.failures, key=lambda f: f["seed"])[:5]

    @property
    def failed(self) -> int:
        return sum(getattr(self, name) for name in FINDINGS.values()) + self.crashes


COUNTS = ("problems", "refused", "plans", "invalid", "false_optimal", "below_optimum", "bound_above_optimum",
          "exact_missed", "crashes", "with_optimum", "memory_plans", "exact_plans", "merged_plans",
          "merged_missed", "scheduled_plans", "no_fit", "missed_fit")  # fmt: skip
#: What a check finds, and the count it adds to.
FINDINGS = {
    "invalid": "invalid",
    "false optimal": "false_optimal",
    "below optimum": "below_optimum",
    "bound above optimum": "bound_above_optimum",
    "exact short of optimum": "exact_missed",
}


def _settings(algorithm: str, seed: int) -> Any:
    from gaplanner.solve import settings_for

    options = {"ga": GA_OPTIONS, "random-search": RANDOM_SEARCH_OPTIONS, "exact": EXACT_OPTIONS,
               **GA_VARIANTS}.get(algorithm, {})  # fmt: skip
    return settings_for("ga" if algorithm in GA_VARIANTS else algorithm, {**options, "seed": seed})


def _solve(problem, algorithm: str, seed: int):  # -> Plan | None
    from gaplanner.solve import solve

    if algorithm == MERGED:
        from gaplanner.search.exact.shared_lifetimes import merge_shared_lifetimes

        merged = merge_shared_lifetimes(problem)
        if merged is None:  # no two blocks share a lifetime, or some are pinned: nothing is merged
            return None
        started = time.perf_counter()
        return merged.original_plan(
            problem, solve(merged.problem, "exact", _settings("exact", seed)), started
        )
    return solve(problem, "ga" if algorithm in GA_VARIANTS else algorithm, _settings(algorithm, seed))


def runs() -> tuple[str, ...]:
    """Every algorithm the campaign plans with: gaplanner.ALGORITHMS, the GA with exact probes and the
    exact search on blocks of one lifetime merged."""
    from gaplanner.registry import ALGORITHMS

    return (*ALGORITHMS, *GA_VARIANTS, MERGED)


def check_case(seed: int, tally: Tally) -> None:
    """Plan one seed's problem with every algorithm and check each plan."""
    check(make_case(seed), seed, tally)


def check(case: dict[str, Any], seed: int, tally: Tally) -> None:
    """Plan a case with every algorithm (the searches seeded with ``seed``) and check each plan."""
    from gaplanner.errors import InputError

    tally.problems += 1

    def fail(what: str, algorithm: str | None, detail: str) -> None:
        tally.failures.append(
            {"seed": seed, "what": what, "algorithm": algorithm, "detail": detail, "case": case}
        )

    if case["kind"] == "schedule":
        check_searched_orders(case, seed, tally, fail)
        return
    try:
        problem = build(case)
    except InputError:
        tally.refused += 1
        return
    reading = read(case)
    if isinstance(reading, oracle.MemoryReading):
        _check_memory_case(problem, reading, seed, tally, fail)
        return
    best = None
    if oracle.free_blocks(reading) <= MAX_BRUTE_FORCE_BLOCKS:
        try:
            peak, at = oracle.optimum(reading)
        except ValueError as exc:  # the library should have refused it
            tally.crashes += 1
            fail("accepted", None, f"the library planned a problem the rules refuse: {exc}")
            return
        if (broken := oracle.violation(reading, at, peak)) is not None:
            fail("oracle", None, f"the brute force's own plan breaks a rule: {broken}")
            tally.crashes += 1
            return
        best = peak
        tally.with_optimum += 1
        if problem.lower_bound > best:
            tally.bound_above_optimum += 1
            fail("bound above optimum", None, f"problem bound {problem.lower_bound} > optimum {best}")
    for algorithm in runs():
        if algorithm == "best-fit-coalescing" and problem.has_pinned:
            continue  # documented: it moves blocks, so it refuses pinned ones
        try:
            plan = _solve(problem, algorithm, seed)
        except Exception as exc:  # any exception is a finding here
            tally.crashes += 1
            fail("crash", algorithm, f"{type(exc).__name__}: {exc}")
            continue
        if plan is None:
            continue
        tally.plans += 1
        tally.merged_plans += algorithm == MERGED
        # merging may lose the optimum (not proved otherwise): counted, not a failure, as no plan claims it
        tally.merged_missed += (
            algorithm == MERGED and best is not None and not reading.chances and plan.peak > best
        )
        tally.exact_plans += algorithm == "exact"
        # where the in-place writes are the planner's to choose (docs/rules.md), its choice fixes them
        # before the exact search, which then may miss an optimum that takes others
        exact = algorithm == "exact" and not reading.chances
        found = plan_findings(reading, plan.tensor_offsets(), plan.peak, plan.lower_bound, plan.optimal,
                              best, exact=exact)  # fmt: skip
        _count(found, tally, lambda what, detail, a=algorithm: fail(what, a, detail))


def _count(found: list[tuple[str, str]], tally: Tally, fail: Callable) -> None:
    for what, detail in found:
        setattr(tally, FINDINGS[what], getattr(tally, FINDINGS[what]) + 1)
        fail(what, detail)


def plan_findings(
    reading: oracle.Reading,
    offsets: dict[str, int],
    peak: int,
    lower_bound: int,
    optimal: bool,
    best: int | None,
    exact: bool = False,
) -> list[tuple[str, str]]:
    """What is wrong with a one-arena plan (its offsets, peak, bound and optimality claim), given the
    brute-force optimum ``best`` (None: unknown); ``exact``: the plan is the exact search's, which on
    these small problems must reach the optimum where no in-place write is to choose."""
    found = []
    if (broken := oracle.violation(reading, offsets, peak)) is not None:
        found.append(("invalid", broken))
    if best is None:
        return found
    if peak < best:
        found.append(("below optimum", f"peak {peak} < brute-force optimum {best}"))
    if lower_bound > best:
        found.append(("bound above optimum", f"plan bound {lower_bound} > optimum {best}"))
    if optimal and peak != best:
        found.append(("false optimal", f"claims optimal at {peak}, brute-force optimum {best}"))
    if exact and peak > best:
        found.append(("exact short of optimum", f"peak {peak} > brute-force optimum {best}"))
    return found


def memory_placement(plan) -> tuple[dict[str, int], dict[str, str], dict[str, int]]:
    """A plan across memories as its JSON states it: each item's offset and memory, each memory's peak."""
    data = plan.to_dict()
    rows = data["tensors"] if "tensors" in data else data["blocks"]
    offsets = {row["id"]: row["offset"] for row in rows}
    memory_of = {row["id"]: row["memory"] for row in rows}
    return offsets, memory_of, {m["id"]: m["peak"] for m in data["memories"]}


def memory_plan_findings(
    reading: oracle.MemoryReading,
    placement: tuple[dict[str, int], dict[str, str], dict[str, int]],
    cost: float,
    cost_lower_bound: float,
    optimal: bool,
    best: float | None,
) -> list[tuple[str, str]]:
    """What is wrong with a plan across memories, given the brute-force least cost ``best`` (None: none
    known)."""
    found = []
    if (broken := oracle.memory_violation(reading, *placement, cost)) is not None:
        found.append(("invalid", broken))
    if best is None:
        return found
    close = math.isclose(cost, best, rel_tol=1e-9, abs_tol=1e-9)
    if cost < best and not close:
        found.append(("below optimum", f"cost {cost} < brute-force least cost {best}"))
    if cost_lower_bound > best and not math.isclose(cost_lower_bound, best, rel_tol=1e-9, abs_tol=1e-9):
        found.append(("bound above optimum", f"cost bound {cost_lower_bound} > least cost {best}"))
    if optimal and not close:
        found.append(("false optimal", f"claims optimal at cost {cost}, brute-force least cost {best}"))
    return found


def _check_memory_case(
    problem, reading: oracle.MemoryReading, seed: int, tally: Tally, fail: Callable
) -> None:
    """Every algorithm that plans across memories plans it; every other one must refuse it."""
    from gaplanner.errors import DoesNotFit, InputError
    from gaplanner.registry import ALGORITHMS

    best = None
    small = len({reading.reading.group_of(i) for i in reading.reading.sizes}) <= MAX_BRUTE_FORCE_BLOCKS
    if not reading.reading.chances and small and oracle.memory_choices(reading) <= MAX_MEMORY_ASSIGNMENTS:
        best = oracle.memory_optimum(reading)
        tally.with_optimum += best is not None
    for algorithm in runs():
        if algorithm in GA_VARIANTS or algorithm == MERGED:
            continue  # across memories the GA has no exact probes, and no blocks are merged
        try:
            plan = _solve(problem, algorithm, seed)
        except InputError as exc:
            if ALGORITHMS[algorithm].capabilities.memories:
                tally.crashes += 1
                fail("crash", algorithm, f"refused: {exc}")
            continue
        except DoesNotFit:
            # the search found no plan that fits and claims no proof (docs/memories.md): where the
            # brute force has one, a heuristic missed it, counted apart
            tally.no_fit += 1
            tally.missed_fit += best is not None
            continue
        except Exception as exc:  # any other exception is a finding here
            tally.crashes += 1
            fail("crash", algorithm, f"{type(exc).__name__}: {exc}")
            continue
        if not ALGORITHMS[algorithm].capabilities.memories:
            tally.crashes += 1
            fail("crash", algorithm, "planned across memories, which it does not do")
            continue
        tally.plans += 1
        tally.memory_plans += 1
        found = memory_plan_findings(reading, memory_placement(plan), plan.cost, plan.cost_lower_bound,
                                     plan.optimal, best)  # fmt: skip
        _count(found, tally, lambda what, detail, a=algorithm: fail(what, a, detail))


# --- Running a seed range --------------------------------------------------------------------------


def run_chunk(seeds: range, deadline: float | None = None) -> Tally:
    """Check the seeds in order; stop early (between seeds) at ``deadline`` (``time.time()``)."""
    tally = Tally()
    for seed in seeds:
        if deadline is not None and time.time() > deadline:
            break
        check_case(seed, tally)
    return tally


def _chunk_job(job: tuple[int, int, float | None]) -> tuple[int, int, Tally]:
    start, stop, deadline = job
    tally = run_chunk(range(start, stop), deadline)
    return start, start + tally.problems, tally


def run(
    first: int, last: int, processes: int = 1, minutes: float | None = None, chunk: int = 200
) -> tuple[Tally, int]:
    """Check seeds ``first`` to ``last - 1``; returns the tally and the end of the contiguous range checked.

    With a time limit the seeds checked form one range from ``first`` (later
    chunks than the first unfinished one are dropped from the counts), so a
    run is reproduced by its seed range.
    """
    deadline = None if minutes is None else time.time() + 60 * minutes
    jobs = [(s, min(s + chunk, last), deadline) for s in range(first, last, chunk)]
    done: dict[int, tuple[int, Tally]] = {}
    if processes > 1:
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            for start, stop, tally in pool.imap_unordered(_chunk_job, jobs):
                done[start] = (stop, tally)
    else:
        for job in jobs:
            start, stop, tally = _chunk_job(job)
            done[start] = (stop, tally)
    total, reached = Tally(), first
    for start, stop, _ in jobs:  # keep the chunks up to the first unfinished one
        end, tally = done[start]
        total.add(tally)
        reached = end
        if end < stop:
            break
    return total, reached


def _seeds(text: str) -> tuple[int, int]:
    first, _, last = text.partition(":")
    if not first.isdigit() or not last.isdigit() or int(last) <= int(first):
        raise argparse.ArgumentTypeError("seeds are FIRST:LAST with LAST > FIRST, e.g. 0:10000")
    return int(first), int(last)


def _report(tally: Tally, first: int, reached: int, seconds: float, command: str, write: bool) -> None:
    from experiments.report import write_results

    rate = tally.plans / seconds if seconds else 0.0
    rows = [
        ("seeds (problems)", f"{first}:{reached} ({tally.problems})"),
        ("problems the library refused", tally.refused),
        ("problems with a brute-force optimum", tally.with_optimum),
        ("plans checked", tally.plans),
        ("of which across memories", tally.memory_plans),
        ("of which by the exact search alone", tally.exact_plans),
        ("of which by the exact search, blocks of one lifetime merged", tally.merged_plans),
        ("of which above the brute-force optimum (merging lost it)", tally.merged_missed),
        ("of which with a searched operator order", tally.scheduled_plans),
        ("answers 'does not fit' (memories)", tally.no_fit),
        ("of which the brute force fits (heuristics)", tally.missed_fit),
        ("invalid plans", tally.invalid),
        ("false optimality claims", tally.false_optimal),
        ("plans below the optimum", tally.below_optimum),
        ("lower bounds above the optimum", tally.bound_above_optimum),
        ("exact search short of the optimum", tally.exact_missed),
        ("crashes", tally.crashes),
        ("seconds", f"{seconds:.0f}"),
        ("plans per second", f"{rate:.1f}"),
    ]
    summary = (
        f"**{tally.plans} plans checked, {tally.invalid} invalid, "
        f"{tally.false_optimal} false optimality claims** (seeds {first}:{reached})."
    )
    print(summary)
    for name, value in rows:
        print(f"  {name}: {value}")
    for failure in tally.failures:
        print(
            f"FAILED seed {failure['seed']}: {failure['what']} ({failure['algorithm']}): {failure['detail']}"
        )
        print(json.dumps(failure["case"]))
    if write:
        notes = (
            summary + "\n\nEach seed is one small random problem, the kinds in turn: buffer lists and "
            "arrays with alignment and pinned buffers, vector-clock buffers, graphs on one or several cores "
            "with views, in-place chances, workspaces, declared inputs and outputs and pinned tensors under "
            "random rules (now and then on two units of different alignments), two models pooled one "
            "after another or at once, buffer lists and graphs across "
            "two or three memories (capacities, alignments, given or default costs, blocks pinned to a "
            "memory; now and then every memory bounded, asking whether the input fits), two graphs pooled "
            "with a shared input, two graphs pooled across one memory map, and graphs (with an `after` "
            "edge now and then) planned with a searched operator order. Every algorithm of "
            "`gaplanner.ALGORITHMS` plans it (the GA with "
            f"{GA_OPTIONS}, random search with {RANDOM_SEARCH_OPTIONS}, the exact search with "
            f"{EXACT_OPTIONS}), and so does the GA with exact probes: side by side (the default, on "
            f"two cores or more) with {BESIDE_OPTIONS}, and in turns with {HYBRID_OPTIONS}, and, where "
            "blocks share a lifetime, the exact search on the problem with each such family as one block "
            "(as `solve` plans a problem too large for it whole), its plan expanded to the original; across "
            "memories, the algorithms that plan there (the others must refuse). "
            "Each plan is checked against `experiments/oracle.py`, written from docs/rules.md and "
            "docs/memories.md: every rule, and across memories each memory's capacity, alignment and "
            "peak, the pins and the access cost recomputed. Where at most "
            f"{MAX_BRUTE_FORCE_BLOCKS} blocks are free it is also checked against the brute-force optimum "
            "(first-fit over every order, for every legal set of in-place writes): no peak below it, no "
            "lower bound above it, `optimal` only at it, and the exact search at it where no in-place "
            f"write is to choose; across memories, where at most {MAX_MEMORY_ASSIGNMENTS} assignments of "
            "blocks to memories exist, against the least cost of any plan that fits; a 'does not fit' "
            "answer claims no proof, so one where the brute force fits is counted apart, not as a "
            "failure. A searched order's plan is checked by `experiments/schedule_campaign.py`: the "
            "schedule keeps every dependency, the offsets keep the rules for the document run in that "
            "order, and against the best brute-force optimum over every order: no peak below it, no "
            "order-free bound above it, `optimal` only at it. The earlier six-kind "
            "campaign's totals are in this file's git history."
        )
        path = write_results(
            "campaign", "Planner-vs-oracle campaign", ("count", "value"), rows, command, notes
        )
        print(f"wrote {path}")


def show(seed: int) -> None:
    """Print one seed's problem document and the oracle's optimum."""
    case = make_case(seed)
    print(json.dumps(case, indent=1))
    if case["kind"] == "schedule":
        print("brute-force optimum over every order:", best_over_orders(case["document"], case["rules"]))
        return
    reading = read(case)
    if isinstance(reading, oracle.MemoryReading):
        if not reading.reading.chances and oracle.memory_choices(reading) <= MAX_MEMORY_ASSIGNMENTS:
            print("brute-force least cost:", oracle.memory_optimum(reading))
    elif oracle.free_blocks(reading) <= MAX_BRUTE_FORCE_BLOCKS:
        print("brute-force optimum:", oracle.optimum(reading)[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.campaign", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seeds", type=_seeds, default=(0, 1000), help="FIRST:LAST, one problem per seed")
    parser.add_argument("--processes", type=int, default=1, help="worker processes")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long (between seeds)")
    parser.add_argument("--write", action="store_true", help="write docs/results/campaign.md")
    parser.add_argument("--show", type=int, default=None, help="print one seed's problem and stop")
    args = parser.parse_args(argv)
    if args.show is not None:
        show(args.show)
        return 0
    first, last = args.seeds
    started = time.perf_counter()
    tally, reached = run(first, last, args.processes, args.minutes)
    seconds = time.perf_counter() - started
    command = f"python -m experiments.campaign --seeds {first}:{reached} --processes {args.processes} --write"
    _report(tally, first, reached, seconds, command, args.write)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
