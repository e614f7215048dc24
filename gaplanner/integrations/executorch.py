"""gaplanner as ExecuTorch's memory planner.

ExecuTorch's ``MemoryPlanningPass`` hands its tensor specs to the algorithms
of a ``MemoryPlanningAlgorithmSuite`` and keeps the smallest result. Passing
:func:`plan_memory` there plans the program with gaplanner::

    MemoryPlanningPass(memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[plan_memory]))

Settings go through ``functools.partial(plan_memory, time_limit=1.0)``.

What ExecuTorch decides, gaplanner keeps: which tensors share storage (a view
or an in-place result is the same spec; a spec with a ``storage_base`` lives
inside that base at its ``storage_base_offset``), each spec's lifetime
(inclusive node indices, graph inputs from the first node, outputs and mutable
buffers to the last), its size (``allocated_memory`` after aligning to the
pass's alignment) and its memory id. Each memory id is its own arena, planned
as its own problem. A spec that already carries a ``mem_offset`` stays there
(pinned); the space a control-flow submodule reserves at the bottom of an
arena (``input_mem_buffer_sizes``) is pinned the same way; ``extra_padding`` is
added to every arena, as ExecuTorch's greedy does.

Every arena is planned by the genetic search within the time left of the
program's budget (stopping at the lower bound; the first call in a fresh
install first compiles the search's kernels, once), and ExecuTorch's own greedy
plan of the same specs is verified and kept instead when it is smaller, so the
result is never larger than the greedy's. Needs ``executorch``
(``pip install 'gaplanner[executorch]'``), imported at the first call.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaplanner.errors import InputError
from gaplanner.plans.plan import Plan, make_plan
from gaplanner.problem.problem import Problem, problem_from_arrays
from gaplanner.search.ga import GASettings
from gaplanner.solve import solve

#: The whole program's planning budget, in seconds, unless the caller gives one.
DEFAULT_TIME_LIMIT = 3.0
#: Generations without improvement after which an arena's search stops before its time is up.
STALL_GENERATIONS = 300
#: The name under which ExecuTorch's greedy plan is reported.
GREEDY = "executorch-greedy"


@dataclass(frozen=True)
class ArenaReport:
    """How one memory id was planned: the arena sizes and the time each planner took."""

    mem_id: int
    blocks: int
    lower_bound: int  # bytes, padding included
    size: int  # the arena kept, padding included
    algorithm: str  # "ga" or GREEDY
    greedy_size: int | None  # None when the greedy could not plan this arena (pinned specs)
    gaplanner_size: int | None  # None when the arena has no block to plan
    gaplanner_seconds: float
    greedy_seconds: float  # the greedy's time for the whole program (every memory id at once)


@dataclass
class ProgramPlan:
    """The allocation of every spec of one program, and a report per memory id."""

    offsets: dict[Any, tuple[int, int, int]]  # spec -> (mem_id, mem_obj_id, mem_offset)
    bufsizes: list[int]
    arenas: list[ArenaReport] = field(default_factory=list)


def _memory_planning() -> Any:
    try:
        from executorch.exir import memory_planning
    except ImportError:
        raise InputError(
            "planning ExecuTorch programs needs executorch: pip install 'gaplanner[executorch]'",
            "executorch",
        ) from None
    return memory_planning


def plan_memory(
    alignment: int,
    specs: Iterable[Any],
    graph_module: Any,
    graph_signature: Any,
    extra_padding: int = 0,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    seed: int = 0,
    keep_greedy: bool = True,
) -> Any:
    """Plan ExecuTorch tensor specs with gaplanner; a ``MemoryAlgoResult`` for the algorithm suite.

    The arguments are the suite's. ``time_limit`` bounds the whole program's
    search (seconds), ``seed`` makes it repeatable (a search that stops at the
    lower bound or its stall limit returns the same plan for the same seed),
    ``keep_greedy=False`` returns gaplanner's plan even where ExecuTorch's
    greedy one is smaller. The specs are not modified beyond the realignment
    ExecuTorch's own algorithms do.
    """
    program = plan_specs(
        alignment,
        specs,
        graph_module,
        graph_signature,
        extra_padding,
        time_limit=time_limit,
        seed=seed,
        keep_greedy=keep_greedy,
    )
    return algo_result(program)


def algo_result(program: ProgramPlan) -> Any:
    """A program's allocation as the ``MemoryAlgoResult`` ExecuTorch's algorithm suite takes."""
    mp = _memory_planning()
    result = mp.MemoryAlgoResult({}, list(program.bufsizes))
    for spec, (mem_id, obj_id, offset) in program.offsets.items():
        result.spec_dict[spec] = mp.SpecAllocResult(mem_id, obj_id, offset)
    return result


def plan_specs(
    alignment: int,
    specs: Iterable[Any],
    graph_module: Any,
    graph_signature: Any,
    extra_padding: int = 0,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    seed: int = 0,
    keep_greedy: bool = True,
) -> ProgramPlan:
    """:func:`plan_memory`'s work, with a report per memory id (what the benchmark prints)."""
    mp = _memory_planning()
    _check_settings(alignment, extra_padding, time_limit)
    specs = list(specs)
    for spec in specs:
        spec.realign(alignment)  # what ExecuTorch's algorithms do first: allocated_memory follows it
    # Read once: ExecuTorch computes allocated_memory from the shape on every read.
    sizes = {spec: int(spec.allocated_memory) for spec in specs}
    deadline = time.perf_counter() + time_limit
    greedy, greedy_seconds = (
        _run_greedy(mp, alignment, specs, graph_module, graph_signature, extra_padding)
        if keep_greedy
        else (None, 0.0)
    )
    names = _spec_names(graph_module)
    arenas = _group_by_mem_id(specs, names)
    reserved = list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
    program = ProgramPlan({}, [0] * (max(arenas, default=1) + 1))
    for k, mem_id in enumerate(sorted(arenas)):
        budget = max(1e-3, (deadline - time.perf_counter()) / (len(arenas) - k))
        reserve = reserved[mem_id] if mem_id < len(reserved) else 0
        arena = _Arena(mem_id, arenas[mem_id], names, sizes, alignment, reserve, extra_padding)
        report = arena.plan(budget, seed, greedy, greedy_seconds)
        program.offsets.update(arena.allocation)
        program.bufsizes[mem_id] = report.size
        program.arenas.append(report)
    return program


