"""Plans: verified offsets plus what a user wants to know about them.

:func:`make_plan` is the only way the library builds a :class:`Plan`, and it
verifies the offsets first: a plan that leaves the library is a valid plan.
A plan across memories is a :class:`Plan` whose blocks carry a memory
(``memory_of``), with each memory's peak and the access cost beside the offsets.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gaplanner.errors import PlanError
from gaplanner.plans.tensor_check import check_tensor_plan
from gaplanner.plans.verify import find_memory_violation, verify
from gaplanner.problem.clocks import format_clock
from gaplanner.problem.problem import Problem, TensorMap

if TYPE_CHECKING:
    from gaplanner.schedule.choose import ScheduleResult


@dataclass(frozen=True)
class GenerationRecord:
    """One line of a search's convergence trace (a generation of the GA, a batch of random search).

    Across memories ``best_cost`` is the least access cost found (None until
    some order places every block) and ``best_peak`` that plan's bytes used,
    summed over the memories; one arena has no cost (None).
    """

    generation: int
    best_peak: int
    mean_peak: float
    evaluations: int
    elapsed: float
    best_cost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON data (one arena's records have no ``best_cost`` key)."""
        data = asdict(self)
        if self.best_cost is None:
            del data["best_cost"]
        return data


@dataclass(frozen=True)
class SearchStats:
    """What a search did: its generations (random search: batches), evaluations and settings."""

    generations: int
    evaluations: int
    seed: int
    population: int | None = None


@dataclass(frozen=True)
class RayStats:
    """How a search ran on Ray: its islands, worker processes, start-up time and worker restarts."""

    islands: int
    workers: int
    startup_seconds: float
    restarts: int


