"""Per-user leaderboards: ``user_models.csv``, ``--bt-mode hier`` and ``prefduel rank --user``.

Each analysed user's leaderboard holds, per model they evaluated, their battles with it, Elo,
BT with a 95% interval and a rank with a 95% interval, from the BT estimate named in the
``estimate`` column (the hierarchical fit, or per-user MLE/ridge with Laplace intervals).
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from pb_rank_data import analysis, arena, rank

from prefduel.ranking import RankConfig, RankingError, analyze, battles_from_frame, write_battles
from prefduel.ranking.hier import bt_hierarchical, user_wins
from prefduel.ranking.personal import find_user, personal_ratings

FAST = ["--bootstrap", "10", "--no-features", "--min-votes", "30"]


@pytest.fixture(scope="module")
def hier_result():
    """An analysis with --bt-mode hier (no features: only the ratings matter here)."""
    battles = battles_from_frame(arena(seed=2, n_users=30)[0])
    config = RankConfig(bt_mode="hier", min_votes=30, bootstrap=20, features=False)
    return battles, analyze(battles, config)


def test_user_leaderboards_are_the_hierarchical_fit(hier_result):
    battles, result = hier_result
    p = result.personal
    fit = bt_hierarchical(battles, p.users, seed=0)
    table = result.user_model_columns()
    assert len(table["user"]) == int(p.seen.sum()) == int(fit.seen.sum())
    assert set(table["estimate"]) == {"hierarchical"} and p.tau == fit.tau
    user_row = {u: i for i, u in enumerate(p.users.tolist())}
    model_col = {m: j for j, m in enumerate(battles.models)}
    name_row = {battles.users[u]: user_row[u] for u in p.users.tolist()}
    for k in range(len(table["user"])):
        i, j = name_row[table["user"][k]], model_col[table["model"][k]]
        assert fit.seen[i, j]
        assert table["bt"][k] == fit.scores[i, j]
        assert table["bt_lo"][k] == fit.lo[i, j] and table["bt_hi"][k] == fit.hi[i, j]
        assert table["rank_lo"][k] <= table["rank"][k] <= table["rank_hi"][k]
    # ranks are 1..m over each user's own models, best score first
    first = battles.users[p.users[0]]
    mine = [k for k in range(len(table["user"])) if table["user"][k] == first]
    scores = [table["bt"][k] for k in mine]
    assert [table["rank"][k] for k in mine] == list(range(1, len(mine) + 1))
    assert scores == sorted(scores, reverse=True)
    # battles: that user's battles with that model, summing to twice their votes
    assert sum(table["battles"][k] for k in mine) == 2 * int(p.votes[0])


def test_per_user_mle_intervals_are_the_inverse_fisher_information():
    battles = battles_from_frame(arena(seed=0, n_users=40)[0])
    ratings = personal_ratings(battles, 30)
    i = int(np.flatnonzero(ratings.bt_estimate == "mle")[0])
    wins = user_wins(battles, ratings.users[[i]])[0]
    seen = np.flatnonzero(ratings.seen[i])
    theta = np.log(10) / 400 * ratings.bt[i, seen]
    p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    weight = (wins + wins.T)[np.ix_(seen, seen)] * p * (1 - p)
    laplacian = np.diag(weight.sum(axis=1)) - weight
    sd = np.sqrt(np.diag(np.linalg.pinv(laplacian)))
    half = 1.959963984540054 * 400 / np.log(10) * sd
    np.testing.assert_allclose(ratings.bt_hi[i, seen] - ratings.bt[i, seen], half, rtol=1e-9)
    assert np.isnan(ratings.bt_lo[i, ~ratings.seen[i]]).all()
    assert set(ratings.bt_estimate) <= {"mle", "ridge"}
    assert (ratings.bt_estimate == "ridge").sum() == ratings.bt_fallback.sum()


def test_rank_intervals_hold_the_point_rank_for_every_user():
    _, _, result = analysis()
    p = result.personal
    assert ((p.rank_lo <= p.rank) & (p.rank <= p.rank_hi))[p.seen].all()
    assert (p.rank_lo[p.seen] >= 1).all()
    assert (p.rank_hi[p.seen] <= np.repeat(p.seen.sum(axis=1), p.seen.sum(axis=1))).all()
    assert (p.rank[~p.seen] == 0).all()


def test_user_models_files_and_the_user_option(tmp_path, capsys):
    frame = arena(seed=5, n_users=40)[0]
    path = tmp_path / "votes.csv"
    write_battles(frame, path)
    out = tmp_path / "out"
    user = sorted(frame["judge"].unique())[3]
    votes = int((frame["judge"] == user).sum())
    assert rank([str(path), "--out", str(out), *FAST, "--bt-mode", "hier", "--user", user]) == 0
    printed = capsys.readouterr().out
    assert f"user {user}: {votes} votes over" in printed and "BT estimate: hierarchical" in printed
    assert "global rank 95%" in printed and "user_models.csv" in printed
    with (out / "user_models.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == [
        "user", "model", "battles", "elo", "bt", "bt_lo", "bt_hi",
        "rank", "rank_lo", "rank_hi", "estimate",
    ]  # fmt: skip
    mine = [r for r in rows if r["user"] == user]
    assert sum(int(r["battles"]) for r in mine) == 2 * votes
    for r in mine:  # the printed table shows the same numbers
        assert f"{r['model']}  " in printed and f"{float(r['bt']):.1f}" in printed
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["per_user_bt"]["mode"] == "hier" and data["per_user_bt"]["tau"] > 0
    assert data["per_user_bt"]["estimates"]["hierarchical"] == data["users"]["analysed"]
    if (out / "user_models.parquet").exists():
        import pandas as pd

        table = pd.read_parquet(out / "user_models.parquet")
        assert len(table) == len(rows) and table["user"].tolist() == [r["user"] for r in rows]


def test_the_user_option_refuses_sparse_and_unknown_users(tmp_path, capsys):
    frame = arena(seed=5, n_users=40)[0]
    path = tmp_path / "votes.csv"
    write_battles(frame, path)
    counts = frame["judge"].value_counts()
    sparse, votes = counts.index[-1], int(counts.iloc[-1])
    args = [str(path), "--out", str(tmp_path / "o"), *FAST[:3]]
    assert rank([*args, "--min-votes", str(votes + 1), "--user", sparse]) == 2
    err = capsys.readouterr().err
    assert f"user {sparse!r} cast {votes} votes, fewer than --min-votes {votes + 1}" in err
    assert not (tmp_path / "o" / "report.json").exists()
    typo = sparse.upper()
    assert rank([*args, "--user", typo]) == 2
    err = capsys.readouterr().err
    assert f"unknown user {typo!r}" in err and f"close matches: {sparse!r}, " in err
    assert rank([*args, "--user", sparse[:-1]]) == 2  # a digit short: still suggested
    assert f"{sparse!r}" in capsys.readouterr().err.split("close matches:")[1]
    battles = battles_from_frame(frame)
    assert battles.users[find_user(battles, sparse, 1)] == sparse
    with pytest.raises(RankingError, match="no close match"):
        find_user(battles, "zzzzzzzz", 1)