def _check_settings(alignment: int, extra_padding: int, time_limit: float) -> None:
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1:
        raise InputError(f"must be a positive integer, got {alignment!r}", "alignment")
    if isinstance(extra_padding, bool) or not isinstance(extra_padding, int) or extra_padding < 0:
        raise InputError(f"must be a non-negative integer, got {extra_padding!r}", "extra_padding")
    if not (isinstance(time_limit, int | float) and 0 < time_limit < float("inf")):
        raise InputError(f"must be a positive number of seconds, got {time_limit!r}", "time_limit")


def _run_greedy(
    mp: Any, alignment: int, specs: list[Any], graph_module: Any, graph_signature: Any, extra_padding: int
) -> tuple[Any | None, float]:
    """ExecuTorch's greedy plan of the same specs, or None when it cannot plan them."""
    started = time.perf_counter()
    try:
        result = mp.greedy(alignment, specs, graph_module, graph_signature, extra_padding)
    except (mp.InternalError, AssertionError):
        return None, time.perf_counter() - started  # gaplanner's plan still stands on its own
    return result, time.perf_counter() - started


def _spec_names(graph_module: Any) -> dict[Any, str]:
    """A readable name per spec: the first graph node that carries it."""
    from executorch.exir.memory_planning import get_node_tensor_specs

    names: dict[Any, str] = {}
    for node in graph_module.graph.nodes:
        for k, spec in enumerate(get_node_tensor_specs(node)):
            names.setdefault(spec, node.name if k == 0 else f"{node.name}[{k}]")
    return names


def _root(spec: Any, names: dict[Any, str]) -> tuple[Any, int]:
    """The spec owning ``spec``'s storage and ``spec``'s byte offset inside it."""
    seen, offset = {spec}, 0
    while spec.storage_base is not None:
        offset += spec.storage_base_offset
        spec = spec.storage_base
        if spec in seen:
            raise InputError(f"tensor {names.get(spec, spec)!r} is its own storage base", "storage_base")
        seen.add(spec)
    return spec, offset


