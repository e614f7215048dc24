"""Exact probes part by part (:class:`PartsSearch`); drawn targets on other cores and the strands run side
by side are in :mod:`gaplanner.search.exact.strands`. See :mod:`gaplanner.search.exact.search` for the method.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gaplanner.problem.problem import Problem
from gaplanner.search.exact.dfs import FOUND, HEURISTICS, INFEASIBLE, PAUSED
from gaplanner.search.exact.parts import MAX_SECTION_MEMBERS, Part, components, make_part, section_members
from gaplanner.search.exact.probes import Probe, RestartingProbe

#: Called with each event of a search: its best peak or its bound changed.
OnEvent = Callable[[dict[str, float | int]], None]

#: Probes at each target: one per heuristic order, searched to the end, and restarting ones (their seeds).
RESTART_SEEDS: tuple[int, ...] = (1, 2)
#: The probes at the lower bound of a conflict graph: restarting ones only. Its cliques are grown
#: greedily and small, so they prune little; a search to the end goes deep and wanders there, where
#: restarts with shuffled orders find plans (on interval lifetimes every time section is a clique,
#: pruning is strong, and the plain orders pay).
GRAPH_BOUND_SEEDS: tuple[int, ...] = (1, 2, 3, 4, 5)
#: On a large part (see :mod:`gaplanner.search.exact.parts`) a probe answers nothing before one descent
#: through
#: tens of thousands of blocks, so it gets few probes, each kept as long as it can still help: at the
#: lower bound a full one by the heaviest clique first (the blocks of the heavy sections, where the bound
#: binds, go first) and a restarting one; above it, this many restarting ones (see :func:`_large_part_keys`).
LARGE_BOUND_PROBES: tuple[str | int, ...] = ("TAW", 1)
LARGE_PART_RUNGS = 3


def _round_up(x: int, grain: int) -> int:
    return -(-x // grain) * grain


@dataclass
class PartState:
    """What is known about one part: no plan of it peaks below ``lo``; ``offsets`` peak at ``hi``."""

    part: Part
    lo: int
    hi: int
    offsets: np.ndarray
    probes: dict[tuple[int, str | int], Probe | RestartingProbe]
    seeds: int = max(RESTART_SEEDS)  # the last restarting probe's seed (new ones count on from it)


@dataclass(frozen=True)
class SearchResult:
    """The best offsets found, the lower bound proved for these blocks, and how the search ended."""

    offsets: np.ndarray
    lower_bound: int
    closed: bool  # the peak meets the proved bound
    nodes: int
    events: tuple[dict[str, float | int], ...]
    stopped: bool = False  # by the caller's request


def slice_budget(part: Part) -> int:
    """Placements per probe slice of ``part``: about :data:`SLICE_WORK` conflicts visited.

    Counted in work, not measured in seconds, so a search given the same work
    runs the same slices and finds the same plans whatever the machine's load.
    """
    degree = len(part.nbr_idx) / max(1, len(part.sizes))
    return int(min(max(SLICE_WORK // (1 + degree), 50), 1_000_000))


#: Conflicts a probe slice visits (see :func:`slice_budget`): a slice of a few milliseconds here, so
#: the clock (the time limit) and the probes' turns are looked at that often.
SLICE_WORK = 80_000
#: How often, at most, the exact search asks the caller whether to stop.
STOP_CHECK_SECONDS = 0.1
#: Parts beyond these sizes keep the incumbent's placement: a probe holds each block's conflicts and,
#: along a descent, logs about one raised floor per conflicting pair; a conflict graph's cliques are
#: grown over a matrix of them (conflicting pairs; blocks of a graph).
MAX_SEARCHED_PAIRS = 20_000_000
MAX_GRAPH_BLOCKS = 4000
#: A large interval part is searched only when the time limit leaves this much per conflicting pair:
#: building it and one descent of a probe take seconds there.
LARGE_PART_SECONDS_PER_PAIR = 1e-6


def searchable(problem: Problem, blocks: np.ndarray | None = None, seconds: float | None = None) -> bool:
    """Whether the exact search takes these blocks (default: every block) rather than keeping their plan.

    ``blocks``: a whole connected component (or every block), so their conflicts are among them;
    ``seconds``: the time limit, if any.
    """
    blocks = np.arange(problem.n) if blocks is None else blocks
    if not problem.interval_conflicts:
        return len(blocks) <= MAX_GRAPH_BLOCKS
    pairs = int(problem.conflicts.degrees()[blocks].sum()) // 2
    if pairs > MAX_SEARCHED_PAIRS:
        return False
    large = section_members(problem.lower[blocks], problem.upper[blocks]) > MAX_SECTION_MEMBERS
    return not large or seconds is None or pairs * LARGE_PART_SECONDS_PER_PAIR <= seconds


def make_probe(part: Part, target: int, kind: str | int) -> Probe | RestartingProbe:
    if isinstance(kind, str):
        return Probe(part, target, kind)
    return RestartingProbe(part, target, seed=kind)


def _targets(part: Part, lo: int, peak: int, intervals: bool = True) -> dict[int, tuple[str | int, ...]]:
    """Targets and their probes: every kind at the lower bound itself (restarting ones only on a conflict
    graph, see :data:`GRAPH_BOUND_SEEDS`; the skyline orders too on a part packed full, see
    :attr:`Part.orders`); restarting ones halfway up to the best peak known and an eighth of the way down
    from it; one per tie-break order just below that peak (any better plan: the one a probe finds often
    lies far below its target)."""
    at_bound = (*part.orders, *RESTART_SEEDS) if intervals else GRAPH_BOUND_SEEDS
    targets: dict[int, tuple[str | int, ...]] = {lo: at_bound}
    for target, kinds in (
        (lo + (peak - lo) // 2, RESTART_SEEDS),
        (peak - (peak - lo) // 8, RESTART_SEEDS),
        (peak - 1, HEURISTICS),
    ):
        if lo < target < peak:
            targets.setdefault(target, kinds)
    return targets


def _large_part_keys(state: PartState, floor: int) -> list[tuple[int, str | int]]:
    """A large part's probes: :data:`LARGE_BOUND_PROBES` at the bound, and restarting ones above it.

    Targets that follow the best peak would move with each better plan the GA
    posts, and every move would throw away probes that have not yet finished
    their first descent. So a probe above the bound stays while its target
    lies below the part's best peak, and a new one goes halfway between the
    bound and the lowest target held (or that peak) while fewer than
    :data:`LARGE_PART_RUNGS` are held, each with a seed of its own.
    """
    if state.hi <= floor:  # the part is at the bound: nothing to search
        return []
    keys: list[tuple[int, str | int]] = [(floor, kind) for kind in LARGE_BOUND_PROBES]
    above = [key for key in state.probes if floor < key[0] < state.hi]
    while len(above) < LARGE_PART_RUNGS:
        target = floor + (min((key[0] for key in above), default=state.hi) - floor) // 2
        if target <= floor:
            break
        state.seeds += 1
        above.append((target, state.seeds))
    return keys + above


def _parts(problem: Problem, seconds: float | None) -> tuple[list[Part], list[np.ndarray]]:
    """The problem's parts the exact search takes, and the blocks of those too large for it (kept)."""
    parts, kept = [], []
    for blocks in components(problem):
        if searchable(problem, blocks, seconds):
            parts.append(make_part(problem, blocks))
        else:
            kept.append(blocks)
    return parts, kept


