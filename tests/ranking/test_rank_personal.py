"""Per-user rankings vs the global one: Spearman over seen models, summary, tests, and the
recovery of the planted taste clusters of the synthetic generator."""

from __future__ import annotations

import numpy as np
import pytest
from pb_rank_data import analysis, truth_cluster

from prefduel.ranking import (
    RankingError,
    battles_from_arrays,
    correlation_summary,
    correlation_tests,
    eligible_users,
    personal_ratings,
    spearman_to_global,
    synthetic_arena,
)

nan = np.nan


def test_spearman_uses_only_the_models_the_user_saw():
    global_scores = np.array([4.0, 3.0, 2.0, 1.0, 0.0])
    users = np.array(
        [
            [9.0, 8.0, 7.0, nan, nan],  # same order on its 3 models
            [1.0, 2.0, 3.0, nan, nan],  # reversed
            [nan, 5.0, nan, 6.0, 1.0],  # m3 > m1 > m4 vs global m1 > m3 > m4
            [1.0, 1.0, nan, nan, nan],  # constant: undefined
            [nan, nan, nan, nan, 1.0],  # one model: undefined
        ]
    )
    rho = spearman_to_global(users, global_scores)
    np.testing.assert_allclose(rho[:3], [1.0, -1.0, 0.5])
    assert np.isnan(rho[3:]).all()
    with pytest.raises(RankingError, match="user scores"):
        spearman_to_global(users[:, :3], global_scores)


def test_summary_and_wilcoxon_tests():
    rho = np.array([0.9, 0.45, 0.05, -0.2, nan])
    summary = correlation_summary(rho)
    assert summary["n"] == 4 and summary["undefined"] == 1
    assert summary["mean"] == pytest.approx(0.3)
    assert summary["median"] == pytest.approx(0.25)
    assert summary["sd"] == pytest.approx(np.std([0.9, 0.45, 0.05, -0.2], ddof=1))
    assert summary["share_below_0.1"] == 0.5 and summary["share_below_0.5"] == 0.75
    rng = np.random.default_rng(0)
    high = np.clip(rng.normal(0.6, 0.1, 40), -1, 1)
    zero = rng.normal(0.0, 0.2, 40)
    tests = correlation_tests(high, zero)
    assert tests["elo_vs_0"]["p"] < 1e-6 and tests["bt_vs_0"]["p"] > 0.01
    assert tests["elo_vs_bt"]["p"] < 1e-6 and tests["elo_vs_bt"]["n"] == 40
    assert correlation_summary(np.array([nan]))["mean"] is None


def test_min_votes_filters_and_counts_users():
    battles = battles_from_arrays(
        ["a", "b", "a", "c", "a"],
        ["b", "c", "c", "a", "b"],
        ["model_a", "model_b", "tie", "model_a", "model_b"],
        ["u", "u", "u", "v", "w"],
    )
    assert eligible_users(battles, 2).tolist() == [0]
    ratings = personal_ratings(battles, 2)
    assert ratings.users.tolist() == [0] and ratings.below_min_users == 2
    assert ratings.below_min_battles == 2
    with pytest.raises(RankingError, match="the most active has 3"):
        personal_ratings(battles, 4)


def test_synthetic_generator_is_seeded():
    one, truth = synthetic_arena(n_users=6, n_models=4, votes=(5, 8), seed=7)
    two, _ = synthetic_arena(n_users=6, n_models=4, votes=(5, 8), seed=7)
    other, _ = synthetic_arena(n_users=6, n_models=4, votes=(5, 8), seed=8)
    assert one.equals(two) and not one.equals(other)
    assert list(one.columns[:5]) == ["model_a", "model_b", "winner", "judge", "tstamp"]
    assert set(one["winner"]) <= {"model_a", "model_b", "tie", "tie (bothbad)"}
    assert truth.strengths.shape == (6, 4)
    # the niche tastes are opposed and orthogonal to the global one
    _, big = synthetic_arena(n_users=3, n_models=8, votes=(1, 1), seed=0)
    np.testing.assert_allclose(big.taste[1], -big.taste[2])
    assert abs(big.taste[0] @ big.taste[1]) < 1e-9


def test_planted_structure_is_recovered():
    battles, truth, result = analysis()
    cluster = truth_cluster(battles, truth, result.personal.users)
    global_taste = cluster == 0
    for rho, high in ((result.rho_bt, 0.6), (result.rho_elo, 0.4)):
        assert np.nanmean(rho[global_taste]) > high
        for c in (1, 2):
            assert abs(np.nanmean(rho[cluster == c])) < 0.3
    # the global BT ranking is the global taste's ranking
    order = np.argsort(-result.global_ratings.bt)
    taste = truth.taste[0][[truth.models.index(m) for m in battles.models]]
    assert np.corrcoef(np.argsort(np.argsort(-taste)), np.argsort(order))[0, 1] > 0.8
    summary = result.summary_bt
    assert summary["n"] == result.personal.users.size
    assert 0.3 < summary["share_below_0.5"] < 0.8  # about half the users depart


def test_analyze_reports_its_stages_in_order():
    """rank ran silently for tens of seconds; the CLI shows these stages as they start."""
    from pb_rank_data import FAST

    from prefduel.ranking import analyze

    battles = analysis()[0]
    seen: list[str] = []
    analyze(battles, FAST, on_stage=seen.append)
    assert seen == [
        "global ratings",
        "per-user ratings",
        "held-out log-loss",
        "topics",
        "style features",
        "meta-styles",
        "prediction",
    ]
