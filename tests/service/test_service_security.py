"""The service's security rules: the API key, names that cannot reach the disk, no pickles, no root."""

from __future__ import annotations

import ast
import base64
import json
import os
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

import service.polls
from service.app import create_app
from service.config import ServiceSettings

ROOT = Path(__file__).resolve().parents[2]
KEY = "s3cret-key"
#: Routes anyone may read: liveness, the API's description and the static planning page (no job data;
#: the page's own calls to the API need the key).
PUBLIC = {"/v1/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/"}
BUFFERS = {
    "buffers": [
        {"id": "a", "lower": 0, "upper": 2, "size": 8},
        {"id": "b", "lower": 1, "upper": 3, "size": 8},
    ]
}


def _settings(tmp: Path, **overrides: Any) -> ServiceSettings:
    values = {"db": tmp / "jobs.sqlite3", "workers": 1, "warm_up": False, "default_time_limit": 0.5}
    return ServiceSettings(**{**values, **overrides})


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory):
    app = create_app(_settings(tmp_path_factory.mktemp("keyed"), api_key=KEY))
    with TestClient(app) as client:
        yield app, client


@pytest.fixture(scope="module")
def open_client(tmp_path_factory: pytest.TempPathFactory):
    with TestClient(create_app(_settings(tmp_path_factory.mktemp("open")))) as client:
        yield client


# --- the API key -----------------------------------------------------------------------------------


def _routes(routes: list[Any]) -> list[Any]:
    """Every route, those of included routers too (newer FastAPI keeps an included router as one entry)."""
    found = []
    for route in routes:
        if hasattr(route, "path"):
            found.append(route)
        elif hasattr(route, "original_router"):
            found += _routes(route.original_router.routes)
    return found


def _every_route(app) -> list[tuple[str, str]]:
    """(method, path) of every route the application serves, path parameters filled in."""
    found = []
    for route in _routes(app.routes):
        methods = route.methods if isinstance(route, APIRoute) else getattr(route, "methods", None) or {"GET"}
        path = re.sub(r"\{[^}]+\}", "some-id", route.path)
        found += [(method, path) for method in sorted(methods) if method != "HEAD"]
    return found


def test_every_route_but_health_needs_the_key(keyed) -> None:
    app, client = keyed
    routes = _every_route(app)
    guarded = [(m, p) for m, p in routes if p not in PUBLIC]
    assert len(guarded) >= 6  # the job routes of plans and comparisons at least
    for method, path in guarded:
        for headers in (
            {},
            {"X-API-Key": "wrong"},
            {"Authorization": "Bearer wrong"},
            {"X-API-Key": KEY[:-1]},
        ):
            response = client.request(method, path, json={"graph": BUFFERS}, headers=headers)
            assert response.status_code == 401, (method, path, headers, response.text)
    assert client.get("/v1/health").status_code == 200
    for headers in ({"X-API-Key": KEY}, {"Authorization": f"Bearer {KEY}"}):
        assert client.get("/v1/plans", headers=headers).status_code == 200


def test_the_key_is_compared_in_constant_time(keyed, monkeypatch: pytest.MonkeyPatch) -> None:
    _, client = keyed
    calls: list[tuple[bytes, bytes]] = []
    real = service.polls.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(service.polls.hmac, "compare_digest", spy)
    assert client.get("/v1/plans", headers={"X-API-Key": "x"}).status_code == 401
    assert client.get("/v1/plans", headers={"X-API-Key": "a much longer wrong key"}).status_code == 401
    assert client.get("/v1/plans", headers={"X-API-Key": KEY}).status_code == 200
    assert len(calls) == 3
    assert {len(a) for a, _ in calls} == {len(b) for _, b in calls} == {32}  # digests: the length never shows


# --- names never reach the disk --------------------------------------------------------------------


