"""Bradley-Terry: agreement with evalica and choix, the MLE existence guard, ridge, batching."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.rng import stream
from prefduel.ranking import (
    RankingError,
    battles_from_arrays,
    bt_bootstrap,
    bt_from_wins,
    bt_per_user,
    bt_ratings,
    strongly_connected,
    to_elo,
    win_matrix,
)

LABELS = np.array(["tie", "model_a", "model_b"], dtype=object)  # outcome codes 0, 1, 2


def _log(n: int = 20_000, m: int = 12, seed: int = 0, tie_rate: float = 0.1):
    rng = stream(seed, "tests", "bt")
    names = np.array([f"m{i:02d}" for i in range(m)], dtype=object)
    s = rng.normal(scale=1.0, size=m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    code = np.where(rng.random(n) < tie_rate, 0, np.where(rng.random(n) < p, 1, 2))
    return names[a], names[b], code


def _labels(outcome: np.ndarray) -> np.ndarray:
    return LABELS[np.where(outcome == 1.0, 1, np.where(outcome == 0.0, 2, 0))]


def test_global_bt_within_half_an_elo_point_of_evalica():
    evalica = pytest.importorskip("evalica")
    xs, ys, code = _log()
    battles = battles_from_arrays(xs, ys, LABELS[code])
    ours = bt_ratings(battles).scores[0]
    winner = {0: evalica.Winner.Draw, 1: evalica.Winner.X, 2: evalica.Winner.Y}
    result = evalica.bradley_terry(xs, ys, [winner[int(c)] for c in code])
    theirs = 1000 + 400 * np.log10(result.scores.reindex(list(battles.models)).to_numpy())
    assert np.abs(ours - theirs).max() < 0.5
    assert np.abs(ours - theirs).max() < 1e-3  # in fact they agree to the solver tolerance


def test_global_bt_within_half_an_elo_point_of_choix():
    choix = pytest.importorskip("choix")
    xs, ys, code = _log(seed=1)
    battles = battles_from_arrays(xs, ys, LABELS[code])
    ours = bt_ratings(battles).scores[0]
    # Ties as half wins: choix's dense spectral ML estimate takes fractional counts.
    wins = win_matrix(battles.a, battles.b, battles.outcome, battles.n_models)
    params = choix.ilsr_pairwise_dense(wins, max_iter=1000, tol=1e-10)
    theirs = 1000 + 400 / np.log(10) * (params - params.mean())
    assert np.abs(ours - theirs).max() < 0.5
    # Without ties, choix's scipy-based ML on the raw comparisons (alpha ~ 0).
    xs, ys, code = _log(n=5000, m=6, seed=2, tie_rate=0.0)
    battles = battles_from_arrays(xs, ys, LABELS[code])
    data = [
        (int(a), int(b)) if s == 1.0 else (int(b), int(a))
        for a, b, s in zip(battles.a, battles.b, battles.outcome, strict=True)
    ]
    params = choix.opt_pairwise(battles.n_models, data, alpha=1e-9, tol=1e-10)
    theirs = 1000 + 400 / np.log(10) * (params - params.mean())
    assert np.abs(bt_ratings(battles).scores[0] - theirs).max() < 0.5


def test_elo_scale_and_anchor():
    wins = np.array([[0.0, 30.0], [10.0, 0.0]])
    fit = bt_from_wins(wins)
    assert fit.scores[0].mean() == pytest.approx(1000.0)
    assert fit.scores[0, 0] - fit.scores[0, 1] == pytest.approx(400 * np.log10(3.0), abs=1e-6)
    np.testing.assert_allclose(
        to_elo(np.array([1.0, -1.0])), 1000 + 400 / np.log(10) * np.array([1, -1])
    )


def test_mle_guard_when_a_model_never_loses():
    # m0 beats everyone and never loses: the MLE sends it to +infinity.
    wins = np.array([[0, 5, 4], [0, 0, 3], [0, 2, 0]], dtype=float)
    fit = bt_from_wins(wins, mode="mle", ridge=0.1)
    assert not fit.mle_exists[0] and fit.fallback[0]
    assert fit.never_lost[0].tolist() == [True, False, False]
    assert fit.never_won[0].tolist() == [False, False, False]
    assert np.all(np.isfinite(fit.scores)) and fit.converged[0]
    assert np.argmax(fit.scores[0]) == 0
    # A model that never wins, through the battles interface.
    battles = battles_from_arrays(
        ["a", "a", "b", "c"], ["b", "c", "c", "a"], ["model_a", "model_a", "tie", "model_b"]
    )
    fit = bt_ratings(battles)
    assert fit.fallback[0] and np.all(np.isfinite(fit.scores))


def test_strong_connectivity():
    cycle = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)
    chain = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float)
    split = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], dtype=float)
    wins = np.stack([cycle, chain])
    seen = np.ones((2, 3), dtype=bool)
    assert strongly_connected(wins, seen).tolist() == [True, False]
    assert not strongly_connected(split[None], np.ones((1, 4), bool))[0]
    fit = bt_from_wins(split)  # two separated groups: no MLE, ridge keeps it finite
    assert fit.fallback[0] and np.all(np.isfinite(fit.scores))


def test_ridge_shrinks_and_mle_is_unregularized():
    xs, ys, code = _log(n=400, m=5, seed=3)
    battles = battles_from_arrays(xs, ys, LABELS[code])
    mle = bt_ratings(battles, "mle")
    ridge = bt_ratings(battles, "ridge", ridge=5.0)
    assert mle.mle_exists[0] and not mle.fallback[0]
    assert np.ptp(ridge.scores) < np.ptp(mle.scores)
    # The MLE is a stationary point of the unpenalized likelihood.
    wins = win_matrix(battles.a, battles.b, battles.outcome, battles.n_models)
    beta = mle.logits[0]
    p = 1 / (1 + np.exp(-(beta[:, None] - beta[None, :])))
    grad = (wins - (wins + wins.T) * p).sum(axis=1)
    assert np.abs(grad).max() < 1e-6


def test_per_user_batched_fits_equal_single_fits():
    rng = stream(0, "tests", "bt-users")
    m, users = 6, 25
    user = rng.integers(0, users, 1500)
    a = rng.integers(0, m, user.size)
    b = (a + rng.integers(1, m, user.size)) % m
    s = rng.normal(size=(users, m))
    p = 1 / (1 + np.exp(-(s[user, a] - s[user, b])))
    labels = np.where(rng.random(user.size) < p, "model_a", "model_b").astype(object)
    names = np.array([f"m{i}" for i in range(m)], dtype=object)
    # user 0 only ever compares m0 and m1, so four models are unseen for them
    keep0 = (user != 0) | ((a < 2) & (b < 2))
    battles = battles_from_arrays(
        names[a][keep0], names[b][keep0], labels[keep0], [f"u{u:02d}" for u in user[keep0]]
    )
    for mode in ("mle", "ridge"):
        batched = bt_per_user(battles, mode=mode)
        for u in range(battles.n_users):
            sel = battles.user == u
            models = np.asarray(battles.models, dtype=object)
            one = battles_from_arrays(
                models[battles.a[sel]], models[battles.b[sel]], _labels(battles.outcome[sel])
            )
            single = bt_ratings(one, mode=mode)
            got = batched.scores[u]
            idx = [battles.models.index(x) for x in one.models]
            assert np.isnan(np.delete(got, idx)).all()
            np.testing.assert_allclose(got[idx], single.scores[0], atol=1e-6)
            assert batched.fallback[u] == single.fallback[0]
    assert np.isnan(bt_per_user(battles).scores[0]).sum() == m - 2


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    xs, ys, code = _log(n=3000, m=6, seed=4)
    battles = battles_from_arrays(xs, ys, LABELS[code])
    one = bt_bootstrap(battles, stream(0, "boot"), 200)
    two = bt_bootstrap(battles, stream(0, "boot"), 200)
    other = bt_bootstrap(battles, stream(1, "boot"), 200)
    np.testing.assert_array_equal(one.scores, two.scores)
    assert not np.array_equal(one.scores, other.scores)
    lo, hi = np.quantile(one.scores, [0.025, 0.975], axis=0)
    est = bt_ratings(battles).scores[0]
    assert np.all((lo <= est) & (est <= hi))


def test_bad_settings_raise():
    with pytest.raises(RankingError, match="BT mode"):
        bt_from_wins(np.ones((2, 2)), mode="map")
    with pytest.raises(RankingError, match="ridge"):
        bt_from_wins(np.ones((2, 2)), mode="ridge", ridge=0.0)
    with pytest.raises(RankingError, match="non-negative"):
        bt_from_wins(-np.ones((2, 2)))