@dataclass(frozen=True, eq=False)
class Plan:
    """A verified placement of every block of a problem.

    ``lower_bound`` is the best bound known, the problem's own or a higher one
    a search proved; ``bound_origin`` says where it comes from (``max load``,
    ``clique``, or the search's name for it). ``trace``, ``stop_reason`` and
    ``search`` are set by the searches, ``ray`` by a search that ran on Ray.

    Across memories (a problem with ``memories``) ``memory_of`` holds each
    block's memory (an index into ``problem.memories``), ``offsets`` are within
    that memory, ``peaks`` holds each memory's highest byte used and ``peak``
    their sum (``lower_bound`` bounds that sum too: the bytes live at once are
    held somewhere), and ``cost`` is the access cost; the search minimises the
    cost first, so there ``optimal`` means the cost meets ``cost_lower_bound``.
    All three are None for one arena.
    """

    algorithm: str
    problem: Problem
    offsets: np.ndarray
    peak: int
    elapsed: float
    lower_bound: int
    bound_origin: str
    stop_reason: str | None = None
    trace: tuple[GenerationRecord, ...] = ()
    search: SearchStats | None = None
    ray: RayStats | None = None
    decode_seconds: float | None = None
    #: the operators in the order the plan is for, when the order was searched (or given)
    schedule: tuple[str, ...] | None = None
    #: with a searched order: the given, chosen and order-free bounds
    certificate: ScheduleResult | None = None
    memory_of: np.ndarray | None = None
    peaks: np.ndarray | None = None
    cost: float | None = None

    @property
    def ratio(self) -> float:
        return self.peak / self.lower_bound if self.lower_bound else 1.0

    @property
    def cost_lower_bound(self) -> float | None:
        """Across memories, no plan costs less: every block in the cheapest memory it may use."""
        memories = self.problem.memories
        return None if self.cost is None or memories is None else memories.cost_lower_bound()

    @property
    def optimal(self) -> bool:
        """Proven optimal: the peak meets the lower bound (searched order: the bound over all orders;
        across memories: the cost meets its bound)."""
        if self.cost is not None:
            return self.cost <= self.cost_lower_bound  # type: ignore[operator]
        if self.certificate is not None:
            return self.peak <= self.certificate.order_free_bound
        return self.peak <= self.lower_bound

    def _memory_names(self) -> list[str] | None:
        """Each block's memory by name (None for one arena)."""
        if self.memory_of is None or self.problem.memories is None:
            return None
        names = self.problem.memories.ids
        return [names[m] for m in self.memory_of]

    def memory_summary(self) -> list[dict[str, Any]]:
        """Each memory with its capacity, peak, costs and how many blocks it holds (none: one arena)."""
        system = self.problem.memories
        if system is None or self.memory_of is None or self.peaks is None:
            return []
        counts = np.bincount(self.memory_of, minlength=len(system.memories))
        return [
            {
                "id": m.id,
                "capacity": m.capacity,
                "peak": int(self.peaks[i]),
                "blocks": int(counts[i]),
                "read_cost": m.read_cost,
                "write_cost": m.write_cost,
            }
            for i, m in enumerate(system.memories)
        ]

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON data (the CLI's and the service's output).

        Across memories each block and tensor also has its ``memory``, and the
        plan its ``cost``, ``cost_lower_bound`` and ``memories`` (each one's peak).
        """
        problem, names = self.problem, self._memory_names()
        blocks = [
            {"id": bid, "offset": int(off), "size": int(size)}
            for bid, off, size in zip(problem.ids, self.offsets, problem.sizes, strict=True)
        ]
        if names is not None:
            blocks = [
                {"id": row["id"], "memory": name, **row} for row, name in zip(blocks, names, strict=True)
            ]
        return {
            "name": problem.name,
            "algorithm": self.algorithm,
            "peak": self.peak,
            "lower_bound": self.lower_bound,
            "ratio": round(self.ratio, 6),
            "optimal": self.optimal,
            **self._memory_dict(),
            "elapsed_seconds": round(self.elapsed, 6),
            "blocks": blocks,
            **({"tensors": self.tensor_rows()} if problem.tensors is not None else {}),
            **({"schedule": list(self.schedule)} if self.schedule is not None else {}),
            **({"certificate": self.certificate.to_dict()} if self.certificate is not None else {}),
            **self._search_dict(),
        }

    def _memory_dict(self) -> dict[str, Any]:
        """Across memories: the cost, its bound and each memory's use (one arena: nothing)."""
        if self.cost is None:
            return {}
        return {
            "cost": self.cost,
            "cost_lower_bound": self.cost_lower_bound,
            "memories": self.memory_summary(),
        }

    def tensor_offsets(self) -> dict[str, int]:
        """Every tensor's offset: its block's (a graph's views and in-place outputs share one)."""
        tensors = self.problem.tensors
        if tensors is None:
            return {bid: int(off) for bid, off in zip(self.problem.ids, self.offsets, strict=True)}
        return {tid: int(self.offsets[b]) for tid, b in zip(tensors.ids, tensors.block_of, strict=True)}

    def tensor_memories(self) -> dict[str, str] | None:
        """Every tensor's memory by name, its block's (None for one arena)."""
        names, tensors = self._memory_names(), self.problem.tensors
        if names is None:
            return None
        if tensors is None:
            return dict(zip(self.problem.ids, names, strict=True))
        return {tid: names[b] for tid, b in zip(tensors.ids, tensors.block_of, strict=True)}

    def tensor_rows(self) -> list[dict[str, Any]]:
        """Each tensor of the document with its offset (and memory), its size and the tensor whose bytes
        it shares."""
        tensors, ids, names = self.problem.tensors, self.problem.ids, self._memory_names()
        assert tensors is not None
        rows = []
        for tid, size, b in zip(tensors.ids, tensors.sizes, tensors.block_of, strict=True):
            row: dict[str, Any] = {"id": tid}
            if names is not None:
                row["memory"] = names[b]
            row |= {"offset": int(self.offsets[b]), "size": int(size)}
            if ids[b] != tid:
                row["shares_with"] = ids[b]
            rows.append(row | tensors.device_fields(len(rows)))
        return rows

    def _search_dict(self) -> dict[str, Any]:
        """The search's fields, under the keys the JSON output has always used."""
        data: dict[str, Any] = {"bound_origin": self.bound_origin}
        if self.decode_seconds is not None:
            data["decode_seconds"] = round(self.decode_seconds, 6)
        if self.search is not None:
            data.update(generations=self.search.generations, evaluations=self.search.evaluations)
        if self.stop_reason is not None:
            data["stop_reason"] = self.stop_reason
        if self.search is not None:
            data["seed"] = self.search.seed
            if self.search.population is not None:
                data["population"] = self.search.population
        if self.ray is not None:
            data.update(ray=True, **asdict(self.ray))
        if self.search is not None or self.trace:
            data["trace"] = [record.to_dict() for record in self.trace]
        return data

    def to_csv(self) -> str:
        """MiniMalloc's CSV with an ``offset`` column (``id,lower,upper,size,offset``).

        A graph's plan has a row per tensor and a ``shares_with`` column naming
        the tensor whose bytes a view or an in-place output shares. Across
        memories a ``memory`` column comes before ``offset``.
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        p, tensors, names = self.problem, self.problem.tensors, self._memory_names()
        memory = ["memory"] if names is not None else []
        if tensors is None:
            writer.writerow(["id", "lower", "upper", "size", *memory, "offset"])
            for i in range(p.n):
                lifetime = [p.lower[i], p.upper[i]]
                if p.clocks is not None:  # omnimalloc's vector clocks, a:b:c
                    lifetime = [format_clock(p.clocks.lower[i]), format_clock(p.clocks.upper[i])]
                where = [names[i]] if names is not None else []
                writer.writerow([p.ids[i], *lifetime, p.sizes[i], *where, self.offsets[i]])
            return out.getvalue()
        extra = device_columns(tensors)
        steps = self._schedule_cells(len(tensors.ids))
        writer.writerow(
            ["id", "lower", "upper", "size", *memory, "offset", "shares_with", *extra, *steps[:1]]
        )
        for t, row in enumerate(self.tensor_rows()):
            lifetime = [tensors.lower[t], tensors.upper[t]]
            where = [row["memory"]] if names is not None else []
            cells = [row["id"], *lifetime, row["size"], *where, row["offset"], row.get("shares_with", "")]
            writer.writerow(cells + device_cells(row, extra) + steps[1 + t : 2 + t])
        return out.getvalue()

    def _schedule_cells(self, rows: int) -> list[str]:
        """The ``schedule`` column: row ``i`` names the ``i``-th operator run; the last row every one left.

        Empty (no column) when the plan carries no schedule.
        """
        if self.schedule is None:
            return []
        order = list(self.schedule)
        cells = [*order[: rows - 1], " ".join(order[rows - 1 :])]
        return ["schedule", *cells, *[""] * (rows - len(cells))]


def device_columns(tensors: TensorMap) -> list[str]:
    """A graph with devices: the CSV's extra columns (each tensor's devices, its alignment)."""
    return ["devices", "alignment"] if tensors.devices is not None else []


def device_cells(row: dict[str, Any], columns: list[str]) -> list[Any]:
    """A tensor row's cells under :func:`device_columns` (devices separated by spaces)."""
    return [" ".join(row[c]) if c == "devices" else row[c] for c in columns]


