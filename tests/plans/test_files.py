"""A plan's JSON written row by row is the text ``json.dumps(data, indent=2)`` writes."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from gaplanner.plans.files import plan_json
from tests.strategies import SETTINGS

BLOCK = {"id": st.text(max_size=4), "offset": st.integers(0, 2**63 - 1), "size": st.integers(1)}
BLOCKS = st.lists(st.fixed_dictionaries(BLOCK))
EXTRA = st.dictionaries(st.sampled_from(["memory", "shares_with"]), st.text(max_size=2), max_size=1)


@SETTINGS
@given(BLOCKS, EXTRA, st.booleans())
def test_plan_json_is_json_dumps(blocks, extra, with_extra) -> None:
    if with_extra and blocks:
        blocks[0] |= extra  # blocks of another shape: the generic encoder writes them
    data = {"name": "p", "peak": 3, "blocks": blocks, "ratio": 1.5, "tensors": [{"id": "t", "offset": 0}]}
    assert plan_json(data) == json.dumps(data, indent=2)


@SETTINGS
@given(BLOCKS, st.text(max_size=3), st.sampled_from(["memory", "shares_with", "{x}", 'q"', "%s"]))
def test_blocks_with_one_more_field_each_are_json_dumps_too(blocks, value, field) -> None:
    blocks = [b | {field: value if k % 2 else k} for k, b in enumerate(blocks)]  # str, int or mixed
    across = [b | {field: value} for b in blocks]  # a plan across memories: every block names its memory
    for data in ({"blocks": blocks, "peak": 1}, {"name": "m", "blocks": across, "cost": 2.5}):
        assert plan_json(data) == json.dumps(data, indent=2)
