"""The fitted model of a vote log behind a world built from it: the hierarchical fit on cells
is rank's hierarchical fit when there is one category, category effects are recovered, the
leave-one-voter-out strengths are a refit without the voter, and the predictive checks
separate a faithful model from the global ranking."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from pb_votes import planted_log, write_log
from prefduel.ranking import BattleFormatError, battles_from_frame
from prefduel.ranking.bt import bt_ratings
from prefduel.ranking.hier import bt_hierarchical
from prefduel.ranking.hier_cells import battle_cells, fit_groups
from prefduel.ranking.vote_check import holdout_check, rho_check
from prefduel.ranking.vote_log import NO_CATEGORY, read_vote_log
from prefduel.ranking.vote_model import (
    among_models,
    fit_vote_model,
    leave_one_out_strengths,
    top_models,
)


def _log(tmp_path, **settings):
    path, truth = write_log(tmp_path / "votes.csv", **settings)
    return read_vote_log(path), truth


def test_one_category_is_ranks_hierarchical_fit(tmp_path):
    log, _ = _log(tmp_path, voters=80, seed=1)
    battles = log.battles
    rank = bt_hierarchical(battles)
    beta = np.nan_to_num(bt_ratings(battles, "mle").logits[0])
    cells = battle_cells(
        battles.a, battles.b, battles.outcome, battles.user,
        np.zeros(battles.n, dtype=np.int64), battles.n_users, battles.n_models,
    )
    fit = fit_groups(cells, beta[None])
    theta = beta + fit.delta
    assert fit.tau == pytest.approx(rank.tau, rel=1e-9)
    assert np.abs(theta - theta.mean(axis=1, keepdims=True) - rank.logits).max() < 1e-9
    sd = np.sqrt(np.diagonal(np.linalg.inv(fit.precision), axis1=1, axis2=2))
    assert np.abs(sd - rank.sd).max() < 1e-9
    assert fit.log_evidence == pytest.approx(rank.log_evidence, rel=1e-9)


def test_category_effects_and_the_voters_spread_are_recovered(tmp_path):
    log, truth = _log(tmp_path, voters=300, categories=4, category_sd=1.0, seed=2)
    battles = log.battles
    model = fit_vote_model(battles, log.category, 4, np.arange(battles.n_users))
    order = [truth.models.index(m) for m in battles.models]

    def centered(x):  # effects are defined up to a constant per category and one per model
        x = x - x.mean(axis=1, keepdims=True)
        return x - x.mean(axis=0, keepdims=True)

    planted, fitted = centered(truth.gamma[:, order]), centered(model.gamma)
    assert stats.pearsonr(planted.ravel(), fitted.ravel()).statistic > 0.95
    assert log.categories == tuple(truth.categories)
    assert 0.6 < model.tau < 1.2  # planted 1.0; Laplace empirical Bayes runs a little low
    assert model.converged.all()


def test_leave_one_out_is_a_refit_without_the_voter(tmp_path):
    log, _ = _log(tmp_path, voters=60, categories=3, seed=3)
    battles, category = log.battles, log.category
    model = fit_vote_model(battles, category, 3, np.arange(battles.n_users))
    voter, cat = np.array([4, 4, 9]), np.array([0, 2, 1])
    loo = leave_one_out_strengths(battles, category, model, voter, cat)
    for row, (u, c) in enumerate(zip(voter, cat, strict=True)):
        keep = battles.user != u
        rest = dataclasses.replace(
            battles, a=battles.a[keep], b=battles.b[keep], outcome=battles.outcome[keep],
            user=battles.user[keep], prompts=None, rows=None,
        )
        beta = np.nan_to_num(bt_ratings(rest, "mle").logits[0])
        cells = battle_cells(
            rest.a, rest.b, rest.outcome, category[keep], np.zeros(rest.n, dtype=np.int64), 3,
            rest.n_models,
        )
        strengths = beta + fit_groups(cells, beta[None], tau=model.tau_category).delta[c]
        assert np.abs(strengths - strengths.mean() - loo[row]).max() < 1e-8
        full = model.base[c] - model.base[c].mean()
        assert np.abs(full - loo[row]).max() > 1e-6  # the voter's votes did count


def test_the_top_models_are_the_most_voted_and_the_rest_is_dropped(tmp_path):
    log, _ = _log(tmp_path, voters=40, models=4, extra_models=3, seed=4)
    top = top_models(log.battles, 4)
    assert sorted(log.battles.models[i] for i in top) == [f"model-{i}" for i in range(4)]
    among, kept = among_models(log.battles, top)
    assert among.n == kept.sum() < log.battles.n
    assert among.models == tuple(log.battles.models[i] for i in top)
    assert np.all(among.a < 4) and np.all(among.b < 4)


def test_held_out_votes_rank_the_world_model_above_categories_above_the_global_board(tmp_path):
    log, _ = _log(tmp_path, voters=150, categories=3, category_sd=1.0, seed=5)
    battles = log.battles
    check = holdout_check(battles, log.category, 3, np.arange(battles.n_users), folds=4)
    assert check["votes"] == battles.n
    assert check["world"] < check["categories"] < check["global"] < np.log(2)


def test_a_faithful_world_gives_the_logs_correlations(tmp_path):
    log, _ = _log(tmp_path, voters=300, seed=6)
    battles = log.battles
    model = fit_vote_model(battles, log.category, 1, np.arange(battles.n_users))
    check = rho_check(battles, log.category, model, replicates=3, seed=0)
    assert check["log"]["n"] == 300 and check["world"]["n"] == 900
    assert abs(check["log"]["mean"] - check["world"]["mean"]) < 0.05
    assert check["world_without_vote_noise"]["mean"] < check["world"]["mean"]


def test_a_world_blind_to_the_voters_is_caught_by_the_correlation_check(tmp_path):
    log, _ = _log(tmp_path, voters=300, tau=1.5, seed=7)
    battles = log.battles
    model = fit_vote_model(battles, log.category, 1, np.arange(battles.n_users))
    blind = dataclasses.replace(
        model, delta=np.zeros_like(model.delta), precision=model.precision * 1e6
    )
    check = rho_check(battles, log.category, blind, replicates=2, seed=0)
    assert check["world"]["mean"] > check["log"]["mean"] + 0.15


def test_the_category_column_is_read_with_the_rows_of_the_battles(tmp_path):
    frame, _ = planted_log(voters=10, categories=2, seed=8)
    frame.loc[3, "category"] = None
    frame.loc[5, "model_b"] = frame.loc[5, "model_a"]  # a self-battle: skipped
    path = tmp_path / "votes.jsonl"
    frame.to_json(path, orient="records", lines=True)
    log = read_vote_log(path)
    names = np.array(log.categories, dtype=object)[log.category]
    expected = frame["category"].fillna(NO_CATEGORY).to_numpy()[log.battles.rows]
    assert list(names) == list(expected)
    assert 5 not in log.battles.rows and log.battles.n == len(frame) - 1
    assert log.category_column == "category" and log.format == "jsonl"
    assert len(log.sha256) == 64 and log.size == path.stat().st_size


def test_a_named_category_column_must_exist(tmp_path):
    path, _ = write_log(tmp_path / "votes.csv", voters=5)
    assert read_vote_log(path).categories == ("",)  # the default column may be absent
    with pytest.raises(BattleFormatError, match=r"missing column 'topic' \(--category-col\)"):
        read_vote_log(path, category="topic", auto_category=False)


def test_battles_remember_their_data_rows():
    frame, _ = planted_log(voters=4, seed=9)
    frame.loc[0, "winner"] = None
    battles = battles_from_frame(frame)
    assert 0 not in battles.rows
    users = np.array(battles.users, dtype=object)[battles.user]
    assert list(users) == list(frame["judge"].to_numpy()[battles.rows])