def make_plan(
    problem: Problem,
    offsets: np.ndarray,
    algorithm: str,
    started: float,
    *,
    memory_of: np.ndarray | None = None,
    stop_reason: str | None = None,
    trace: Sequence[GenerationRecord] = (),
    search: SearchStats | None = None,
    ray: RayStats | None = None,
    decode_seconds: float | None = None,
    proved_bound: int | None = None,
    bound_origin: str | None = None,
    verified_by: Plan | None = None,
) -> Plan:
    """Verify ``offsets`` and wrap them in a :class:`Plan` (``started``: a perf_counter time).

    ``memory_of``: each block's memory, for a problem with memories (refused
    without them); each memory is then checked on its own. Without it the
    blocks share one arena, memories aside.
    ``proved_bound`` / ``bound_origin``: a lower bound the search proved (for
    example an exact search that exhausted every smaller arena) and its name.
    ``verified_by``: a plan of this problem already made from these offsets (a search passing on
    another's plan): they are not verified twice.
    """
    offsets = np.asarray(offsets, np.int64)
    again = verified_by is None or verified_by.problem is not problem or memory_of is not None
    again = again or not np.array_equal(verified_by.offsets, offsets)  # type: ignore[union-attr]
    placed = _check(problem, offsets, memory_of) if again else _Placed(int((offsets + problem.sizes).max()))
    lower_bound, origin = problem.lower_bound, "max load" if problem.interval_conflicts else "clique"
    if proved_bound is not None and proved_bound > lower_bound:
        lower_bound, origin = proved_bound, bound_origin or "search"
    plan = Plan(
        algorithm,
        problem,
        offsets,
        placed.peak,
        0.0,
        lower_bound,
        origin,
        stop_reason=stop_reason,
        trace=tuple(trace),
        search=search,
        ray=ray,
        decode_seconds=decode_seconds,
        memory_of=placed.memory_of,
        peaks=placed.peaks,
        cost=placed.cost,
    )
    if again and problem.document is not None:
        at, where = plan.tensor_offsets(), plan.tensor_memories()
        peak = placed.peak if where is None else None
        violation = check_tensor_plan(problem.document, problem.rules, at, peak, memories=where)
        if violation is not None:
            raise PlanError(f"the plan breaks the model's rules: {violation}")
    return replace(plan, elapsed=time.perf_counter() - started)


@dataclass(frozen=True)
class _Placed:
    """What verifying a placement measures: the peak; across memories each one's peak and the cost."""

    peak: int
    memory_of: np.ndarray | None = None
    peaks: np.ndarray | None = None
    cost: float | None = None


def _check(problem: Problem, offsets: np.ndarray, memory_of: np.ndarray | None) -> _Placed:
    """Verify the blocks' placement (:mod:`gaplanner.plans.verify`); raise :class:`PlanError` if broken.

    Without ``memory_of`` the blocks share one arena (a problem's memories, if
    any, aside); with it each memory is checked on its own.
    """
    system = problem.memories
    if memory_of is None:
        peak = int((offsets + problem.sizes).max())
        verify(problem, offsets, peak)
        return _Placed(peak)
    if system is None:
        raise PlanError("the plan places blocks in memories the problem does not list")
    memory_of = np.asarray(memory_of, np.int64)
    violation = find_memory_violation(problem, memory_of, offsets)
    if violation is not None:
        raise PlanError(f"the plan breaks a rule: {violation}")
    peaks = np.zeros(len(system.memories), np.int64)
    np.maximum.at(peaks, memory_of, offsets + problem.sizes)
    return _Placed(int(peaks.sum()), memory_of, peaks, system.cost(memory_of))
