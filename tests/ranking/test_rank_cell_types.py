"""Cells of the wrong type in a vote log: every read column (model_a, model_b, winner, user,
timestamp, prompt or conversation) holding a list, an object, a true/false value, NaN or
infinity, a huge value or deep nesting, in JSONL, JSON, CSV and Parquet.

Each is a named error naming the column and the data row (or the line), or a counted skip
where the rules already define one (a missing value); never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pb_rank_data import rank

from prefduel.ranking import BattleFormatError, BattleSchema, read_battles

ROWS = [
    {"model_a": "m1", "model_b": "m2", "winner": "model_a", "judge": "u1", "tstamp": 10,
     "prompt": "first"},
    {"model_a": "m2", "model_b": "m3", "winner": "model_b", "judge": "u1", "tstamp": 11,
     "prompt": "second"},
    {"model_a": "m3", "model_b": "m1", "winner": "tie", "judge": "u2", "tstamp": 12,
     "prompt": "third"},
    {"model_a": "m1", "model_b": "m3", "winner": "model_a", "judge": "u2", "tstamp": 13,
     "prompt": "fourth"},
]
NAME_COLUMNS = ("model_a", "model_b", "winner", "judge")
#: JSON values no name, label or id can be (label, JSON text, what the error says it is).
NOT_A_NAME = (
    ("list", "[1, 2]", "a list"),
    ("object", '{"a": 1}', "an object"),
    ("bool", "true", "true/false"),
    ("inf", "Infinity", "infinite"),
    ("fraction", "1.5", "not a whole number"),
    ("huge-float", "1e300", "not a whole number"),
)


def _jsonl(path: Path, rows: list[dict[str, Any]], line: int = 0, name: str = "",
           text: str | None = None) -> Path:
    """``rows`` as JSONL; field ``name`` of row ``line`` written as the JSON ``text``."""
    out = []
    for i, row in enumerate(rows):
        parts = [f"{json.dumps(k)}: {text if (i == line and k == name) else json.dumps(v)}"
                 for k, v in row.items()]
        out.append("{" + ", ".join(parts) + "}")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("column", NAME_COLUMNS)
@pytest.mark.parametrize(("label", "text", "said"), NOT_A_NAME, ids=[x[0] for x in NOT_A_NAME])
def test_a_name_label_or_id_of_the_wrong_type_is_a_named_error(tmp_path, column, label, text,
                                                               said):
    path = _jsonl(tmp_path / "v.jsonl", ROWS, 2, column, text)
    with pytest.raises(BattleFormatError) as info:
        read_battles(path)
    message = str(info.value)
    assert f"column {column!r}" in message and "data row 3" in message, message
    assert said in message, message


def test_a_list_as_model_name_is_a_named_error_in_rank(tmp_path, capsys):
    """The reported case: a list where a model name belongs, through ``prefduel rank``."""
    path = _jsonl(tmp_path / "v.jsonl", ROWS, 1, "model_a", '["gpt-4", "claude"]')
    assert rank([str(path), "--out", str(tmp_path / "o"), "--no-features"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "prefduel: error:" in err and "column 'model_a'" in err and "data row 2" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("column", "skip"),
    [("model_a", "missing_model"), ("winner", "missing_winner"), ("judge", "empty_user")],
)
@pytest.mark.parametrize("text", ["null", "NaN", '""'])
def test_a_missing_value_is_a_counted_skip(tmp_path, column, skip, text):
    battles = read_battles(_jsonl(tmp_path / "v.jsonl", ROWS, 2, column, text))
    assert battles.skips[skip] == 1 and battles.n == 3 and battles.n_rows == 4


def test_whole_numbers_are_ids_written_as_digits(tmp_path):
    """Numeric user ids stay the same id when a missing value turns the column into floats."""
    rows = [dict(r, judge=7 if i % 2 else 10**20) for i, r in enumerate(ROWS)]
    rows[0]["judge"] = None
    battles = read_battles(_jsonl(tmp_path / "v.jsonl", rows))
    assert battles.users == ("100000000000000000000", "7") and battles.skips["empty_user"] == 1
    floats = [dict(r, judge=7.0 if i % 2 else None) for i, r in enumerate(ROWS)]
    assert read_battles(_jsonl(tmp_path / "f.jsonl", floats)).users == ("7",)


@pytest.mark.parametrize(
    ("text", "said"),
    [("Infinity", "infinite"), ("true", "true/false"), ("[1, 2]", "a list"),
     ('{"a": 1}', "an object")],
)
def test_a_timestamp_of_the_wrong_type_is_a_named_error(tmp_path, text, said):
    with pytest.raises(BattleFormatError) as info:
        read_battles(_jsonl(tmp_path / "v.jsonl", ROWS, 1, "tstamp", text))
    message = str(info.value)
    assert "column 'tstamp'" in message and "data row 2" in message and said in message


def test_timestamps_missing_or_far_away_are_kept(tmp_path):
    battles = read_battles(_jsonl(tmp_path / "v.jsonl", ROWS, 0, "tstamp", "NaN"))
    assert battles.notes["missing_time"] == 1 and battles.prompts[-1] == "first"
    far = read_battles(_jsonl(tmp_path / "w.jsonl", ROWS, 0, "tstamp", "1e300"))
    assert far.n == 4 and far.prompts[-1] == "first" and np.isfinite(far.time).all()


@pytest.mark.parametrize(
    ("text", "said"),
    [('{"a": 1}', "an object"), ("[1, 2]", "not a conversation"), ("true", "true/false"),
     ('[{"role": "user", "content": {"x": 1}}]', "content"), ("Infinity", "infinite")],
)
def test_a_prompt_of_the_wrong_type_is_a_named_error(tmp_path, text, said):
    with pytest.raises(BattleFormatError) as info:
        read_battles(_jsonl(tmp_path / "v.jsonl", ROWS, 3, "prompt", text))
    message = str(info.value)
    assert "column 'prompt'" in message and "data row 4" in message and said in message


def test_prompt_text_that_looks_like_json_stays_text(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    path = tmp_path / "v.csv"
    path.write_text(
        "model_a,model_b,winner,judge,tstamp,prompt\n"
        f"m1,m2,model_a,u1,1,{deep}\nm2,m1,model_a,u1,2,[1 2]\nm1,m2,tie,u1,3,\"[1, 2]\"\n",
        encoding="utf-8",
    )
    battles = read_battles(path)
    assert battles.prompts.tolist() == [deep, "[1 2]", "[1, 2]"]


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_deep_nesting_is_a_named_error(tmp_path, fmt):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / f"v.{fmt}"
    if fmt == "jsonl":
        _jsonl(path, ROWS, 1, "prompt", deep)
        match = r"line 2 .*nest"
    else:
        path.write_text(json.dumps(ROWS)[:-1] + ", " + deep + "]", encoding="utf-8")
        match = r"nest"
    with pytest.raises(BattleFormatError, match=match):
        read_battles(path)


def test_a_json_list_must_hold_only_records(tmp_path):
    path = tmp_path / "v.json"
    path.write_text(json.dumps([*ROWS, [1, 2]]), encoding="utf-8")
    with pytest.raises(BattleFormatError, match=r"record 5 .*a list"):
        read_battles(path)


def test_overlong_names_are_refused_and_long_values_are_shortened_in_messages(tmp_path):
    long = "y" * 100_000
    with pytest.raises(BattleFormatError) as info:
        read_battles(_jsonl(tmp_path / "v.jsonl", ROWS, 0, "model_b", json.dumps(long)))
    assert "column 'model_b'" in str(info.value) and "characters" in str(info.value)
    assert len(str(info.value)) < 600
    for column in ("winner", "tstamp"):
        with pytest.raises(BattleFormatError) as info:
            read_battles(_jsonl(tmp_path / "w.jsonl", ROWS, 0, column, json.dumps(long)))
        assert len(str(info.value)) < 600 and f"column {column!r}" in str(info.value)


def test_parquet_columns_of_other_types(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame(ROWS)
    frame["tstamp"] = pd.to_datetime(frame["tstamp"], unit="D")
    frame.to_parquet(tmp_path / "ok.parquet")
    battles = read_battles(tmp_path / "ok.parquet")
    assert battles.prompts.tolist() == ["first", "second", "third", "fourth"]
    assert np.diff(battles.time).tolist() == [86400.0] * 3  # seconds
    cases = {
        "model_a": [[1, 2]] * 4,
        "judge": [True, False, True, False],
        "winner": [{"a": 1}] * 4,
    }
    for column, values in cases.items():
        bad = pd.DataFrame(ROWS)
        bad[column] = values
        bad.to_parquet(tmp_path / f"{column}.parquet")
        with pytest.raises(BattleFormatError, match=rf"column '{column}'.*data row 1"):
            read_battles(tmp_path / f"{column}.parquet")


def test_custom_columns_are_named_in_the_error(tmp_path):
    rows = [{("who" if k == "judge" else k): v for k, v in r.items()} for r in ROWS]
    path = _jsonl(tmp_path / "v.jsonl", rows, 3, "who", "[1]")
    with pytest.raises(BattleFormatError, match=r"column 'who'.*data row 4"):
        read_battles(path, BattleSchema(user="who"))


@pytest.mark.parametrize("column", ["model_a", "judge"])
@pytest.mark.parametrize("text", ["a\\u001b[2Jb", "two\\nlines", "tab\\tbed", "nul\\u0000"])
def test_a_name_with_a_control_character_is_a_named_error(tmp_path, column, text):
    """A terminal escape sequence in a model name would act on the terminal rank prints to."""
    with pytest.raises(BattleFormatError) as info:
        read_battles(_jsonl(tmp_path / "v.jsonl", ROWS, 1, column, f'"{text}"'))
    message = str(info.value)
    assert f"column {column!r}" in message and "data row 2" in message
    assert "control character" in message and "\x1b" not in message


def test_a_csv_name_with_a_line_break_is_a_named_error(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text('model_a,model_b,winner,judge\nm1,"m\n2",model_a,u1\n', encoding="utf-8")
    with pytest.raises(BattleFormatError, match=r"column 'model_b', data row 1: .*U\+000A"):
        read_battles(path)