def _names_around(tmp: Path) -> list[str]:
    """Bundled-input names that would read a real, valid document on disk if names were paths."""
    doc = tmp / "outside.json"
    doc.write_text(json.dumps(BUFFERS))
    examples = ROOT / "gaplanner" / "documents" / "examples"
    relative = os.path.relpath(tmp / "outside", examples)
    return [
        f"example:{tmp / 'outside'}",
        f"example:{relative}",
        f"zoo:{tmp / 'outside'}",
        f"zoo:{os.path.relpath(tmp / 'outside', ROOT / 'gaplanner' / 'zoo')}",
        f"zoo:{relative}@2",
        "example:../../pyproject",
        "example:/etc/passwd",
        "zoo:../../../etc/passwd",
        str(doc),
        f"file://{doc}",
    ]


def test_names_with_paths_are_refused(open_client, tmp_path: Path) -> None:
    for name in _names_around(tmp_path):
        for route in ("/v1/plans", "/v1/compare"):
            response = open_client.post(route, json={"graph": name, "options": {"time_limit": 0.5}})
            assert response.status_code == 422, (name, response.text)
            assert response.json()["field"] == "graph"


# --- no pickles ------------------------------------------------------------------------------------


class _Planted:
    """Unpickling this writes a file: the test looks for it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (Path(self.path), "unpickled"))


def test_pickled_bodies_are_refused_and_never_loaded(open_client, tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    payload = pickle.dumps(_Planted(str(marker)))
    for body, kind in [
        (payload, "application/octet-stream"),
        (payload, "application/json"),
        (json.dumps({"graph": base64.b64encode(payload).decode()}).encode(), "application/json"),
        (json.dumps({"graph": {"pickle": base64.b64encode(payload).decode()}}).encode(), "application/json"),
    ]:
        response = open_client.post("/v1/plans", content=body, headers={"Content-Type": kind})
        assert 400 <= response.status_code < 500, response.text
    assert not marker.exists()


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


#: Importers of files on the user's own disk (the CLI's ``.pt2`` reader uses torch.export.load); the
#: service never reaches them: a request names no path (see test_names_with_paths_are_refused).
LOCAL_FILE_IMPORTERS = {"torch_import.py"}


def test_no_module_the_service_runs_imports_a_pickle_loader() -> None:
    loaders = {"pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "marshal", "torch"}
    service_sources = list((ROOT / "service").glob("*.py"))
    library = [p for p in (ROOT / "gaplanner").rglob("*.py") if p.name not in LOCAL_FILE_IMPORTERS]
    assert len(service_sources) + len(library) > 20
    for source in [*service_sources, *library]:
        assert not (_imported_modules(source) & loaders), source
        text = source.read_text()
        assert "allow_pickle=True" not in text and "torch.load" not in text, source
    for source in service_sources:
        assert not any(name.removesuffix(".py") in source.read_text() for name in LOCAL_FILE_IMPORTERS)


# --- ONNX ------------------------------------------------------------------------------------------


def test_a_job_body_is_never_an_onnx_model(open_client) -> None:
    """A job's graph is a document or a bundled name: ONNX files go through /v1/inputs first."""
    for graph in ("model.onnx", "example:model.onnx", base64.b64encode(b"\x08\x07onnx-bytes").decode()):
        response = open_client.post("/v1/plans", json={"graph": graph})
        assert response.status_code == 422 and response.json()["field"] == "graph", response.text
    raw = open_client.post(
        "/v1/plans", content=b"\x08\x07\x12\x04onnx", headers={"Content-Type": "application/onnx"}
    )
    assert raw.status_code == 415


# --- the image -------------------------------------------------------------------------------------


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", dockerfile)
    lines = [
        line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")
    ]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def test_the_docker_image_runs_as_a_user_that_is_not_root() -> None:
    steps = _instructions((ROOT / "Dockerfile").read_text())
    users = [(i, arg.split(":")[0]) for i, (op, arg) in enumerate(steps) if op == "USER"]
    assert users, "the Dockerfile sets no USER: the service would run as root"
    last_index, user = users[-1]
    assert user not in ("root", "0")
    assert any(
        op == "RUN" and "useradd" in arg and user in arg and "--uid 0 " not in arg for op, arg in steps
    )
    runs_after = [op for op, _ in steps[last_index:] if op in ("CMD", "ENTRYPOINT")]
    assert runs_after, "the command must run after the USER line"
