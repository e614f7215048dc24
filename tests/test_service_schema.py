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
