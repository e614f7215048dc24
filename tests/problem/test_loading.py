"""Reading inputs: a gzipped document or CSV reads as the plain file does; a bad gzip is one clear error."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gaplanner.errors import InputError
from gaplanner.problem.loading import load_document, load_problem

CSV = "id,lower,upper,size\na,0,2,4\nb,1,3,8\nc,2,4,4\n"
GRAPH = (
    '{"tensors": [{"id": "x", "size": 4}, {"id": "y", "size": 8}],'
    ' "operators": [{"id": "f", "inputs": ["x"], "outputs": ["y"]}]}'
)


@pytest.mark.parametrize("name, text", [("g.json", GRAPH), ("b.csv", CSV)])
def test_a_gzipped_file_reads_as_the_plain_one(tmp_path: Path, name: str, text: str) -> None:
    plain, packed = tmp_path / name, tmp_path / f"{name}.gz"
    plain.write_text(text, encoding="utf-8")
    packed.write_bytes(gzip.compress(text.encode()))
    a, b = load_problem(plain), load_problem(packed)
    assert (a.ids, a.lower_bound, a.sizes.tolist()) == (b.ids, b.lower_bound, b.sizes.tolist())
    assert load_document(plain) == load_document(packed)


def test_a_file_that_is_not_gzip_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "g.json.gz"
    path.write_bytes(b"{}")
    with pytest.raises(InputError, match=r"^input: g\.json\.gz is not a gzip file") as caught:
        load_problem(path)
    assert "\n" not in str(caught.value)
