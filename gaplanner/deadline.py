"""One run's time limit as a point in time, handed down to every stage that spends it.

A time limit given as seconds per stage overruns: each stage starts its own
clock, and the work between them (starting plans, the exact search's set-up,
verification, writing the plan) is counted nowhere. So a run makes one
:class:`Deadline` when its clock starts and passes it down; each stage asks
what is left, skips work whose estimated cost does not fit, and keeps back
(:meth:`Deadline.keeping`) what must still run after it, such as verifying
the plan it returns. With no time limit every question answers "go on", so a
run bounded by work alone (generations, evaluations) does the same work
whatever the machine's load.

The deadline also tells a listener which stage the run is in (:meth:`Deadline.stage`):
the command line's progress line shows it.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

#: Told the name of each stage as a run enters it.
StageListener = Callable[[str], None]


@dataclass(frozen=True)
class Deadline:
    """When a run must end: ``limit`` seconds from ``started`` (a ``perf_counter`` time), less what is
    kept back for later stages (``kept``). ``limit`` None: no time limit."""

    limit: float | None
    started: float = field(default_factory=time.perf_counter)
    kept: float = 0.0
    listener: StageListener | None = None

    @property
    def end(self) -> float:
        """The ``perf_counter`` time this stage must end by (infinite without a limit)."""
        return math.inf if self.limit is None else self.started + self.limit - self.kept

    def elapsed(self) -> float:
        """Seconds since the run's clock started."""
        return time.perf_counter() - self.started

    def left(self) -> float:
        """Seconds left until :attr:`end` (never below 0; infinite without a limit)."""
        return max(0.0, self.end - time.perf_counter())

    def passed(self) -> bool:
        return time.perf_counter() >= self.end

    def fits(self, seconds: float) -> bool:
        """Whether work estimated at ``seconds`` ends before :attr:`end`."""
        return seconds <= self.left()

    def keeping(self, seconds: float) -> Deadline:
        """This deadline less ``seconds`` kept back for what runs after the stage it is given to."""
        return replace(self, kept=self.kept + max(0.0, seconds))

    def share(self, fraction: float) -> Deadline:
        """A deadline ``fraction`` of the time left from now (the rest kept back for what follows)."""
        if self.limit is None:
            return self
        return self.keeping((1 - fraction) * self.left())

    def stage(self, name: str) -> None:
        """Tell the listener (if any) that the run enters stage ``name``."""
        if self.listener is not None:
            self.listener(name)


def no_deadline() -> Deadline:
    """A deadline that never comes (no time limit)."""
    return Deadline(None)


def process_started() -> float:
    """The ``perf_counter`` time this process started: its interpreter's start-up and imports then
    count against a time limit too (Linux, from ``/proc``; elsewhere, or if unreadable: now)."""
    now = time.perf_counter()
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        ticks = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # the 22nd field: start, in ticks since boot
        return now - max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - ticks)
    except (OSError, ValueError, IndexError, AttributeError):
        return now