class PartsSearch:
    """Exact probes part by part, resumable: :meth:`run` searches until a deadline and can be called
    again, going on where it stopped; :meth:`offer` takes a better plan found elsewhere (the GA's).

    ``known_bound``: a bound on every plan's peak proved before (by an earlier search); ``seconds``:
    the time limit, if any (see :func:`searchable`); ``parts_of``: a search of the same problem whose
    parts (and kept blocks) this one takes rather than building its own (probes only read them).
    """

    def __init__(self, problem: Problem, incumbent: np.ndarray, started: float | None = None,
                 known_bound: int = 0, seconds: float | None = None,
                 parts_of: PartsSearch | None = None) -> None:  # fmt: skip
        self.problem = problem
        self.started = time.perf_counter() if started is None else started
        self.offsets = np.asarray(incumbent, np.int64).copy()
        if parts_of is None:
            parts, self.kept = _parts(problem, seconds)
        else:
            parts, self.kept = [s.part for s in parts_of.states], parts_of.kept
        self.states: list[PartState] = []
        for part in parts:
            hi = int((self.offsets[part.blocks] + part.sizes).max())
            lo = min(_round_up(part.bound, part.grain), hi)
            self.states.append(PartState(part, lo, hi, self.offsets[part.blocks].copy(), {}))
        bound = min(max(problem.lower_bound, known_bound), self.peak())
        self.lo = max([bound, *(s.lo for s in self.states)])
        self.events: list[dict[str, float | int]] = []
        self.nodes, self.stopped = 0, False
        self._node_limit: int | None = None
        # The rest of a round an advance's work budget cut short (see _round), and of its first slice.
        self._turns: list[tuple[PartState, Probe | RestartingProbe]] = []
        self._slice_left: int | None = None
        self._turns_for: tuple[int, ...] = ()  # the targets' state the turns were made for
        self._posted: list[tuple[np.ndarray, int, bool]] = []
        self._post_lock = threading.Lock()
        self.aside: np.ndarray | None = None  # a better plan posted not to steer the targets (see post)

    def kept_peak(self) -> int:
        return max((int((self.offsets[b] + self.problem.sizes[b]).max()) for b in self.kept), default=0)

    def peak(self) -> int:
        """The peak of the plan the probes' targets follow."""
        return max([self.kept_peak(), *(s.hi for s in self.states)])

    def best_peak(self) -> int:
        """The peak of the best plan known: the one the targets follow, or one put aside."""
        if self.aside is None:
            return self.peak()
        return min(self.peak(), int((self.aside + self.problem.sizes).max()))

    def offer(self, offsets: np.ndarray) -> None:
        """Take each part of ``offsets`` (a valid plan) that lies lower than the one held."""
        sizes = self.problem.sizes
        for s in self.states:
            top = int((offsets[s.part.blocks] + s.part.sizes).max())
            if top < s.hi:
                s.hi, s.offsets = top, offsets[s.part.blocks].astype(np.int64)
        for blocks in self.kept:
            if (offsets[blocks] + sizes[blocks]).max() < (self.offsets[blocks] + sizes[blocks]).max():
                self.offsets[blocks] = offsets[blocks]

    def post(self, offsets: np.ndarray, lower_bound: int = 0, steer: bool = True) -> None:
        """From another thread: a valid plan and a bound proved for these blocks, taken between two
        rounds of a :meth:`run`. The plan is offered (:meth:`offer`) when it may ``steer`` the targets,
        else only kept aside as the best known when it is."""
        with self._post_lock:
            self._posted.append((offsets, lower_bound, steer))

    def _take_posted(self, on_event: OnEvent | None) -> None:
        with self._post_lock:
            posted, self._posted = self._posted, []
        if not posted:
            return
        before = (self.best_peak(), self.lo)
        for offsets, lower_bound, steer in posted:
            if steer:
                self.offer(offsets)
            elif int((offsets + self.problem.sizes).max()) < self.best_peak():
                self.aside = offsets
            self.lo = max(self.lo, lower_bound)
        if (self.best_peak(), self.lo) != before:
            self._note(on_event)

    def _targets_state(self) -> tuple[int, ...]:
        """What the probes' targets follow: the bound, the kept blocks' peak and each part's best peak."""
        return (self.lo, self.kept_peak(), *(s.hi for s in self.states))

    def _note(self, on_event: OnEvent | None) -> None:
        elapsed = round(time.perf_counter() - self.started, 6)
        self.events.append(
            {"elapsed": elapsed, "peak": self.best_peak(), "lower_bound": self.lo, "nodes": self.nodes}
        )
        if on_event is not None:
            on_event(self.events[-1])

    def run(
        self,
        deadline: float,
        on_event: OnEvent | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> SearchResult:
        """Probe until ``deadline`` (a perf_counter time), the bound is met, or ``should_stop`` says so.

        ``on_event``: called with each event (the best peak or the bound changed);
        ``should_stop``: asked every :data:`STOP_CHECK_SECONDS`, True ends the search early.
        """
        self._note(on_event)
        return self.advance(deadline, on_event, should_stop)

    def advance(
        self,
        deadline: float,
        on_event: OnEvent | None = None,
        should_stop: Callable[[], bool] | None = None,
        nodes: int | None = None,
    ) -> SearchResult:
        """Probe on from where the search stopped, as :meth:`run` does, and stop once it has placed
        ``nodes`` blocks in all (if given): a budget counted in work, which ends at the same plan
        whatever the machine's load (unless the deadline comes first)."""
        asked = time.perf_counter()
        self.stopped, self._node_limit = False, nodes
        self._take_posted(on_event)  # a plan posted before the run may already meet the bound
        while self.best_peak() > max(self.lo, self.kept_peak()) and not self._spent(deadline):
            self._take_posted(on_event)
            if should_stop is not None and time.perf_counter() - asked >= STOP_CHECK_SECONDS:
                asked = time.perf_counter()
                if should_stop():
                    self.stopped = True
                    break
            if not self._round(deadline, on_event):
                break
        return self.result()

    def _spent(self, deadline: float) -> bool:
        """The deadline has passed, or the work budget of this :meth:`advance` is used up."""
        return time.perf_counter() >= deadline or (
            self._node_limit is not None and self.nodes >= self._node_limit
        )

    def _round(self, deadline: float, on_event: OnEvent | None) -> bool:
        """One slice for each probe in turn, until one finds a plan or proves a bound; False: none to run.

        A round that the work budget of an :meth:`advance` cuts short goes on at the next one where it
        stopped (the slice cut too), unless the targets moved meanwhile: budgets shorter than a round
        would otherwise give the probes at the first targets every turn and the others none.
        """
        if not self._turns or self._turns_for != self._targets_state():
            self._turns, self._slice_left, self._turns_for = self._schedule(), None, self._targets_state()
        if not self._turns:
            return False
        while self._turns:
            s, probe = self._turns[0]
            status = self._slice(s, probe, on_event)
            if status != PAUSED:
                self._turns = []
            elif self._slice_left is None:
                del self._turns[0]
            if status != PAUSED or self._spent(deadline):
                break
        return True

    def _schedule(self) -> list[tuple[PartState, Probe | RestartingProbe]]:
        """A round's turns: each part's probes (made for the targets now), the lowest targets first."""
        floor, peak = max(self.lo, self.kept_peak()), self.peak()
        active = []
        for s in self.states:
            if s.part.large:
                wanted = _large_part_keys(s, floor)
            else:
                targets = _targets(s.part, floor, peak, self.problem.interval_conflicts)
                wanted = [(t, kind) for t, kinds in targets.items() if s.hi > t for kind in kinds]
            s.probes = {key: s.probes.get(key) or make_probe(s.part, *key) for key in wanted}
            # Most plans that exist at all sit at the lower bound: its probes get two turns a round.
            active += [(s, probe) for probe in s.probes.values() for _ in range(1 + (probe.target == floor))]
        return sorted(active, key=lambda sp: sp[1].target)

    def _slice(self, s: PartState, probe: Probe | RestartingProbe, on_event: OnEvent | None) -> int:
        """Run ``probe`` (of part ``s``) for one slice and take what it answers; its status.

        A slice the work budget cuts short leaves the placements it still had in ``_slice_left``.
        """
        before, budget = probe.nodes, self._slice_left or slice_budget(s.part)
        allowed = budget if self._node_limit is None else max(1, min(budget, self._node_limit - self.nodes))
        status = probe.run(allowed)
        used = probe.nodes - before
        self.nodes += used
        cut = status == PAUSED and allowed < budget and used >= allowed
        self._slice_left = budget - used if cut else None
        if status == FOUND:
            top = int((probe.offsets + s.part.sizes).max())
            if top < s.hi:
                s.hi, s.offsets = top, probe.offsets.copy()
            self._note(on_event)
        elif status == INFEASIBLE:
            s.lo = max(s.lo, _round_up(probe.target + 1, s.part.grain))
            s.probes = {key: p for key, p in s.probes.items() if key[0] >= s.lo}
            self.lo = max(self.lo, s.lo)
            self._note(on_event)
        return status

    def result(self) -> SearchResult:
        offsets = self.offsets.copy()
        for s in self.states:
            offsets[s.part.blocks] = s.offsets
        if self.aside is not None and self.best_peak() < self.peak():
            offsets = self.aside.copy()
        peak = self.best_peak()
        return SearchResult(offsets, self.lo, peak <= self.lo, self.nodes, tuple(self.events), self.stopped)
