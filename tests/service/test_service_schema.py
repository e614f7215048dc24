"""Schemathesis against the service's own OpenAPI schema: generated requests for every operation,
each answer checked against the schema (status codes, content types, bodies) and for server errors."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import positive_data_acceptance  # noqa: E402

from service.app import create_app  # noqa: E402
from service.config import ServiceSettings  # noqa: E402

FOLDER = Path(tempfile.mkdtemp(prefix="gaplanner-schemathesis-"))
APP = create_app(
    ServiceSettings(
        db=FOLDER / "jobs.sqlite3",
        api_key=None,
        workers=1,
        warm_up=False,
        max_blocks=64,
        max_time_limit=0.2,
        default_time_limit=0.1,
        max_population=64,
        max_queue=20,
    )
)
# Loaded at import (the schema needs no running app); the lazy fixture loader is avoided on purpose:
# it relies on a pytest internal that pytest 9.2 removed.
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def running_app() -> Iterator[None]:
    with TestClient(APP):  # runs the lifespan: store and worker pool
        yield
    shutil.rmtree(FOLDER, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_every_operation_keeps_to_the_schema(case: Any) -> None:
    # A document valid by the JSON schema can still be refused by the library (unknown ids, cycles):
    # that is a 422 by design, so "schema-valid data must be accepted" is not one of the checks.
    case.call_and_validate(excluded_checks=[positive_data_acceptance])


# --- stateful: a job submitted, then read, traced, cancelled through the links it answers with ------


def test_the_links_lead_from_a_submitted_job_to_reading_it() -> None:
    machine = schema.as_state_machine()
    rules = {name for name in dir(machine) if name.startswith(("POST_", "GET_", "DELETE_"))}
    for kind in ("plans", "compare"):
        assert any(
            r.startswith(f"POST_v1_{kind}___202") and r.endswith(f"GET_v1_{kind}_job_id_") for r in rules
        )
        assert any(
            r.startswith(f"POST_v1_{kind}___202") and r.endswith(f"DELETE_v1_{kind}_job_id_") for r in rules
        )


BUFFERS = {
    "buffers": [
        {"id": "a", "lower": 0, "upper": 2, "size": 1024},
        {"id": "b", "lower": 1, "upper": 3, "size": 2048},
        {"id": "c", "lower": 2, "upper": 4, "size": 1024},
    ]
}
#: Bodies the service accepts: generated ones are almost always refused (422, 413), and a refused job
#: has no links to follow; the stateless test above sends generated bodies.
ACCEPTED = {
    "/v1/plans": [
        {"graph": BUFFERS, "options": {"algorithm": "ga", "seed": 1, "time_limit": 0.1}},
        {"graph": BUFFERS, "options": {"algorithm": "first-fit"}},
        {"graph": "example:seed000_queue", "options": {"algorithm": "exact", "time_limit": 0.1}},
    ],
    "/v1/compare": [{"graph": BUFFERS, "options": {"time_limit": 0.1}}],
}


def test_sequences_of_calls_along_the_links_keep_to_the_schema() -> None:
    """Schemathesis's state machine: submit jobs, then follow the links to read, trace, view and
    cancel them, every answer checked against the schema and for server errors."""
    machine = schema.as_state_machine()
    calls: list[tuple[str, str, int]] = []

    class Checked(machine):  # type: ignore[valid-type, misc]
        def before_call(self, case: Any) -> None:
            if case.method == "POST":
                bodies = ACCEPTED[case.path]
                case.body = bodies[len(calls) % len(bodies)]

        def validate_response(
            self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
        ) -> None:
            calls.append((case.method, case.formatted_path, response.status_code))
            case.validate_response(response, excluded_checks=[positive_data_acceptance])

    Checked.run(
        settings=settings(
            max_examples=10,
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
    )
    # the links were followed: jobs submitted and accepted, then read under their own ids
    submitted = [p for m, p, status in calls if m == "POST" and status == 202]
    read = [p for m, p, status in calls if m == "GET" and status == 200 and p.count("/") == 3]
    assert submitted and read, calls
