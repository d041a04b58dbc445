"""Topic and style profiles, style clusters, and prediction of per-user scores."""

from __future__ import annotations

import numpy as np
import pytest
from pb_rank_data import analysis, truth_cluster

from prefduel.ranking import (
    STYLE_FEATURES,
    PredictorSpec,
    RankingError,
    fit_topics,
    handcrafted_features,
    predict_scores,
    user_profiles,
)

F = {name: i for i, name in enumerate(STYLE_FEATURES)}


def test_handcrafted_features_measure_what_they_say():
    texts = [
        "Hello! Could you please help me? Thanks!",
        "def f(x):\n    return x;\n```",
        "- one\n- two\n1. three",
        "solve 3x + 4 = 10",
        "YOU ARE USELESS, stupid bot...",
        "Act as a pirate and imagine the sea. See https://example.org",
        "",
    ]
    x = handcrafted_features(texts)
    assert x.shape == (len(texts), len(STYLE_FEATURES)) and np.all(np.isfinite(x))
    assert x[0, F["politeness"]] > 0 and x[0, F["questions"]] > 0 and x[0, F["greeting"]] == 1
    assert x[1, F["code"]] > 0 and x[0, F["code"]] == 0
    assert x[2, F["lists"]] == 1.0
    assert x[3, F["digits"]] > 0 and x[3, F["imperative"]] == 1
    assert x[4, F["hostility"]] == 1 and x[4, F["allcaps_words"]] > 0.5 and x[4, F["ellipsis"]] > 0
    assert x[5, F["roleplay"]] == 1 and x[5, F["urls"]] == 1
    assert x[6, F["log_chars"]] == 0


def test_topic_model_and_user_profiles():
    docs = ["python code function bug"] * 5 + ["poem story dragon castle"] * 5
    topics = fit_topics([*docs, "python function"], 2, seed=0)
    assert topics.doc_topics.shape == (3, 2) and len(topics.texts) == 3
    np.testing.assert_allclose(topics.doc_topics.sum(axis=1), 1.0)
    profiles, counts = user_profiles(np.eye(3), np.array([0, 0, 2]), 4)
    np.testing.assert_allclose(profiles[0], [0.5, 0.5, 0.0])
    assert counts.tolist() == [2, 0, 1, 0] and np.isnan(profiles[1]).all()
    with pytest.raises(RankingError, match="at least 2 distinct"):
        fit_topics(["same", "same", ""], 2)
    with pytest.raises(RankingError, match="topic backend"):
        fit_topics(docs, 2, backend="bertopic")


def test_profiles_and_style_clusters_recover_the_voices():
    from sklearn.metrics import adjusted_rand_score

    battles, truth, result = analysis()
    users = result.personal.users[result.feature_users]
    voice = truth_cluster(battles, truth, users)
    assert result.user_topics.shape == (users.size, result.config.n_topics)
    np.testing.assert_allclose(result.user_topics.sum(axis=1), 1.0)
    assert result.user_style.shape == (users.size, len(STYLE_FEATURES))
    assert result.styles.scores.shape[1] == result.config.meta_styles
    assert adjusted_rand_score(voice, result.styles.clusters) > 0.8


def test_prediction_beats_the_mean_only_when_features_carry_the_signal():
    _, _, result = analysis()
    for target in ("elo", "bt"):
        real = result.predictions[target]
        shuffled = result.predictions[f"{target}_shuffled"]
        assert real.gain > 0.15 and real.ci_gain[0] > 0.05 and real.p_value < 1e-3
        assert real.mae_model < real.ci_mean[0]
        assert shuffled.gain < 0.05 and shuffled.ci_gain[0] < 0.0
    assert result.predictions["elo"].spec.kind == "ensemble"
    assert result.predictions["bt"].spec.kind == "single"


def test_prediction_input_checks():
    with pytest.raises(RankingError, match="same U"):
        predict_scores(np.zeros((5, 2)), np.zeros((4, 3)))
    with pytest.raises(RankingError, match="finite"):
        predict_scores(np.full((8, 2), np.nan), np.zeros((8, 3)))
    with pytest.raises(RankingError, match="kind"):
        PredictorSpec(kind="forest")
