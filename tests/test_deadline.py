"""One run's deadline: what is left, what is kept back, and stages told to a listener."""

from __future__ import annotations

import math
import time

from gaplanner.deadline import Deadline, no_deadline, process_started


def test_without_a_limit_everything_fits_and_nothing_passes() -> None:
    deadline = no_deadline().keeping(5.0)
    assert deadline.left() == math.inf and deadline.fits(1e9) and not deadline.passed()
    assert deadline.share(0.5).left() == math.inf


def test_what_is_kept_back_comes_off_the_end() -> None:
    now = time.perf_counter()
    deadline = Deadline(10.0, started=now - 4.0)  # 6 s left
    kept = deadline.keeping(2.0)
    assert 3.5 < kept.left() <= 4.0 and kept.fits(3.5) and not kept.fits(4.5)
    assert kept.end == deadline.end - 2.0 and deadline.left() > kept.left()  # the original is unchanged
    assert 2.5 < deadline.share(0.5).left() <= 3.0  # half of what is left now, the rest kept back


def test_a_deadline_in_the_past_has_passed_and_fits_nothing() -> None:
    deadline = Deadline(1.0, started=time.perf_counter() - 2.0)
    assert deadline.passed() and deadline.left() == 0.0 and not deadline.fits(0.001)


def test_stages_go_to_the_listener_through_every_kept_copy() -> None:
    heard: list[str] = []
    deadline = Deadline(5.0, listener=heard.append)
    deadline.stage("starting plans")
    deadline.keeping(1.0).stage("genetic search")
    assert heard == ["starting plans", "genetic search"]


def test_the_process_started_before_now() -> None:
    assert 0.0 <= time.perf_counter() - process_started() < 3600
