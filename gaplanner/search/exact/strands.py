"""The exact search's other schedule (:class:`RandomTargets`, for other cores) and the strands of a search
run side by side (:func:`run_strands`). See :mod:`gaplanner.search.exact.search` for the method.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from gaplanner.search.exact.dfs import PAUSED
from gaplanner.search.exact.parts_search import OnEvent, PartsSearch, PartState, SearchResult, make_probe
from gaplanner.search.exact.probes import Probe, RestartingProbe

#: Placements each probe of :class:`RandomTargets` gets (at least two descents of its part): about a tenth
#: of a second on MiniMalloc's challenging set.
RANDOM_TARGET_PLACEMENTS = 10000


class RandomTargets(PartsSearch):
    """The exact search's other schedule, for another core: one probe at a time, at a target drawn
    between the lower bound and its part's best peak, of an order drawn too, for a few descents.

    A probe's plan hugs its target, and which order answers at which target is
    erratic: where the bound is far below every plan found, the portfolio's
    fixed targets can spend the whole time limit on pairs of target and order
    that never answer, while draws give every pair its chance. They do not
    replace the portfolio: plans that need one probe to search long (and the
    proofs at the bound) come from its probes, which keep their work.
    Large parts (see :mod:`gaplanner.search.exact.parts`) are left to the portfolio:
    one descent there takes seconds.
    """

    def __init__(self, *args, seed: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rng = np.random.default_rng(seed)
        self.drawn: tuple[PartState, Probe | RestartingProbe] | None = None

    def _round(self, deadline: float, on_event: OnEvent | None) -> bool:
        """One slice of the probe drawn last, or of a new one once it has answered, had its placements,
        or its target lies outside what is still open."""
        floor = max(self.lo, self.kept_peak())
        if self.drawn is not None:
            s, probe = self.drawn
            placements = max(RANDOM_TARGET_PLACEMENTS, 2 * len(s.part.sizes))
            if (
                probe.status != PAUSED
                or probe.nodes >= placements
                or not max(floor, s.lo) <= probe.target < s.hi
            ):
                self.drawn = None
        if self.drawn is None:
            open_parts = [s for s in self.states if not s.part.large and s.hi > max(floor, s.lo)]
            if not open_parts:
                return False
            s = open_parts[self.rng.integers(len(open_parts))]
            target = int(self.rng.integers(max(floor, s.lo), s.hi))
            orders = s.part.orders
            draw = self.rng.integers(2 * len(orders))  # as often a plain order as a shuffled one
            kind = orders[draw] if draw < len(orders) else int(self.rng.integers(2**31))
            self.drawn = (s, make_probe(s.part, target, kind))
        self._slice(*self.drawn, on_event)
        return True


def run_strands(
    search: PartsSearch,
    others: list[PartsSearch],
    deadline: float,
    on_event: OnEvent | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SearchResult:
    """``search`` here and each of ``others`` on a thread of its own, over the same parts until
    ``deadline``, each posting its better plans and bounds to the rest; ``search``'s result, with theirs.

    The others' plans do not steer ``search``'s targets: it keeps them aside as
    the best known. Its fixed targets move with each plan it takes, throwing
    away probes that had not yet answered, and the others find many plans just
    below its best one, each of which would move them. Its plans do steer the
    others, whose targets are drawn below the best plan afresh each time. The
    probes' compiled search holds no Python lock, so the threads run on as many
    cores. ``others`` stop when ``search`` ends (closed, stopped or at the deadline).
    """
    done = threading.Event()
    everyone = [search, *others]
    errors: list[BaseException] = []

    def sharing(strand: PartsSearch) -> OnEvent:
        def share(event: dict[str, float | int]) -> None:
            offsets = strand.result().offsets
            for other in everyone:
                if other is not strand:
                    other.post(offsets, strand.lo, steer=other is not search)
            if strand is search and on_event is not None:
                on_event(event)

        return share

    def run_other(strand: PartsSearch) -> None:
        try:
            strand.run(deadline, sharing(strand), done.is_set)
        except BaseException as error:  # raised again on the caller's thread
            errors.append(error)
            done.set()

    threads = [threading.Thread(target=run_other, args=(strand,), daemon=True) for strand in others]
    for thread in threads:
        thread.start()
    try:
        search.run(deadline, sharing(search), lambda: done.is_set() or bool(should_stop and should_stop()))
    finally:
        done.set()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    search.nodes += sum(strand.nodes for strand in others)
    search._take_posted(on_event)  # the others' last plans and bounds
    return search.result()
