"""``prefduel worlds build --from-votes``: what the world is made of, its provenance and check,
that it runs like any world, and that a bad log or folder fails by name with nothing left."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from pb_votes import planted_log, write_log
from prefduel.cli.main import main
from prefduel.ranking.vote_model import leave_one_out_strengths
from prefduel.runner.store import ResultsStore
from prefduel.voteworlds import BuildSettings, build_votes_world
from prefduel.voteworlds import build as build_module
from prefduel.worlds import get_world, load_world


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A log with 3 categories, 40 planted voters and 2 rarely voted models, built into a
    world with the default settings (the result and the log's path)."""
    folder = tmp_path_factory.mktemp("build")
    frame, _ = planted_log(voters=40, categories=3, extra_models=2, votes=(30, 40), seed=21)
    sparse = frame["judge"].isin(["voter-0000", "voter-0001"])
    frame = frame[~sparse | (frame.index % 7 == 0)]  # two voters keep only a few votes
    log = folder / "votes.csv"
    frame.to_csv(log, index=False)
    result = build_votes_world(log, folder / "world", BuildSettings(replicates=2, folds=3))
    return result, log


def test_personas_are_the_most_voted_models_and_users_the_voters_with_enough_votes(built):
    result, _ = built
    world = result.world
    assert [p["id"] for p in world.personas] == list(result.selection.battles.models)
    assert sorted(p["id"] for p in world.personas) == [f"model-{i}" for i in range(6)]
    assert (world.K, world.d) == (6, 7)
    assert result.selection.dropped == 2  # the two voters cut down to a few votes
    assert len(world.students) == world.N == 38
    expected = sorted(f"voter-{i:04d}" for i in range(2, 40))
    assert sorted(s["id"] for s in world.students) == expected  # each voter arrives once
    assert sorted(s["voter"] for s in world.students) == expected


def test_rounds_replay_the_voters_own_prompts_with_their_categories(built):
    result, log = built
    world = result.world
    frame = pd.read_csv(log)
    for n in range(3):
        voter = world.students[int(world.student_index[n])]["voter"]
        own = frame[frame["judge"] == voter]
        for s in range(world.S):
            question = world.questions[int(world.question_index[n, s])]
            match = own[own["prompt"] == question["text"]]
            assert len(match) >= 1 and question["category"] == match["category"].iloc[0]
    assert {q["category"] for q in world.questions} == {"cat-0", "cat-1", "cat-2"}


def test_the_rater_feature_is_the_category_strength_fitted_without_the_voter(built):
    result, _ = built
    world, selection, model = result.world, result.selection, result.model
    phi = world.Phi
    assert np.array_equal(phi[..., :6], np.broadcast_to(np.eye(6), phi[..., :6].shape))
    g = phi[..., 6] * world.info["votes"]["features"]["g_scale"]
    names = list(result.log.categories)
    category = np.array([names.index(q["category"]) for q in world.questions])
    voter_of = {selection.battles.users[v]: v for v in selection.voters.tolist()}
    for n in (0, 1):
        voter = voter_of[world.students[int(world.student_index[n])]["voter"]]
        rounds = category[world.question_index[n]]
        assert len(set(rounds.tolist())) > 1
        loo = leave_one_out_strengths(
            selection.battles, selection.category, model, np.full(rounds.size, voter), rounds
        )
        assert np.allclose(g[n], loo, atol=1e-12)
        full = model.base[rounds] - model.base[rounds].mean(axis=1, keepdims=True)
        assert not np.allclose(g[n], full)  # the voter's own votes are left out


