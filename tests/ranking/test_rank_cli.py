"""``prefduel rank``: end to end on a vote log and on a TutorDuel run's clicks."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
from pb_rank_data import arena, rank

from prefduel.cli.main import main
from prefduel.ranking import (
    CLICK_COLUMNS,
    SKIP_REASONS,
    RankingError,
    trajectory_battles,
    write_battles,
)

FAST = ["--bootstrap", "20", "--mlp-ensemble", "2", "--cv-folds", "3", "--topics", "5"]


@pytest.fixture(scope="module")
def vote_log(tmp_path_factory) -> Path:
    """A small synthetic log renamed to custom columns and labels, with some bad rows."""
    frame = arena(seed=5, n_users=40)[0].rename(
        columns={"model_a": "left", "model_b": "right", "judge": "worker", "winner": "choice"}
    )
    frame["choice"] = frame["choice"].map(
        {"model_a": "L", "model_b": "R", "tie": "T", "tie (bothbad)": "T"}
    )
    bad = frame.iloc[:4].copy()
    bad["right"] = bad["left"]  # 2 self-battles
    bad.iloc[2, bad.columns.get_loc("right")] = "other"
    bad.iloc[2, bad.columns.get_loc("worker")] = ""  # 1 empty user
    bad.iloc[3, bad.columns.get_loc("right")] = "other"
    bad.iloc[3, bad.columns.get_loc("choice")] = "??"  # 1 unknown label
    path = tmp_path_factory.mktemp("votes") / "votes.csv"
    import pandas as pd

    write_battles(pd.concat([frame, bad], ignore_index=True), path)
    return path


def _columns() -> list[str]:
    return [
        "--model-a-col",
        "left",
        "--model-b-col",
        "right",
        "--user-col",
        "worker",
        "--winner-col",
        "choice",
        "--winner-labels",
        "L/R/T",
    ]


def test_rank_writes_self_contained_reports(vote_log, tmp_path, capsys):
    out = tmp_path / "report"
    code = rank(
        [
            str(vote_log),
            "--out",
            str(out),
            *_columns(),
            "--unknown-winner",
            "skip",
            "--min-votes",
            "20",
            "--k",
            "4",
            *FAST,
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "skipped 4 (unknown_winner: 1, self_battle: 2, empty_user: 1)" in captured.out
    assert "Spearman vs global" in captured.out and "predict elo" in captured.out
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["input"]["skipped"] == {k: data["input"]["skipped"][k] for k in SKIP_REASONS}
    assert data["input"]["skipped"]["self_battle"] == 2
    assert data["input"]["skipped"]["unknown_winner"] == 1
    assert data["input"]["skipped"]["empty_user"] == 1
    assert data["config"]["k"] == 4 and data["config"]["min_votes"] == 20
    assert data["users"]["analysed"] == len(data["per_user"]) > 0
    assert {"elo", "bt", "elo_shuffled", "bt_shuffled"} <= set(data["predictions"])
    assert len(data["topics"]["top_words"]) == 5
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") >= 5 and "Every skip and caveat" in page
    assert not re.search(r"<(script|link|img)\b", page)  # no external or scripted resources
    assert not re.search(r"(src|href)=\"https?:", page)
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "](figures/ratings.svg)" in markdown and "| self_battle |" in markdown
    assert "data:image/svg+xml;base64," not in markdown  # figures are linked, not inlined
    with (out / "models.csv").open(encoding="utf-8") as handle:
        models = list(csv.DictReader(handle))
    assert len(models) == data["input"]["models"] and "bt_lo" in models[0]
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "correlations.svg",
        "prediction.svg",
        "ratings.svg",
        "styles.svg",
        "topics.svg",
    ]


def test_rank_bad_input_exits_2_with_a_clear_message(vote_log, tmp_path, capsys):
    out = str(tmp_path / "o")
    assert rank([str(vote_log), "--out", out]) == 2
    assert "missing column(s) 'model_a' (--model-a-col)" in capsys.readouterr().err
    assert rank([str(vote_log), "--out", out, *_columns()]) == 2
    assert "unknown winner label(s) in column 'choice': '??' (1 rows)" in capsys.readouterr().err
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"model_a,model_b,winner,judge\nx,y,model_a,Jos\xe9\n")
    assert rank([str(latin), "--out", out]) == 2
    err = capsys.readouterr().err
    assert "line 2 is not valid UTF-8" in err and "--encoding-errors" in err
    assert rank(["--out", out]) == 2
    assert "exactly one" in capsys.readouterr().err
    assert rank([str(vote_log), "--out", out, "--k", "-1"]) == 2  # argparse usage error


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> tuple[str, Path]:
    """A stored toy world (12 arrivals x 24 rounds x 6 personas) and a random run on it."""
    from pb_toys import save_world

    base = tmp_path_factory.mktemp("clicks")
    world = save_world(base / "toy")
    results = base / "results.jsonl"
    args = ["run", "--worlds", world, "--seeds", "0", "--policies", "random"]
    assert main([*args, "--out", str(results), "--jobs", "1", "--no-progress"]) == 0
    return world, results


def test_click_export_end_to_end(toy_run, tmp_path, capsys):
    world_path, results = toy_run
    out = tmp_path / "clicks"
    args = [
        "--from-run",
        str(results),
        "--world",
        world_path,
        "--seed",
        "0",
        "--policy",
        "random",
        "--out",
        str(out),
    ]
    assert rank([*args, "--export-only"]) == 0
    assert "288 clicks of random" in capsys.readouterr().out
    with (out / "clicks.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 12 * 24 and list(rows[0]) == list(CLICK_COLUMNS)
    assert {r["judge"] for r in rows} == {f"arrival-{n:04d}" for n in range(12)}
    assert all(r["model_a"] != r["model_b"] for r in rows)
    assert not (out / "report.json").exists()

    assert rank([*args, *FAST, "--mlp-ensemble", "1"]) == 0
    printed = capsys.readouterr()
    assert "--min-votes 24" in printed.err
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["users"]["analysed"] == 12 and data["input"]["models"] == 6
    assert data["input"]["skipped_total"] == 0
    # The toy questions have ids, not words: the topic model is skipped with a note.
    assert any("topic model skipped" in m for m in data["messages"])


def test_trajectory_battles_maps_clicks_to_winners(toy_run):
    from prefduel.runner import run_cell
    from prefduel.worlds import get_world

    world_path, _ = toy_run
    world = dataclasses.replace(get_world(world_path, 0), roster=world_path, seed=0)
    trajectory = run_cell(world, "random", keep_trajectory=True)["trajectory"]
    frame = trajectory_battles(world, trajectory, policy="random")
    n, s = 5, 7
    row = frame.iloc[n * world.S + s]
    assert row["arrival"] == n and row["round"] == s and row["tstamp"] == n * world.S + s
    first, second = int(trajectory.first[n, s]), int(trajectory.second[n, s])
    names = [p.get("name") or p.get("id") or f"persona-{i}" for i, p in enumerate(world.personas)]
    names += [f"persona-{i}" for i in range(len(names), world.K)]
    assert (row["model_a"], row["model_b"]) == (names[first], names[second])
    want = "model_a" if trajectory.outcome[n, s] == 1 else "model_b"
    assert row["winner"] == want
    assert np.mean(frame["winner"] == "model_a") == pytest.approx(trajectory.outcome.mean())
    bad = dataclasses.replace(trajectory, first=trajectory.first[:, :3])
    with pytest.raises(RankingError, match="shape"):
        trajectory_battles(world, bad)


def test_csv_tables_neutralise_formulas_but_keep_negative_numbers(tmp_path, capsys):
    """users.csv and models.csv: names like =HYPERLINK(...) get a leading apostrophe."""
    frame = arena(seed=5, n_users=40)[0].copy()
    users = sorted(frame["judge"].unique())
    models = sorted(set(frame["model_a"]) | set(frame["model_b"]))
    evil_user = '=HYPERLINK("http://evil.example","click")'
    evil_model = "+cmd|' /C calc'!A0"
    frame["judge"] = frame["judge"].replace({users[0]: evil_user, users[1]: "@SUM(1+1)"})
    for col in ("model_a", "model_b"):
        frame[col] = frame[col].replace({models[0]: evil_model, models[1]: "-2+3"})
    path = tmp_path / "votes.jsonl"  # JSONL keeps the names verbatim on the way in
    write_battles(frame, path)
    out = tmp_path / "out"
    args = [str(path), "--out", str(out), "--no-features", "--min-votes", "20"]
    assert rank([*args, "--bootstrap", "10"]) == 0, capsys.readouterr().err

    def cells(name: str) -> list[dict[str, str]]:
        with (out / name).open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))

    user_rows = {r["user"]: r for r in cells("users.csv")}
    assert "'" + evil_user in user_rows and "'@SUM(1+1)" in user_rows
    assert evil_user not in user_rows
    model_names = {r["model"] for r in cells("models.csv")}
    assert {"'" + evil_model, "'-2+3"} <= model_names
    assert not any(name[:1] in "=+-@" for name in model_names)
    # Numbers are untouched: negative correlations stay plain negative numbers.
    rhos = [r[k] for r in user_rows.values() for k in ("rho_elo", "rho_bt") if r[k]]
    negative = [v for v in rhos if v.startswith("-")]
    assert negative and all(float(v) < 0 for v in negative)
    assert not any(v.startswith("'") for v in rhos)
    # The JSON report keeps the names as they are.
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert evil_user in {u["user"] for u in data["per_user"]}


def test_missing_input_leaves_no_output_folder(tmp_path, capsys):
    out = tmp_path / "r"
    missing = tmp_path / "nosuch.csv"
    assert rank([str(missing), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "prefduel: error:" in err and str(missing) in err and "does not exist" in err
    assert not out.exists()
    nested = tmp_path / "a" / "b"
    assert rank(["--from-run", str(tmp_path / "nosuch.jsonl"), "--out", str(nested)]) == 2
    assert str(tmp_path / "nosuch.jsonl") in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
