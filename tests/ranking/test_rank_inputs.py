"""Input edge cases of real vote logs: voter ids spelled as missing values, a stray model with
one battle, "both bad" votes kept apart from ties, ID prompts and no timestamps.

Most tests read ``data/pathological_votes.csv`` (see ``data/README.md``), once through the
library and once through ``prefduel rank``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from pb_rank_data import rank

from prefduel.ranking import (
    BattleFormatError,
    BattleSchema,
    battles_from_arrays,
    battles_from_frame,
    bt_ratings,
    read_battles,
)

DATA = Path(__file__).parent / "data" / "pathological_votes.csv"
STRAY = "mistral-m\ufffddium"  # "mistral-m\xe9dium" read with --encoding-errors replace
MODELS = (
    "claude-2.1",
    "gemini-pro",
    "gpt-4-0613",
    "llama-2-70b-chat",
    "mixtral-8x7b-instruct-v0.1",
    "vicuna-33b",
)
MISSING = {"": 3, "NA": 4, "NaN": 10, "None": 2, "null": 3}
FAST = ["--bootstrap", "10", "--mlp-ensemble", "1", "--cv-folds", "3", "--topics", "3"]


def _read(**settings) -> object:
    return read_battles(DATA, BattleSchema(**settings), encoding_errors="replace")


def test_the_fixture_is_not_utf8_and_says_where():
    with pytest.raises(BattleFormatError, match=r"line 139 is not valid UTF-8"):
        read_battles(DATA)


def test_every_pathology_is_handled_and_counted():
    battles = _read(min_model_battles=5)
    assert battles.n_rows == 263 and battles.n == 240
    assert battles.n + sum(battles.skips.values()) == battles.n_rows
    assert battles.models == MODELS
    assert battles.users == tuple(
        f"arena_user_{n}" for n in (1017, 2203, 3571, 4099, 5113, 6247, 7351, 8423)
    )
    assert battles.skips["empty_user"] == sum(MISSING.values()) == 22
    assert battles.missing_users == MISSING
    assert battles.skips["rare_model"] == 1 and battles.excluded_models == {STRAY: 1}
    assert battles.notes["non_utf8_repaired"] == 1
    assert battles.notes["bothbad_as_tie"] == 24 and battles.skips["bothbad"] == 0
    assert battles.time is None  # no timestamps: file order
    # ID prompts are read as they are (the first user turn of each conversation)
    assert battles.prompts is not None and battles.notes["missing_prompt"] == 0
    assert all(len(p) == 32 and int(p, 16) >= 0 for p in battles.prompts)
    summary = battles.summary()
    assert summary["outcomes"] == {"model_a": 93, "model_b": 101, "tie": 22, "bothbad": 24}
    assert summary["ties"] == 46 and summary["excluded_models"] == {STRAY: 1}
    assert summary["missing_users"] == MISSING and summary["min_model_battles"] == 5


def test_a_stray_model_tops_the_fit_unless_excluded():
    kept = _read()  # min_model_battles=1: every model kept, as before
    assert STRAY in kept.models and kept.excluded_models == {}
    fit = bt_ratings(kept)
    assert fit.fallback[0] and not fit.mle_exists[0]  # one win, no loss: no MLE
    assert kept.models[int(np.nanargmax(fit.scores[0]))] == STRAY
    clean = _read(min_model_battles=5)
    fit = bt_ratings(clean)
    assert fit.mle_exists[0] and not fit.fallback[0]
    assert clean.models[int(np.nanargmax(fit.scores[0]))] == "gpt-4-0613"


def test_missing_voter_spellings_can_be_kept_as_ids():
    battles = _read(keep_missing_users=True)
    assert {"NaN", "NA", "null", "None"} <= set(battles.users) and "" not in battles.users
    assert battles.n_users == 12 and battles.skips["empty_user"] == 3
    assert battles.missing_users == {"": 3}
    votes = dict(zip(battles.users, battles.votes_per_user().tolist(), strict=True))
    assert votes["NaN"] == 10 and votes["null"] == 3


def test_bothbad_counts_as_a_tie_or_is_skipped():
    as_tie = _read()
    plain = _read(label_tie=("tie", "tie (bothbad)"), label_bothbad=())
    np.testing.assert_array_equal(as_tie.outcome, plain.outcome)  # same fit as a plain tie
    assert plain.notes["bothbad_as_tie"] == 0 and plain.summary()["outcomes"]["bothbad"] == 0
    skipped = _read(bothbad="skip")
    assert skipped.skips["bothbad"] == 24 and skipped.notes["bothbad_as_tie"] == 0
    assert skipped.n == as_tie.n - 24
    assert skipped.summary()["ties"] == skipped.summary()["outcomes"]["tie"] == 22


def test_missing_spellings_in_json_and_parquet(tmp_path):
    pd = pytest.importorskip("pandas")
    records = [
        {"model_a": "x", "model_b": "y", "winner": "model_a", "judge": "u1"},
        {"model_a": "y", "model_b": "x", "winner": "model_a", "judge": None},
        {"model_a": "x", "model_b": "y", "winner": "tie", "judge": " NULL "},
        {"model_a": "x", "model_b": "y", "winner": "model_b", "judge": "nan"},
        {"model_a": "y", "model_b": "x", "winner": "model_b", "judge": "Nancy"},
    ]
    path = tmp_path / "votes.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    battles = read_battles(path)
    assert battles.users == ("Nancy", "u1")
    assert battles.missing_users == {"": 1, "NULL": 1, "nan": 1}
    frame = pd.DataFrame(records)
    frame.to_parquet(tmp_path / "votes.parquet")
    assert read_battles(tmp_path / "votes.parquet").missing_users == battles.missing_users
    kept = battles_from_frame(frame, BattleSchema(keep_missing_users=True))
    assert kept.users == ("NULL", "Nancy", "nan", "u1")


def test_rare_models_are_excluded_until_none_is_left():
    pairs = [("A", "B")] * 3 + [("B", "C")] * 2 + [("C", "D")]
    a, b = zip(*pairs, strict=True)
    schema = BattleSchema(min_model_battles=3)
    battles = battles_from_arrays(a, b, ["model_a"] * len(pairs), schema=schema)
    # D (1 battle) goes first; without C-D, C has 2 battles and goes next
    assert battles.excluded_models == {"D": 1, "C": 2} and battles.skips["rare_model"] == 3
    assert battles.models == ("A", "B") and battles.n == 3
    with pytest.raises(BattleFormatError, match=r"rare_model: 1.*--min-model-battles"):
        battles_from_arrays(["a"], ["b"], ["model_a"], schema=BattleSchema(min_model_battles=2))


def test_row_policy_settings_are_checked():
    with pytest.raises(BattleFormatError, match=r"--bothbad.*\('tie', 'skip'\).*'loss'"):
        BattleSchema(bothbad="loss")
    with pytest.raises(BattleFormatError, match=r"--min-model-battles.*from 1 to 1,000,000, got 0"):
        BattleSchema(min_model_battles=0)
    with pytest.raises(BattleFormatError, match="min_model_battles"):
        BattleSchema(min_model_battles=2.5)
    with pytest.raises(BattleFormatError, match="keep_missing_users"):
        BattleSchema(keep_missing_users="yes")
    with pytest.raises(BattleFormatError, match="more than one outcome"):
        BattleSchema(label_bothbad=("model_a",))
    schema = BattleSchema.with_labels("model_a,model_b,tie,tie (bothbad)")
    assert schema.label_tie == ("tie",) and schema.label_bothbad == ("tie (bothbad)",)
    assert schema.to_dict()["label_bothbad"] == ["tie (bothbad)"]


def test_rank_reports_every_pathology(tmp_path, capsys):
    out = tmp_path / "report"
    args = [str(DATA), "--out", str(out), "--encoding-errors", "replace", "--min-votes", "20"]
    code = rank([*args, *FAST])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    printed = captured.out
    assert "read 263 rows" in printed and "240 battles, 6 models, 8 users" in printed
    assert "empty_user: 22" in printed and "rare_model: 1" in printed
    assert "missing user ids (skipped as empty_user): (empty): 3, NA: 4, NaN: 10" in printed
    assert "excluded 1 model(s) with fewer than 5 battles" in printed and STRAY in printed
    assert "tie 22, both bad 24 counted as ties" in printed
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    inp = data["input"]
    assert inp["skipped"]["rare_model"] == 1 and inp["excluded_models"] == {STRAY: 1}
    assert inp["missing_users"] == MISSING and inp["outcomes"]["bothbad"] == 24
    assert inp["notes"]["bothbad_as_tie"] == 24 and inp["has_time"] is False
    assert data["schema"]["min_model_battles"] == 5 and data["schema"]["bothbad"] == "tie"
    # the columns actually read: the prompts come from Arena's conversation_a, no timestamps
    assert data["schema"]["prompt"] == "conversation_a" and data["schema"]["time"] is None
    with (out / "models.csv").open(encoding="utf-8") as handle:
        models = [row["model"] for row in csv.DictReader(handle)]
    assert sorted(models) == list(MODELS) and models[0] == "gpt-4-0613"
    assert "rare_model" in (out / "report.md").read_text(encoding="utf-8")


def test_the_schema_records_the_columns_it_found():
    battles = _read()
    assert battles.schema.prompt == "conversation_a" and battles.schema.time is None
    frame_battles = battles_from_frame(
        {"model_a": ["x", "y"], "model_b": ["y", "x"], "winner": ["model_a", "model_b"],
         "judge": ["u", "u"], "tstamp": [2.0, 1.0], "prompt": ["why?", "how?"]},
    )
    assert frame_battles.schema.time == "tstamp" and frame_battles.schema.prompt == "prompt"


def test_rank_row_options_change_what_is_kept(tmp_path, capsys):
    out = tmp_path / "kept"
    args = [str(DATA), "--out", str(out), "--encoding-errors", "replace", "--no-features"]
    options = ["--keep-missing-users", "--bothbad", "skip", "--min-model-battles", "1"]
    assert rank([*args, *options, "--min-votes", "5", "--bootstrap", "5"]) == 0
    printed = capsys.readouterr().out
    assert "12 users" in printed and "24 both bad skipped" in printed
    assert "excluded" not in printed
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["input"]["skipped"]["bothbad"] == 24 and data["input"]["models"] == 7
    assert data["input"]["users"] == 12 and "NaN" in {u["user"] for u in data["per_user"]}
    assert data["schema"]["keep_missing_users"] is True


@pytest.mark.parametrize(
    "option", [["--min-model-battles", "0"], ["--bothbad", "loss"], ["--min-model-battles", "x"]]
)
def test_rank_rejects_bad_row_options(tmp_path, capsys, option):
    assert rank([str(DATA), "--out", str(tmp_path / "o"), *option]) == 2
    assert option[0] in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
