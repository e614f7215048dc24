"""The pages the service draws: the plan viewer (one self-contained HTML page, inline SVG and script,
nothing fetched) and the page to plan from, served at ``/``."""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from typing import Any

from service.traces import thin_trace

#: Most convergence points the page draws (every improvement is kept).
MAX_POINTS = 1500


@cache
def _template() -> str:
    return (resources.files("service") / "static" / "viewer.html").read_text(encoding="utf-8")


@cache
def planner_page() -> str:
    """The page at ``/``: upload or pick an input, watch the search, see and download the plan."""
    return (resources.files("service") / "static" / "index.html").read_text(encoding="utf-8")


def render(status: str, plan: dict[str, Any], layout: dict[str, Any], trace: list[dict[str, Any]]) -> str:
    points = [[r["generation"], r["best_peak"], r["mean_peak"]] for r in thin_trace(trace, MAX_POINTS)]
    data = {
        "status": status,
        "plan": plan,
        "lower": layout["lower"],
        "upper": layout["upper"],
        "trace": points,
    }
    # Inside <script type="application/json">: only "</" could end the element early.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(f"{plan.get('name', 'plan')} ({plan.get('algorithm', '')})")
    head, tail = _template().split("__DATA__")  # one substitution each: user text is never re-scanned
    return head.replace("__TITLE__", title) + payload + tail
