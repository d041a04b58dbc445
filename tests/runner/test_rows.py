"""Result rows: one schema, written and read back by one module."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prefduel import __version__
from prefduel.core.errors import ResultsFileError
from prefduel.runner.cell import run_cell
from prefduel.runner.references import reference_rows
from prefduel.runner.rows import ROW_FIELDS, ResultRow, score_fields
from prefduel.worlds import get_world


@pytest.fixture(scope="module")
def rows():
    world = get_world("dev", 0)
    return [run_cell(world, "random"), *reference_rows(world)]


def test_every_row_the_runner_writes_reads_back_unchanged(rows):
    for row in rows:
        assert tuple(row) == ROW_FIELDS
        typed = ResultRow.from_json(json.loads(json.dumps(row)))
        assert typed.to_json() == row
        assert typed.version == __version__


def test_score_fields_restate_the_score(rows):
    row = rows[0]
    excess = np.array(row["excess_per_arrival"])[:, None] * np.ones((1, 24)) / 24
    fields = score_fields(row["R"], row["G"], row["R_rand"], excess)
    assert fields["score"] == pytest.approx(row["score"])
    assert fields["excess"] == pytest.approx(row["R"] - row["G"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "oracle"}, r"kind must be one of \['policy', 'reference'\]"),
        ({"seed": "0"}, r"seed must be an integer"),
        ({"score": float("nan")}, r"field 'score' is nan, not a number"),
        ({"R": None}, r"field 'R' is None"),
        ({"excess_per_round": []}, r"field 'excess_per_round' is not a non-empty list"),
        ({"excess_per_arrival": [1.0, "x"]}, r"field 'excess_per_arrival' holds values"),
    ],
)
def test_from_json_names_the_bad_field(rows, change, message):
    with pytest.raises(ResultsFileError, match=r"line 3: " + message):
        ResultRow.from_json({**rows[0], **change}, where="line 3")


def test_a_missing_field_is_named(rows):
    row = dict(rows[0])
    del row["policy"]
    with pytest.raises(ResultsFileError, match="missing field"):
        ResultRow.from_json(row)
