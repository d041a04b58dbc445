"""Rows that repeat an earlier row: never counted silently.

A copy of an earlier row with the same user, models, winner, prompt and timestamp is dropped
(the first kept) and counted as ``duplicate``; a repeat without a timestamp is kept and
counted as ``duplicate_untimed``. Both show in the lines ``rank`` prints after reading, in
``report.json``'s input counts and in the report's skip and caveat table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pb_rank_data import arena, rank

from prefduel.ranking import read_battles, write_battles

HEADER = "model_a,model_b,winner,judge,tstamp,prompt\n"
ROWS = [
    "x,y,model_a,u1,1,hello",
    "y,z,model_b,u1,2,again",
    "x,z,tie,u2,3,third",
]


def _log(tmp_path: Path, rows: list[str], name: str = "v.csv") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_exact_copies_are_dropped_and_counted(tmp_path):
    battles = read_battles(_log(tmp_path, [*ROWS, ROWS[0], ROWS[0], ROWS[2]]))
    assert battles.n == 3 and battles.n_rows == 6
    assert battles.skips["duplicate"] == 3
    assert battles.n + sum(battles.skips.values()) == battles.n_rows
    assert battles.summary()["skipped"]["duplicate"] == 3


def test_a_repeat_at_another_time_or_on_another_prompt_is_a_vote(tmp_path):
    rows = [*ROWS, "x,y,model_a,u1,9,hello", "x,y,model_a,u1,1,other", "x,y,model_a,u9,1,hello",
            "y,x,model_b,u1,1,hello", "x,y,tie,u1,1,hello"]
    battles = read_battles(_log(tmp_path, rows))
    assert battles.n == 8 and battles.skips["duplicate"] == 0
    assert battles.notes["duplicate_untimed"] == 0


def test_a_both_bad_vote_is_not_a_copy_of_a_tie(tmp_path):
    rows = ["x,y,tie,u1,1,p", "x,y,tie (bothbad),u1,1,p", "x,y,tie,u1,1,p"]
    battles = read_battles(_log(tmp_path, rows))
    assert battles.n == 2 and battles.skips["duplicate"] == 1


def test_untimed_repeats_are_kept_and_counted(tmp_path):
    rows = ["x,y,model_a,u1,,p", "x,y,model_a,u1,,p", "x,y,model_a,u1,1,p", "x,y,model_a,u1,1,p"]
    battles = read_battles(_log(tmp_path, rows))
    assert battles.n == 3 and battles.skips["duplicate"] == 1
    assert battles.notes["duplicate_untimed"] == 1 and battles.notes["missing_time"] == 2
    no_time = _log(tmp_path, ["x,y,model_a,u1,p", "x,y,model_a,u1,p", "x,y,model_b,u1,p"],
                   name="w.csv")
    no_time.write_text("model_a,model_b,winner,judge,prompt\n" + no_time.read_text().split(
        "\n", 1)[1])
    plain = read_battles(no_time)
    assert plain.n == 3 and plain.notes["duplicate_untimed"] == 1


def test_the_first_copy_is_kept_and_order_is_unchanged(tmp_path):
    rows = ["x,y,model_a,u1,5,five", "x,y,model_b,u1,1,one", "x,y,model_a,u1,5,five"]
    battles = read_battles(_log(tmp_path, rows))
    assert battles.prompts.tolist() == ["one", "five"] and battles.skips["duplicate"] == 1


def test_rank_shows_duplicates_in_terminal_json_and_report(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    frame = arena(seed=2, n_users=30)[0]
    twice = pd.concat([frame, frame.iloc[:5]], ignore_index=True)  # five votes written twice
    path = write_battles(twice, tmp_path / "votes.jsonl")
    out = tmp_path / "o"
    assert rank([str(path), "--out", str(out), "--no-features", "--no-progress",
                 "--bootstrap", "5", "--min-votes", "10"]) == 0
    printed = capsys.readouterr().out
    assert "duplicate: 5" in printed
    assert "5 exact duplicate rows dropped" in printed
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["input"]["skipped"]["duplicate"] == 5
    assert data["input"]["rows_read"] == len(frame) + 5 == data["input"]["battles"] + 5
    markdown = (out / "report.md").read_text(encoding="utf-8")
    line = next(x for x in markdown.splitlines() if "| duplicate |" in x)
    assert line.rstrip(" |").endswith("5") and "timestamp" in line
