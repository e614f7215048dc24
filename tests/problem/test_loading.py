"""Reading inputs: gzipped files as plain ones, one clear error for a bad gzip; the vectorised CSV reader
against the csv module's row-wise one (the same problem or the same error)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaplanner.errors import InputError
from gaplanner.problem import loading
from gaplanner.problem.loading import load_document, load_problem, problem_from_csv_text
from tests.strategies import SETTINGS

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


ODD_VALUES = ["", " 7", "7 ", "+3", "1_0", "2.0", "x", "1:2", "0" * 19 + "1", "9" * 20, "-0", "٣", "-2"]
# Mostly plain integers, one in eight odd: the vectorised reader must read the first and decline the rest.
VALUES = st.integers(0, 7).flatmap(
    lambda k: st.sampled_from(ODD_VALUES) if k == 0 else st.integers(1, 40).map(str)
)
HEADERS = [
    ["id", "lower", "upper", "size"],
    ["lower", "upper", "size"],
    ["buffer", "size", "lower", "upper"],
    ["id", "start", "end", "size"],
]
ODD_IDS, PLAIN_IDS = st.text("ab é,\"'", max_size=3), st.text("abcé 0", min_size=1, max_size=3)
IDS = st.integers(0, 7).flatmap(lambda k: ODD_IDS if k == 0 else PLAIN_IDS)


@st.composite
def csv_texts(draw: st.DrawFn) -> str:
    """CSV buffer lists, mostly plain, some with the oddities the row-wise reader reports."""
    columns = draw(st.sampled_from(HEADERS))
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        lower = draw(st.integers(0, 9))
        upper = str(lower + draw(st.integers(0, 4)))
        row = {"id": draw(IDS), "buffer": draw(IDS), "lower": str(lower), "start": str(lower)}
        row |= {"upper": upper, "end": str(lower + 1), "size": draw(VALUES)}
        if draw(st.integers(0, 7)) == 0:
            row[draw(st.sampled_from(columns))] = draw(VALUES)
        cells = [row[c] for c in columns]
        if draw(st.integers(0, 29)) == 0:
            cells = cells[:-1] if draw(st.booleans()) else [*cells, "1"]
        rows.append(",".join(cells))
    end = draw(st.sampled_from(["\n", "\r\n", "\n", "\r\n", "\n\n"]))
    return end.join([", ".join(columns) if draw(st.booleans()) else ",".join(columns), *rows]) + end


def read(text: str) -> tuple[str, object]:
    try:
        problem = problem_from_csv_text(text, "t")
    except InputError as exc:
        return "error", str(exc)
    return "problem", (problem.ids, problem.sizes.tolist(), problem.lower.tolist(), problem.upper.tolist())


@SETTINGS
@given(csv_texts())
def test_the_vectorised_reader_reads_what_the_row_wise_one_does(text: str) -> None:
    fast = read(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loading, "_plain_problem", lambda text, name: None)
        assert read(text) == fast


def test_a_plain_csv_is_read_by_the_vectorised_reader() -> None:
    text = "id,lower,upper,size\nx,0,3,-0\ny,2,4,1234567890123456\n"
    with pytest.raises(InputError, match="size must be positive"):  # the checks every reader shares
        loading._plain_problem(text, "t")
    problem = loading._plain_problem(text.replace("-0", "8"), "t")
    assert problem is not None
    assert problem.ids == ("x", "y") and problem.sizes.tolist() == [8, 1234567890123456]
    assert np.array_equal(problem.upper, [3, 4])
