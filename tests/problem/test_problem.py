"""Problems from arrays: what a cast would change is refused with the field named, not guessed."""

from __future__ import annotations

import numpy as np
import pytest

from gaplanner import InputError
from gaplanner.problem.problem import problem_from_arrays

LOWER, UPPER = [0, 1], [2, 3]


def test_whole_floats_and_unsigned_integers_are_taken_as_they_are() -> None:
    from_floats = problem_from_arrays(np.array([4.0, 8.0]), LOWER, UPPER)
    from_unsigned = problem_from_arrays(np.array([4, 8], np.uint64), LOWER, UPPER, alignment=np.int64(4))
    assert from_floats.sizes.tolist() == from_unsigned.sizes.tolist() == [4, 8]
    assert from_unsigned.alignments.tolist() == [4, 4] and from_floats.lower_bound == 12


@pytest.mark.parametrize(
    ("sizes", "lower", "upper", "alignment", "field"),
    [
        ([1.5, 2], LOWER, UPPER, 1, "buffers[0].size"),
        ([1, 2], LOWER, [2, float("nan")], 1, "buffers[1].upper"),
        ([1, 2], [0, float("-inf")], UPPER, 1, "buffers[1].lower"),
        ([1, 2], LOWER, [2, 2**60], 1, "buffers[1].upper"),
        (["a", "b"], LOWER, UPPER, 1, "buffers.size"),
        ([[1, 2]], LOWER, UPPER, 1, "buffers.size"),
        ([1, 2], LOWER, UPPER, 0, "alignment"),
        ([1, 2], LOWER, UPPER, 2.0, "alignment"),
        ([1, -2], LOWER, UPPER, 1, "buffers[1].size"),
        ([1, 2], [0, 3], UPPER, 1, "buffers[1].upper"),
        ([1], LOWER, UPPER, 1, "buffers"),
        ([], [], [], 1, "buffers"),
    ],
)
def test_bad_arrays_are_refused_naming_the_field(sizes, lower, upper, alignment, field: str) -> None:
    with pytest.raises(InputError) as refused:
        problem_from_arrays(np.array(sizes), np.array(lower), np.array(upper), alignment=alignment)
    assert refused.value.field == field


def test_a_pinned_tensor_off_the_alignment_a_unit_asks_is_refused_naming_it() -> None:
    """Found by the campaign: a tensor pinned at 8 whose view an operator on a 16-byte unit reads. Every
    plan failed its own verification; the input is now refused at once, naming the block."""
    from gaplanner.problem.loading import problem_from_json

    doc = {
        "operators": [
            {"id": "op0", "inputs": ["x0"], "outputs": ["t0a"], "views": {"t0a": "x0"}},
            {"id": "op1", "inputs": ["t0a"], "outputs": ["t1a"], "device": "npu"},
        ],
        "tensors": [{"id": "x0", "size": 5, "offset": 8}, {"id": "t0a", "size": 5}, {"id": "t1a", "size": 3}],
        "devices": [{"id": "npu", "alignment": 16}],
    }
    with pytest.raises(InputError, match="'x0' is pinned at 8, not a multiple of 16"):
        problem_from_json(doc)
    doc["tensors"][0]["offset"] = 16
    assert problem_from_json(doc).pinned.tolist()[0] == 16
