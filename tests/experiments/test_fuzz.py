"""The fuzz targets: each input plans or is refused in one line; the crashes they found stay fixed."""

from __future__ import annotations

import base64
import importlib.util

import pytest

from experiments.fuzz import TARGETS, run_atheris, run_mutations, seeds
from gaplanner import load_problem
from gaplanner.errors import InputError


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.slow
def test_mutated_inputs_plan_or_are_refused(target) -> None:
    if not seeds(target):
        pytest.skip(f"no seed for {target}")
    accepted = run_mutations(target, 300, seed=1)  # a crash raises
    assert 0 < accepted < 300  # some mutations still plan, some are refused: both paths ran


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_seed_is_accepted(target) -> None:
    assert all(TARGETS[target](data) for data in seeds(target))


def test_a_huge_clock_component_is_refused_naming_its_line(tmp_path) -> None:
    """Found by atheris: a vector-clock component beyond 64 bits raised OverflowError."""
    crash = (
        "aWQsbG93ZXIsdXBwZXIsc2l6ZSxvZmYzZSx0CmEsMDowLDE6XTAsNCwKYiwwOjEsMCw6CjI0LDAyOjc3Nzc3Nzc3Nzc3"
        "Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Miw4LAo="
    )
    assert TARGETS["csv"](base64.b64decode(crash)) is False
    path = tmp_path / "clocks.csv"
    path.write_text("id,lower,upper,size\na,0:0,1:99999999999999999999999,4\n")
    with pytest.raises(InputError) as caught:
        load_problem(path)
    assert caught.value.field == "line 2, column upper"


def test_a_key_holding_a_line_break_is_refused_in_one_line() -> None:
    """Found by atheris: a JSON key ``"te\\nsors"`` made the error message two lines."""
    with pytest.raises(InputError) as caught:
        load_problem({"name": "x", "te\nsors": []})
    assert "\n" not in str(caught.value) and "te\\nsors" in str(caught.value)


def test_an_access_cost_that_would_overflow_is_refused() -> None:
    """Found by the structured mutations: a read cost of 1e308 made every cost infinite."""
    doc = {"buffers": [{"id": "a", "lower": 0, "upper": 2, "size": 8}],
           "memories": [{"id": "dram", "read_cost": 1e308}]}  # fmt: skip
    with pytest.raises(InputError) as caught:
        load_problem(doc)
    assert caught.value.field == "memories[0].read_cost"


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris (extra fuzz) not installed")
@pytest.mark.slow
def test_atheris_runs_a_target_for_a_few_seconds(tmp_path) -> None:
    result = run_atheris("json", 5, tmp_path)
    assert result["exit"] == 0 and not result["crashes"], result["tail"]
    assert result["inputs"] > 0


def test_a_row_with_more_values_than_the_header_is_refused_naming_its_line() -> None:
    """Found by atheris: a vector-clock row's extra values were dropped without a word."""
    crash = "aWQsbG93ZXIsdXBwZXIsc2l6ZSxvZmZzZXQKYSwwOjAsMTowLDQsMzMzMzMzMzMzMywwOjIsNCwwCg=="
    assert TARGETS["csv"](base64.b64decode(crash)) is False
    with pytest.raises(InputError) as caught:
        load_problem(("crash.csv", base64.b64decode(crash).decode()))
    assert caught.value.field == "line 2" and "8 values" in str(caught.value)


def test_a_pinned_offset_beyond_32_bits_stays_where_it_was_pinned() -> None:
    """Found by atheris (the same input): the decoder chose 32-bit offsets from the sizes alone, and a
    block pinned at 3,333,333,333 wrapped around to a negative offset."""
    import numpy as np

    from gaplanner import solve

    doc = {"buffers": [{"id": "a", "lower": 0, "upper": 2, "size": 4, "offset": 3_333_333_333},
                       {"id": "b", "lower": 1, "upper": 3, "size": 8}]}  # fmt: skip
    problem = load_problem(doc)
    for algorithm in ("first-fit", "greedy-size", "ga", "exact"):
        plan = solve(problem, algorithm)
        assert plan.offsets[0] == 3_333_333_333 and plan.peak == 3_333_333_337, algorithm
        assert np.all(plan.offsets >= 0)


def test_a_request_key_holding_a_line_break_is_refused_in_one_line(tmp_path) -> None:
    """Found by atheris: an unknown request key ``"opti\\ns"`` made the service's 422 two lines."""
    crash = b'{"graph": "example:sram_dram", "opti\\ns": {"time_limit": 0.5}}'
    assert TARGETS["service"](crash) is False
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.config import ServiceSettings

    app = create_app(ServiceSettings(db=tmp_path / "jobs.sqlite3", api_key=None, workers=1, warm_up=False))
    with TestClient(app) as client:
        answer = client.post("/v1/plans", content=crash, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422
    assert answer.json()["detail"] == "opti\\ns: Extra inputs are not permitted"
