"""The answer model's probabilities are the distribution the worlds draw their answers from."""

import numpy as np
import pytest

from prefduel.core.answer_model import (
    least_probabilities,
    level_probabilities,
    pair_probabilities,
)
from prefduel.worlds.asking import AskQuestion, answer_bank


@pytest.mark.parametrize("gap", [-2.0, 0.0, 0.7])
def test_stored_answers_follow_the_published_probabilities(gap):
    n, beta, noise = 40_000, 1.5, 2.0
    loadings = (0.0, 1.0)
    v_bar = np.zeros((n, 2))
    v_bar[:, 1] = gap  # level_gap = slope (gap) x range (1)
    questions = [
        AskQuestion("level:x", "level", "?", loadings=loadings),
        AskQuestion("pair:1-0", "pair", "?", pair=(1, 0)),
        AskQuestion("least:why", "least", "?", about="why"),
    ]
    answers = answer_bank(questions, v_bar, {"why": v_bar}, beta, noise, np.random.default_rng(0))
    scale = beta / noise
    expected = [
        level_probabilities(np.array(scale * gap)),
        pair_probabilities(np.array(scale * gap)),
        least_probabilities(scale * v_bar[0]),
    ]
    for q, probs in enumerate(expected):
        seen = np.bincount(answers[:, q], minlength=probs.size) / n
        assert np.abs(seen - probs).max() < 0.015, (questions[q].kind, seen, probs)


def test_probabilities_sum_to_one_and_move_with_the_latent():
    latent = np.linspace(-4, 4, 9)
    for probs in (level_probabilities(latent), pair_probabilities(latent)):
        np.testing.assert_allclose(probs.sum(axis=-1), 1.0)
    mean_level = level_probabilities(latent) @ np.arange(5)
    assert np.all(np.diff(mean_level) > 0)
    assert least_probabilities(np.array([0.0, 3.0, 1.0])).argmax() == 0