def _group_by_mem_id(specs: list[Any], names: dict[Any, str]) -> dict[int, list[Any]]:
    """Specs per memory id: a storage-backed spec goes with its base's (ExecuTorch's rule)."""
    given = set(specs)
    arenas: dict[int, list[Any]] = defaultdict(list)
    for spec in specs:
        root, _ = _root(spec, names)
        if root not in given:
            raise InputError(
                f"tensor {names.get(spec, spec)!r} lives inside {names.get(root, root)!r}, "
                "which is not among the specs to plan",
                "storage_base",
            )
        arenas[1 if root.mem_id is None else int(root.mem_id)].append(spec)
    return dict(arenas)


class _Arena:
    """One memory id's specs as a gaplanner problem, and the allocation chosen for them."""

    def __init__(
        self,
        mem_id: int,
        specs: list[Any],
        names: dict[Any, str],
        sizes: dict[Any, int],
        alignment: int,
        reserve: int,
        padding: int,
    ) -> None:
        self.mem_id, self.specs, self.names, self.size = mem_id, specs, names, sizes
        self.alignment, self.reserve, self.padding = alignment, reserve, padding
        self.roots = [s for s in specs if s.storage_base is None and sizes[s] > 0]
        self.allocation: dict[Any, tuple[int, int, int]] = {}

    def _name(self, spec: Any) -> str:
        return self.names.get(spec, f"spec {self.specs.index(spec)}")

    def problem(self) -> Problem | None:
        """The roots as blocks; the submodules' reserved space as a block pinned at 0 for all time."""
        if not self.roots:
            return None
        ids, sizes, lower, upper, offsets = [], [], [], [], []
        taken: set[str] = set()
        for spec in self.roots:
            start, end = spec.lifetime
            if start is None or end is None or end < start:
                raise InputError(f"tensor {self._name(spec)!r} has no lifetime {spec.lifetime}", "lifetime")
            pinned = -1 if spec.mem_offset is None else int(spec.mem_offset)
            ids.append(_unique(self._name(spec), taken))
            sizes.append(self.size[spec])
            lower.append(start)
            upper.append(end + 1)  # ExecuTorch's lifetimes include their last node
            offsets.append(pinned)
        if self.reserve > 0:
            ids.append(_unique("submodules' reserved space", taken))
            sizes.append(self.reserve)
            lower.append(min(lower))
            upper.append(max(upper))
            offsets.append(0)
        self._check_pins(ids, offsets)
        return problem_from_arrays(
            np.array(sizes, np.int64),
            np.array(lower, np.int64),
            np.array(upper, np.int64),
            ids=tuple(ids),
            alignment=self.alignment,
            name=f"memory id {self.mem_id}",
            offsets=np.array(offsets, np.int64),
        )

    def _check_pins(self, ids: list[str], offsets: list[int]) -> None:
        for name, offset in zip(ids, offsets, strict=True):
            if offset >= 0 and offset % self.alignment:
                raise InputError(
                    f"tensor {name!r} is pinned at offset {offset}, not a multiple of the alignment "
                    f"{self.alignment}",
                    "mem_offset",
                )

    def plan(self, budget: float, seed: int, greedy: Any | None, greedy_seconds: float) -> ArenaReport:
        """Plan with the GA, keep the greedy plan when it is smaller; fill :attr:`allocation`."""
        started = time.perf_counter()
        problem = self.problem()
        plans: list[Plan] = []
        if problem is not None:
            # The budget is a stop request, not the search's time limit: a time limit sizes the
            # population from a measured decode time, and the plan would depend on the clock.
            settings = GASettings(time_limit=None, seed=seed, stall_generations=STALL_GENERATIONS)
            deadline = started + budget
            plans.append(solve(problem, "ga", settings, should_stop=lambda: time.perf_counter() >= deadline))
        seconds = time.perf_counter() - started
        greedy_plan = self._greedy_plan(problem, greedy)
        if greedy_plan is not None:
            plans.append(greedy_plan)
        best = min(plans, key=lambda plan: plan.peak) if plans else None
        self._allocate(problem, best)
        ours = plans[0].peak if problem is not None else None
        bound = problem.lower_bound if problem is not None else self.reserve
        return ArenaReport(
            mem_id=self.mem_id,
            blocks=len(self.roots),
            lower_bound=bound + self.padding,
            size=(best.peak if best is not None else self.reserve) + self.padding,
            algorithm=best.algorithm if best is not None else "ga",
            greedy_size=None if greedy_plan is None else greedy_plan.peak + self.padding,
            gaplanner_size=None if ours is None else ours + self.padding,
            gaplanner_seconds=seconds,
            greedy_seconds=greedy_seconds,
        )

    def _greedy_plan(self, problem: Problem | None, greedy: Any | None) -> Plan | None:
        """ExecuTorch's greedy offsets of the roots as a verified plan (None where it ignored pins)."""
        if problem is None or greedy is None or any(s.mem_offset is not None for s in self.roots):
            return None
        offsets = [greedy.spec_dict[spec].mem_offset for spec in self.roots]
        if self.reserve > 0:
            offsets.append(0)
        return make_plan(problem, np.array(offsets, np.int64), GREEDY, time.perf_counter())

    def _allocate(self, problem: Problem | None, plan: Plan | None) -> None:
        """Every spec's (mem_id, mem_obj_id, offset): roots from the plan, the others inside their base."""
        placed: dict[Any, int] = {}
        if plan is not None:
            placed = {spec: int(plan.offsets[i]) for i, spec in enumerate(self.roots)}
        for spec in self.specs:
            if spec in placed:
                continue
            root, inside = _root(spec, self.names)
            if self.size[root] == 0 and root not in placed:
                placed[root] = self.reserve
            if spec is not root:
                self._check_inside(spec, root, inside)
            placed[spec] = placed[root] + inside
            if placed[spec] % spec.alignment:
                raise InputError(
                    f"tensor {self._name(spec)!r} would start at {placed[spec]} inside "
                    f"{self._name(root)!r}, not a multiple of its alignment {spec.alignment}",
                    "storage_base_offset",
                )
        self._check_siblings(placed)
        objects = _storage_objects(self.specs, placed, self.size)
        self.allocation = {spec: (self.mem_id, objects[spec], placed[spec]) for spec in self.specs}

    def _check_siblings(self, placed: dict[Any, int]) -> None:
        """Refuse two storage-backed specs live at once on common bytes, neither inside the other.

        ExecuTorch sets where such a spec lies, so no plan can separate them.
        """
        size = self.size
        backed = [s for s in self.specs if s.storage_base is not None and size[s] > 0]
        for i, a in enumerate(backed):
            for b in backed[i + 1 :]:
                if _related(a, b) or not _live_at_once(a, b):
                    continue
                if placed[a] < placed[b] + size[b] and placed[b] < placed[a] + size[a]:
                    raise InputError(
                        f"tensors {self._name(a)!r} and {self._name(b)!r} are live at once and their "
                        "storage bases put them on common bytes",
                        "storage_base_offset",
                    )

    def _check_inside(self, spec: Any, root: Any, inside: int) -> None:
        if inside < 0 or inside + self.size[spec] > self.size[root]:
            raise InputError(
                f"tensor {self._name(spec)!r} ({self.size[spec]} bytes at {inside}) does not fit "
                f"inside its storage base {self._name(root)!r} ({self.size[root]} bytes)",
                "storage_base_offset",
            )


