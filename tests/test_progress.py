"""The progress line: on a terminal one rewritten line; nothing with --quiet or off a terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gaplanner.plans.plan import GenerationRecord
from gaplanner.progress import ProgressLine
from service.testing import unreachable_bound_document


def _read_all(master: int, seconds: float = 0.3) -> str:
    chunks = []
    while select.select([master], [], [], seconds)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def _drive(stream: io.TextIOBase, quiet: bool = False) -> None:
    progress = ProgressLine(100, quiet, limit=10, started=time.perf_counter() - 2.0, stream=stream)
    progress.stage("genetic search")
    progress(GenerationRecord(3, 125, 130.0, 30, 2.0))
    progress.stage("verification")  # a new stage is shown at once
    progress.close()


def test_on_a_terminal_one_line_shows_the_stage_the_time_and_the_best_peak() -> None:
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as terminal:
        _drive(terminal)
        out = _read_all(master)
    os.close(master)
    assert "genetic search  2.0 / 10 s" in out
    assert "verification" in out and "best peak 125 / bound 100 (x1.2500)" in out
    assert "\n" not in out and out.endswith("\r")  # one line, rewritten, then cleared


def test_quiet_or_not_a_terminal_shows_nothing() -> None:
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as terminal:
        _drive(terminal, quiet=True)
        assert _read_all(master) == ""
    os.close(master)
    pipe = io.StringIO()  # not a terminal
    _drive(pipe)
    assert pipe.getvalue() == ""


def _plan_on_a_terminal(tmp_path: Path, *flags: str) -> tuple[dict, str]:
    """The plan (stdout, into a file) and what a terminal on stderr showed, for a run of its whole 3 s:
    a problem whose bound no plan meets, so that no search ends before the progress line shows."""
    source = tmp_path / "unreachable.json"
    source.write_text(json.dumps(unreachable_bound_document(150, seed=3)))
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "gaplanner.cli", "plan", str(source), "--time-limit", "3"]
    with (tmp_path / "plan.json").open("w") as out:
        child = subprocess.Popen([*command, *flags], stdout=out, stderr=slave)
        os.close(slave)
        shown = []
        while child.poll() is None:
            shown.append(_read_all(master, 0.1))
        shown.append(_read_all(master, 0.1))
    os.close(master)
    assert child.wait() == 0
    return json.loads((tmp_path / "plan.json").read_text()), "".join(shown)


@pytest.mark.slow
def test_the_command_line_shows_progress_on_a_terminal_and_quiet_silences_it(tmp_path: Path) -> None:
    plan, shown = _plan_on_a_terminal(tmp_path)
    assert "/ 3 s" in shown and "best peak" in shown, shown
    assert plan["peak"] >= plan["lower_bound"]  # the plan on stdout parses: no progress in it
    _, shown = _plan_on_a_terminal(tmp_path, "--quiet")
    assert shown == ""
