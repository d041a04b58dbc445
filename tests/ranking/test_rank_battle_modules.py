"""The battle-log modules behind `prefduel.ranking.battles`: its public names stay importable
from there, file formats are told from suffixes, tables round-trip through files, and
validation counts each dropped row once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from prefduel.ranking import battle_files, battle_schema, battle_validation, battles
from prefduel.ranking.errors import BattleFormatError


def test_battles_re_exports_the_pieces_it_is_made_of():
    for name in battles.__all__:
        assert hasattr(battles, name), name
    assert battles.Battles is battle_schema.Battles
    assert battles.BattleSchema is battle_schema.BattleSchema
    assert battles.SKIP_REASONS is battle_schema.SKIP_REASONS
    assert battles.NOTE_REASONS is battle_schema.NOTE_REASONS
    assert battles.first_user_turn is battle_validation.first_user_turn


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("v.csv", "csv"),
        ("v.JSON", "json"),
        ("v.jsonl", "jsonl"),
        ("v.ndjson", "jsonl"),
        ("v.parquet", "parquet"),
        ("v.pq", "parquet"),
    ],
)
def test_format_of_reads_the_suffix(name: str, fmt: str):
    assert battle_files.format_of(Path(name), None) == fmt


def test_format_of_prefers_an_explicit_format_and_names_the_option_otherwise():
    assert battle_files.format_of(Path("votes.txt"), "jsonl") == "jsonl"
    with pytest.raises(BattleFormatError, match=r"'\.txt'.*--format"):
        battle_files.format_of(Path("votes.txt"), None)
    with pytest.raises(BattleFormatError, match="format must be one of"):
        battle_files.format_of(Path("votes.csv"), "xml")


def test_a_csv_round_trip_keeps_conversations_and_defuses_formulas(tmp_path: Path):
    pd = pytest.importorskip("pandas")
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    frame = pd.DataFrame(
        {"model_a": ["=cmd()", "b"], "conversation_a": [turns, []], "score": [-1.5, 2.0]}
    )
    path = tmp_path / "votes.csv"
    battle_files.write_frame(frame, path, "csv")
    counts: dict[str, int] = {}
    back = battle_files.read_frame(path, "csv", "error", counts)
    assert back["model_a"].tolist() == ["'=cmd()", "b"]
    assert json.loads(back["conversation_a"][0]) == turns
    assert back["score"].tolist() == ["-1.5", "2.0"]  # numbers are not made formula-safe
    assert counts == {}


def test_read_frame_drops_and_counts_lines_that_are_not_utf8(tmp_path: Path):
    pytest.importorskip("pandas")
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b'{"model_a": "a"}\n{"model_a": "\xff"}\n{"model_a": "b"}\n')
    counts: dict[str, int] = {}
    frame = battle_files.read_frame(path, "jsonl", "skip", counts)
    assert frame["model_a"].tolist() == ["a", "b"]
    assert counts == {"non_utf8": 1}
    with pytest.raises(BattleFormatError, match="line 2 is not valid UTF-8"):
        battle_files.read_frame(path, "jsonl", "error", {})


def test_validate_columns_counts_each_dropped_row_under_its_first_reason():
    pytest.importorskip("pandas")
    columns = {
        "model_a": np.array(["a", "", "a", "b", " b "], dtype=object),
        "model_b": np.array(["b", "b", "a", "c", "a"], dtype=object),
        "winner": np.array(["model_a", None, "tie", None, "model_b"], dtype=object),
        "judge": np.array(["u1", "u1", "u2", "u2", "u3"], dtype=object),
    }
    schema = battle_schema.BattleSchema()
    result = battle_validation.validate_columns(
        columns, 5, schema, None, None, "<test>", "error", {"non_utf8": 2}
    )
    assert result.skips["missing_model"] == 1  # also lacks a winner: counted once
    assert result.skips["missing_winner"] == 1
    assert result.skips["self_battle"] == 1
    assert result.skips["non_utf8"] == 2 and result.n_rows == 7
    assert result.models == ("a", "b")  # "c" only appears in a dropped row
    assert result.users == ("u1", "u3")
    np.testing.assert_array_equal(result.a, [0, 1])
    np.testing.assert_array_equal(result.outcome, [1.0, 0.0])


def test_check_columns_finds_the_optional_columns_and_names_missing_ones():
    pd = pytest.importorskip("pandas")
    schema = battle_schema.BattleSchema()
    frame = pd.DataFrame(columns=["model_a", "model_b", "winner", "judge", "tstamp", "prompt"])
    assert battle_validation.check_columns(frame, schema, "<t>") == ("tstamp", "prompt")
    with pytest.raises(BattleFormatError, match=r"'judge' \(--user-col\)"):
        battle_validation.check_columns(frame.drop(columns="judge"), schema, "<t>")
