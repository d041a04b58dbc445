"""Summary tables: mean ± s.e. over seeds, ordering, reference markers, formats."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pytest

from prefduel.stats.table import format_table, summarize_rows


def _row(world: str, policy: str, seed: int, score: float, excess: float, kind="policy"):
    return {
        "kind": kind,
        "world": world,
        "seed": seed,
        "policy": policy,
        "score": score,
        "excess": excess,
        "wall_time": 0.1,
    }


ROWS = [
    _row("dev", "random", 0, 1.0, 30.0),
    _row("dev", "random", 1, -1.0, 34.0),
    _row("dev", "random", 2, 3.0, 26.0),
    _row("dev", "coduel:gate=off", 0, 60.0, 10.0),
    _row("dev", "coduel:gate=off", 1, 70.0, 8.0),
    _row("dev", "ref:oracle-user", 0, 90.0, 2.0, kind="reference"),
    _row("other", "random", 5, 0.5, 20.0),
]


def _entry(summary: list[dict], world: str, policy: str) -> dict:
    return next(e for e in summary if e["world"] == world and e["policy"] == policy)


def test_mean_and_standard_error():
    summary = summarize_rows(ROWS)
    rnd = _entry(summary, "dev", "random")
    assert rnd["n"] == 3 and rnd["seeds"] == [0, 1, 2] and rnd["kind"] == "policy"
    assert rnd["score_mean"] == pytest.approx(1.0)
    assert rnd["score_se"] == pytest.approx(2.0 / math.sqrt(3))  # sd (ddof=1) = 2
    assert rnd["excess_mean"] == pytest.approx(30.0)
    assert rnd["excess_se"] == pytest.approx(4.0 / math.sqrt(3))
    single = _entry(summary, "other", "random")
    assert single["n"] == 1 and single["score_se"] is None and single["excess_se"] is None
    assert _entry(summary, "dev", "ref:oracle-user")["kind"] == "reference"


def test_order_worlds_as_seen_policies_by_score():
    summary = summarize_rows(ROWS)
    assert [(e["world"], e["policy"]) for e in summary] == [
        ("dev", "ref:oracle-user"),
        ("dev", "coduel:gate=off"),
        ("dev", "random"),
        ("other", "random"),
    ]


def test_duplicate_seed_and_missing_field_raise():
    with pytest.raises(ValueError, match="seed 0 appears twice"):
        summarize_rows([ROWS[0], ROWS[0]])
    with pytest.raises(ValueError, match="no field 'score'"):
        summarize_rows([{"world": "w", "policy": "p", "seed": 0}])


def test_text_format():
    text = format_table(summarize_rows(ROWS), "text")
    lines = text.splitlines()
    assert lines[0] == "world: dev (each seed an independent world)"
    assert lines[1].split()[:2] == ["policy", "seeds"]
    body = lines[3:6]
    assert body[0].startswith("ref:oracle-user [ref]")
    assert body[1].startswith("coduel:gate=off")
    assert "65.00 ± 5.00" in body[1] and "9.0 ± 1.0" in body[1]
    assert re.search(r"90\.00 ± +–", body[0])
    assert body[0].index("±") == body[1].index("±") == body[2].index("±")  # aligned
    assert "world: other" in text


def test_tables_say_what_stands_behind_a_plus_minus(toy_world):
    """Seeds of a roster are independent worlds; seeds of a stored world are orders of one."""
    rows = [{**r, "world": toy_world} for r in ROWS if r["world"] == "dev"] + ROWS
    summary = summarize_rows(rows)
    text = format_table(summary, "text")
    assert f"world: {toy_world} (1 stored world: each seed re-orders its arrivals" in text
    assert "world: dev (each seed an independent world)" in text
    md = format_table(summary, "md")
    assert "± over seeds; 1 stored world: each seed re-orders its arrivals" in md
    records = json.loads(format_table(summary, "json"))
    assert {r["replicates"] for r in records if r["world"] == "dev"} == {
        "each seed an independent world"
    }
    header, first, *_ = format_table(summary, "csv").splitlines()
    assert header.endswith(",replicates") and "1 stored world" in first


def test_markdown_format():
    md = format_table(summarize_rows(ROWS), "md")
    assert "### dev" in md and "### other" in md
    assert "| policy | seeds | score (mean ± s.e.) | excess (mean ± s.e.) |" in md
    assert "| *ref:oracle-user* | 1 | 90.00 ± – | 2.0 ± – |" in md
    assert md.index("ref:oracle-user") < md.index("coduel") < md.index("| random")


def test_markdown_escapes_special_characters():
    md = format_table(summarize_rows([_row("w", "my_pol.py:A|B", 0, 1.0, 1.0)]), "md")
    assert "my\\_pol.py:A\\|B" in md


def test_csv_format():
    text = format_table(summarize_rows(ROWS), "csv")
    records = list(csv.DictReader(io.StringIO(text)))
    assert [r["policy"] for r in records][:3] == ["ref:oracle-user", "coduel:gate=off", "random"]
    assert records[0]["kind"] == "reference" and records[0]["score_se"] == ""
    assert float(records[1]["score_mean"]) == pytest.approx(65.0)
    assert float(records[1]["score_se"]) == pytest.approx(5.0)


def test_json_format():
    data = json.loads(format_table(summarize_rows(ROWS), "json"))
    assert data[0]["policy"] == "ref:oracle-user" and data[0]["score_se"] is None
    assert {d["world"] for d in data} == {"dev", "other"}


def test_empty_and_unknown_format():
    assert format_table([], "text") == ""
    with pytest.raises(ValueError, match="unknown table format 'html'"):
        format_table([], "html")


def test_stats_report_is_the_library_behind_the_command():
    from prefduel.stats.sections import StatsOptions, stats_report

    assert stats_report(ROWS, StatsOptions(worlds="nowhere")) is None
    doc = json.loads(stats_report(ROWS, StatsOptions(fmt="json", competitor="none")))
    assert set(doc) == {"summary"}
    table = format_table(summarize_rows(ROWS), "text")
    assert stats_report(ROWS, StatsOptions(competitor="none")) == table
    with_gains = stats_report(ROWS, StatsOptions())  # default competitor: random, when present
    assert with_gains.startswith(table) and "paired change in excess regret vs random" in with_gains


def test_user_policies_are_shown_by_their_class_name_with_the_spec_noted():
    from pathlib import Path

    spec = f"{Path(__file__).resolve().parents[2] / 'examples/my_policy.py'}:RaterWithWins:weight=3"
    rows = [_row("dev", spec, s, 20.0 + s, 10.0) for s in (0, 1)] + ROWS[:2]
    summary = summarize_rows(rows)
    for fmt in ("text", "md"):
        out = format_table(summary, fmt)
        table = out.split("policies shown by name")[0]
        assert "rater-with-wins:weight=3" in out.replace("\\", "")
        assert spec not in table.replace("\\", "")  # the long spec stays out of the table
        assert f"rater-with-wins:weight=3 = {spec}" in out.replace("\\", "")
    for fmt in ("csv", "json"):  # machine-readable formats keep the identity
        assert spec in format_table(summary, fmt)
