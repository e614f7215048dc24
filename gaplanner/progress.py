"""The command line's progress line: one line on a terminal, rewritten as a run goes.

It shows the stage the run is in (told by its :class:`~gaplanner.deadline.Deadline`),
the seconds spent of the time limit, and the best peak found over the lower
bound (from the searches' progress records). It appears once a run has lasted
a second, is redrawn at most 4 times a second (a thread redraws it while
compiled code runs without the interpreter's lock, so the clock moves during
a long decode), and is cleared when the run ends. Only on a terminal, and
never with ``--quiet``: a pipe or a log file gets nothing, and the plan on
stdout is never mixed with it.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from gaplanner.plans.plan import GenerationRecord

#: Seconds a run lasts before the line appears, and between two redraws.
FIRST_SHOWN, REDRAW = 1.0, 0.25


class ProgressLine:
    """One updating line on ``stream`` (default stderr) while it is a terminal and not ``quiet``.

    ``limit``: the time limit in seconds (None: none); ``started``: the ``perf_counter``
    time the run's clock started (default: now).
    """

    def __init__(
        self,
        lower_bound: int,
        quiet: bool = False,
        limit: float | None = None,
        started: float | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.lower_bound, self.limit = lower_bound, limit
        self.started = time.perf_counter() if started is None else started
        self.stream = stream or sys.stderr
        self.on = not quiet and self.stream.isatty()
        self.stage_name, self.best, self.cost = "starting", None, None
        self.width = 0  # of the line shown last, to blank what a shorter one leaves
        self.last = -REDRAW
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.on:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def stage(self, name: str) -> None:
        """The run enters stage ``name`` (a :class:`~gaplanner.deadline.Deadline` listener)."""
        self.stage_name = name
        self._show(force=True)

    def __call__(self, record: GenerationRecord) -> None:
        """A search's progress record: its best peak so far (across memories: its least access cost first)."""
        if record.best_cost is not None:
            self.cost, self.best = record.best_cost, record.best_peak
        else:
            self.best = record.best_peak if self.best is None else min(self.best, record.best_peak)
        self._show()

    def text(self) -> str:
        """The line: stage, seconds of the limit, best peak over the bound."""
        elapsed = time.perf_counter() - self.started
        clock = f"{elapsed:.1f} s" if self.limit is None else f"{elapsed:.1f} / {self.limit:g} s"
        line = f"{self.stage_name}  {clock}"
        if self.cost is not None:
            line += f"  best cost {self.cost:.6g}"
        if self.best is not None:
            ratio = self.best / self.lower_bound if self.lower_bound else 1.0
            line += f"  best peak {self.best} / bound {self.lower_bound} (x{ratio:.4f})"
        return line

    def _show(self, force: bool = False) -> None:
        if not self.on:
            return
        now = time.perf_counter()
        if now - self.started < FIRST_SHOWN or (not force and now - self.last < REDRAW):
            return
        with self._lock:
            if self._done.is_set():
                return
            self.last = now
            line = self.text()
            self.stream.write("\r" + line + " " * max(0, self.width - len(line)))
            self.stream.flush()
            self.width = len(line)

    def _tick(self) -> None:
        while not self._done.wait(REDRAW):
            self._show()

    def close(self) -> None:
        """Stop redrawing and clear the line (the plan's output follows on a clean terminal)."""
        with self._lock:
            self._done.set()
            if self.width:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
        if self._ticker is not None:
            self._ticker.join()
