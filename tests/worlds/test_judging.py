"""The judge math shared by TutorSim and datagen (`prefduel.worlds.judging`), and its
re-export from `prefduel.worlds.tutorsim`."""

from __future__ import annotations

import numpy as np

from prefduel.worlds import judging, tutorsim


def test_tutorsim_re_exports_the_judge_math():
    for name in (
        "JUDGE_CONFIGS",
        "JUDGE_ORDER",
        "JUDGE_LABEL",
        "smoothed_log_odds",
        "pair_matrix",
        "judge_probabilities",
        "bt_utilities",
    ):
        assert getattr(tutorsim, name) is getattr(judging, name), name


def test_judge_orders_and_labels_follow_the_configurations():
    order = [1.0 if first else -1.0 for first, _ in judging.JUDGE_CONFIGS]
    label = [1.0 if is_a else -1.0 for _, is_a in judging.JUDGE_CONFIGS]
    np.testing.assert_array_equal(judging.JUDGE_ORDER, order)
    np.testing.assert_array_equal(judging.JUDGE_LABEL, label)


def test_probabilities_are_complementary_and_skip_configurations_without_picks():
    # K = 3: pairs (0, 1), (0, 2), (1, 2); 4 configurations each
    wins = np.array([[4, 4, 4, 4], [0, 0, 0, 0], [3, 0, 2, 2]], dtype=float)
    total = np.array([[4, 4, 4, 4], [4, 4, 4, 4], [4, 0, 4, 4]])
    prob = judging.judge_probabilities(wins, total, 3)
    np.testing.assert_allclose(prob + prob.T, 1.0)
    np.testing.assert_array_equal(np.diag(prob), 0.5)
    assert prob[0, 1] > 0.85 and prob[0, 2] < 0.15
    # the configuration without a valid pick (0 wins of 0) is left out of the mean
    expected = judging.smoothed_log_odds(np.array([3.0, 2.0, 2.0]), 4).mean()
    np.testing.assert_allclose(prob[1, 2], 1.0 / (1.0 + np.exp(-expected)))


def test_bt_utilities_rank_personas_like_the_probabilities():
    prob = judging.pair_matrix(np.array([0.9, 0.8, 0.6]), 3)
    utility = judging.bt_utilities(prob)
    assert utility.shape == (3,)
    assert utility[0] > utility[1] > utility[2]
    assert np.all((utility >= 0) & (utility <= 1))
