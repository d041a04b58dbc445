"""CSV outputs of the ranking package: text cells cannot become spreadsheet formulas."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from prefduel.ranking import read_battles, write_battles


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('=HYPERLINK("http://evil.example","x")', '\'=HYPERLINK("http://evil.example","x")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(1+1)*cmd", "'@SUM(1+1)*cmd"),
        ("\t=1+1", "'\t=1+1"),
        ("\r=1+1", "'\r=1+1"),
        ("-", "'-"),
        ("gpt-4o", "gpt-4o"),
        ("a=b", "a=b"),
        ("", ""),
        ("-1.5", "-1.5"),  # a number as text stays a number
        ("+3", "+3"),
        ("-2e-3", "-2e-3"),
        (-1.5, -1.5),  # numbers are never touched
        (-3, -3),
        (None, None),
        (True, True),
    ],
)
def test_formula_prefixes_get_an_apostrophe(value, written):
    from prefduel.core.csvcells import spreadsheet_safe

    assert spreadsheet_safe(value) == written


def test_write_battles_csv_neutralises_text_and_keeps_numbers(tmp_path):
    frame = pd.DataFrame(
        {
            "model_a": ['=HYPERLINK("http://evil.example","x")', "b"],
            "model_b": ["b", "@SUM(A1)"],
            "winner": ["model_a", "model_b"],
            "judge": ["+cmd|' /C calc'!A0", "-user"],
            "tstamp": [-1.5, 2.0],
            "prompt": [["- a list as JSON"], ["plain"]],
        }
    )
    path = write_battles(frame, tmp_path / "clicks.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["model_a"] == '\'=HYPERLINK("http://evil.example","x")'
    assert rows[1]["model_b"] == "'@SUM(A1)"
    assert rows[0]["judge"] == "'+cmd|' /C calc'!A0" and rows[1]["judge"] == "'-user"
    assert rows[0]["tstamp"] == "-1.5"  # a negative number stays a number
    assert rows[0]["prompt"] == '["- a list as JSON"]' and rows[1]["prompt"] == '["plain"]'
    # The other formats keep the names verbatim; only CSV is meant for spreadsheets.
    jsonl = write_battles(frame, tmp_path / "clicks.jsonl")
    assert list(read_battles(jsonl).users) == ["+cmd|' /C calc'!A0", "-user"]