def test_provenance_records_the_log_its_reading_and_the_fit(built):
    result, log = built
    info = load_world(result.out).info
    assert info["generator"] == "votes"
    votes = info["votes"]
    assert votes["log"]["sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
    assert votes["log"]["format"] == "csv"
    assert votes["read"]["schema"]["user"] == "judge"
    assert votes["read"]["category_column"] == "category"
    assert votes["settings"]["models"] == 6 and votes["settings"]["min_votes"] == 10
    assert votes["voters"] == {"min_votes": 10, "kept": 38, "dropped": 2}
    assert votes["fit"]["tau"] > 0 and votes["fit"]["tau_category"] > 0
    assert votes["fit"]["categories"] == ["cat-0", "cat-1", "cat-2"]
    assert votes["check"]["holdout"]["world"] < votes["check"]["holdout"]["global"]


def test_the_check_is_saved_beside_the_world(built):
    result, _ = built
    check = json.loads((result.out / "votes" / "check.json").read_text())
    assert check == json.loads(json.dumps(result.check))
    text = (result.out / "votes" / "check.md").read_text()
    assert "held-out log-loss" in text and "| the log |" in text


def test_more_arrivals_than_voters_repeat_each_voter_in_balanced_order(tmp_path):
    log, _ = write_log(tmp_path / "votes.csv", voters=10, votes=(12, 14), seed=22)
    settings = BuildSettings(arrivals=25, rounds=20, replicates=1, folds=2)
    world = build_votes_world(log, tmp_path / "w", settings).world
    assert world.student_index.tolist() == list(range(25))  # each arrival a user of its own
    voters = Counter(s["voter"] for s in world.students)
    assert sorted(voters.values()) == [2] * 5 + [3] * 5
    assert len({s["id"] for s in world.students}) == 25  # voter-0003#1, voter-0003#2, ...
    voter = [s["voter"] for s in world.students]
    a, b = [n for n in range(25) if voter[n] == voter[0]][:2]
    assert np.abs(world.U[a, 0] - world.U[b, 0]).max() > 1e-3  # two draws of one voter
    assert world.S == 20  # voters with 12-14 votes go through them again


def test_the_cli_builds_and_the_world_runs_like_any_world(tmp_path, capsys):
    log, _ = write_log(tmp_path / "votes.csv", voters=30, seed=23)
    world = tmp_path / "world"
    assert main(["worlds", "build", "--from-votes", str(log), "--out", str(world)]) == 0
    out = capsys.readouterr().out
    assert "voters: 30 kept (at least 10 votes among these models), 0 dropped" in out
    assert "held-out log-loss" in out and "the world (5 replicated logs)" in out
    results = tmp_path / "r.jsonl"
    run = ["run", "--worlds", str(world), "--seeds", "0-1", "--policies",
           "random,notransfer,coduel", "--out", str(results), "--jobs", "1", "--no-progress"]
    assert main(run) == 0
    rows = [r for r in ResultsStore(results).rows() if r["kind"] == "policy"]
    assert {(r["policy"], r["seed"]) for r in rows} == {
        (p, s) for p in ("random", "notransfer", "coduel") for s in (0, 1)
    }
    table = capsys.readouterr().out
    assert "built from a vote log" in table
    assert main(["report", str(results), "--out", str(tmp_path / "report")]) == 0
    board = ["leaderboard", "--worlds", str(world), "--seeds", "0-1", "--policies",
             "random,notransfer", "--results", str(results), "--md", str(tmp_path / "lb.md"),
             "--csv", str(tmp_path / "lb.csv"), "--jobs", "1", "--no-progress"]
    assert main(board) == 0
    assert "built from a vote log" in (tmp_path / "lb.md").read_text()
    assert main(["play", "--world", str(world), "--seed", "1", "--out",
                 str(tmp_path / "play.html")]) == 0
    assert main(["replay", str(results), "--world", str(world), "--seed", "1", "--policy",
                 "notransfer", "--out", str(tmp_path / "replay.html")]) == 0


def _fails(capsys, tmp_path, argv, message):
    out = tmp_path / "world"
    assert main(["worlds", "build", "--out", str(out), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".world")] == []


def test_too_few_voters_is_a_named_error(tmp_path, capsys):
    log, _ = write_log(tmp_path / "votes.csv", voters=5, votes=(10, 12), seed=24)
    _fails(capsys, tmp_path, ["--from-votes", str(log), "--min-votes", "50"],
           "0 voter(s) cast at least 50 votes among the 6 models with the most votes")


def test_too_few_models_is_a_named_error(tmp_path, capsys):
    frame, _ = planted_log(voters=1, models=2, votes=(3, 3), seed=25)
    log = tmp_path / "votes.csv"
    frame.to_csv(log, index=False)  # 3 battles: both models below --min-model-battles 5
    _fails(capsys, tmp_path, ["--from-votes", str(log)],
           "no usable battle among 3 rows (rare_model: 3); a lower --min-model-battles")


def test_missing_columns_are_named_as_rank_names_them(tmp_path, capsys):
    log, _ = write_log(tmp_path / "votes.csv", voters=5, seed=26)
    _fails(capsys, tmp_path, ["--from-votes", str(log), "--user-col", "worker"],
           "missing column(s) 'worker' (--user-col)")
    _fails(capsys, tmp_path, ["--from-votes", str(log), "--category-col", "topic"],
           "missing column 'topic' (--category-col)")


def test_a_failure_while_writing_leaves_nothing(tmp_path, monkeypatch):
    log, _ = write_log(tmp_path / "votes.csv", voters=12, seed=27)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(build_module, "write_check", broken)
    with pytest.raises(OSError, match="disk full"):
        build_votes_world(log, tmp_path / "world", BuildSettings(replicates=1, folds=2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["votes.csv"]


def test_an_out_folder_that_is_not_empty_is_refused_before_reading(tmp_path, capsys):
    out = tmp_path / "world"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["worlds", "build", "--from-votes", "missing.csv", "--out", str(out)]) == 2
    assert "is a folder that is not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_an_empty_out_folder_is_filled(tmp_path):
    log, _ = write_log(tmp_path / "votes.csv", voters=12, seed=28)
    (tmp_path / "world").mkdir()
    build_votes_world(log, tmp_path / "world", BuildSettings(replicates=1, folds=2))
    assert get_world(str(tmp_path / "world"), 4).N == 12


def test_build_options_without_build_are_refused(capsys):
    assert main(["worlds", "dev", "--min-votes", "3"]) == 2
    assert "--min-votes go with `prefduel worlds build" in capsys.readouterr().err


def test_the_world_folder_gets_the_usual_permissions(tmp_path):
    log, _ = write_log(tmp_path / "votes.csv", voters=12, seed=29)
    build_votes_world(log, tmp_path / "world", BuildSettings(replicates=1, folds=2))
    (tmp_path / "plain").mkdir()
    assert (tmp_path / "world").stat().st_mode == (tmp_path / "plain").stat().st_mode
