"""experiments/bench_pools.py: the bound it adds for models at the same time, and the KV-cache pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.bench_pools import joined_bound
from gaplanner.plans.pool_report import pool_inputs
from tests.problem.test_pools import chain


def write(tmp_path: Path, name: str, content: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    return str(path)


def test_the_joined_bound_holds_only_where_every_pair_meets(tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", chain("a", [16, 16]))
    b = write(tmp_path, "b.json", chain("b", [32, 32]))
    assert joined_bound(pool_inputs([a, b], "concurrent")) == 32 + 64  # the optimum: test_pool_plan.py
    assert joined_bound(pool_inputs([a, b], "sequential")) is None
    kv_a = write(tmp_path, "kva.json", chain("a", [16, 16], writes="kv"))
    kv_b = write(tmp_path, "kvb.json", chain("b", [32, 32], reads="kv"))
    assert joined_bound(pool_inputs([kv_a, kv_b], "concurrent", ["kv"])) is None  # kv would count twice


def test_prefill_and_decode_share_their_kv_cache(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from experiments.models.kv_pair import export_pair
    from gaplanner.search.baselines import greedy_size

    prefill, decode, shared = export_pair(tmp_path, layers=1, hidden=32, heads=2, tokens=8)
    assert shared == ["past_0_key", "past_0_value"]
    pool = pool_inputs([prefill, decode], "sequential", shared)
    tensors = pool.problem.tensors.ids
    assert set(shared) <= set(tensors) and not any(t.endswith("/past_0_key") for t in tensors)
    cache = 2 * 8 * 32 * 4  # keys and values: 8 tokens x 32 wide, float32
    alone = {m: p.lower_bound for m, p in pool.models}
    assert pool.problem.lower_bound >= max(alone["prefill"], cache)
    plan = greedy_size(pool.problem)  # verified when made
    offsets = plan.tensor_offsets()
    sizes = dict(zip(tensors, pool.problem.tensors.sizes, strict=True))
    assert sum(sizes[t] for t in shared) == cache
    for name in shared:  # the cache persists while decode runs: none of decode's tensors shares its bytes
        clash = [t for t in tensors if t.startswith("decode/") and offsets[t] < offsets[name] + sizes[name]
                 and offsets[name] < offsets[t] + sizes[t]]  # fmt: skip
        assert clash == [], (name, clash)