def _related(a: Any, b: Any) -> bool:
    """One spec lives inside the other's storage (through any chain of storage bases)."""
    for inner, outer in ((a, b), (b, a)):
        spec = inner
        while spec.storage_base is not None:
            spec = spec.storage_base
            if spec is outer:
                return True
    return False


def _live_at_once(a: Any, b: Any) -> bool:
    return a.lifetime[0] <= b.lifetime[1] and b.lifetime[0] <= a.lifetime[1]


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name#k`` for the least ``k`` not ``taken`` yet; added to ``taken``."""
    k, unique = 0, name
    while unique in taken:
        k += 1
        unique = f"{name}#{k}"
    taken.add(unique)
    return unique


def _storage_objects(specs: list[Any], offsets: dict[Any, int], sizes: dict[Any, int]) -> dict[Any, int]:
    """A ``mem_obj_id`` per spec: specs whose bytes overlap, directly or through others, share one.

    ExecuTorch's verifier requires equal ids of any two specs with overlapping
    storage; the connected runs of overlapping address ranges are the finest
    such grouping.
    """
    sized = sorted((s for s in specs if sizes[s] > 0), key=lambda s: offsets[s])
    objects: dict[Any, int] = {}
    current, top = -1, -1
    for spec in sized:
        if offsets[spec] >= top:
            current += 1
        objects[spec] = current
        top = max(top, offsets[spec] + sizes[spec])
    for spec in specs:
        if sizes[spec] == 0:  # an empty range overlaps nothing
            current += 1
            objects[spec] = current
    return objects
