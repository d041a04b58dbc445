"""coduel-ask's compiled kernels against the numpy path they replace (skipped without numba):
question values, answer updates and the clicks-only learner's pass over a session."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core import jit
from prefduel.policies.coduel import answers as model
from prefduel.policies.coduel.ask_kernels import replay_clicks
from prefduel.policies.laplace import LaplaceBelief

D, K = 7, 6
compiled = pytest.mark.skipif(not jit.ENABLED, reason="numba is not installed")


def _mixture(rng: np.random.Generator, c: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    mu = rng.normal(scale=scale, size=(c, D))
    a = rng.normal(size=(c, D, D))
    return mu, scale * (a @ np.swapaxes(a, 1, 2) / D + 0.2 * np.eye(D))


def _questions(rng: np.random.Generator) -> tuple[list[str], list[np.ndarray]]:
    """Every kind, in mixed order, two ``least`` questions with the same features."""
    utility = model.utility_map(K, D, rng.normal(size=K))
    pair = {"kind": "pair", "pair": (1, 4)}
    level = {"kind": "level", "loadings": rng.normal(size=K)}
    least = {"kind": "least"}
    questions = [pair, least, level, level, least, pair]
    feats = [model.question_features(q, utility, 0.7) for q in questions]
    feats[3] = 5.0 * rng.normal(size=D)  # a level question far out in the tails
    return [q["kind"] for q in questions], feats


@compiled
@pytest.mark.parametrize(("seed", "scale"), [(0, 0.5), (1, 3.0), (2, 30.0)])
def test_compiled_question_values_equal_the_numpy_values(seed, scale, monkeypatch):
    rng = np.random.default_rng(seed)
    kinds, feats = _questions(rng)
    theta = rng.normal(scale=scale, size=(256, D))
    fast = model.information_gain(kinds, feats, theta)
    monkeypatch.setattr(jit, "ENABLED", False)
    slow = model.information_gain(kinds, feats, theta)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)
    assert fast[1] == fast[4]  # the same question, the same value


@compiled
@pytest.mark.parametrize("kind", ["pair", "level", "least"])
@pytest.mark.parametrize("seed", range(4))
def test_compiled_answer_updates_equal_the_numpy_updates(kind, seed):
    rng = np.random.default_rng(10 + seed)
    mu, sigma = _mixture(rng, 5, scale=1.0 + 4 * seed)
    utility = model.utility_map(K, D, rng.normal(size=K))
    feats = utility if kind == "least" else rng.normal(size=D)
    answer = int(rng.integers({"pair": 2, "level": 5, "least": K}[kind]))
    fast_mu, fast_sigma = mu.copy(), sigma.copy()
    fast = model.observe_answer(kind, feats, answer, fast_mu, fast_sigma)
    slow_mu, slow_sigma = mu.copy(), sigma.copy()
    slow = model.observe_answer(kind, feats, answer, slow_mu, slow_sigma, compiled=False)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fast_mu, slow_mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fast_sigma, slow_sigma, rtol=1e-9, atol=1e-9)
    assert not np.array_equal(fast_mu, mu)  # the update happened in place


@compiled
def test_a_least_answer_on_a_covariance_that_is_not_positive_definite_takes_numpys_path():
    rng = np.random.default_rng(7)
    mu, sigma = _mixture(rng, 2, scale=1.0)
    sigma[1] -= 5.0 * np.eye(D)  # no Cholesky factor: the kernel declines
    utility = model.utility_map(K, D, None)
    fast_mu, fast_sigma = mu.copy(), sigma.copy()
    fast = model.observe_answer("least", utility, 2, fast_mu, fast_sigma)
    slow_mu, slow_sigma = mu.copy(), sigma.copy()
    slow = model.observe_answer("least", utility, 2, slow_mu, slow_sigma, compiled=False)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast_mu, slow_mu)
    np.testing.assert_array_equal(fast_sigma, slow_sigma)


@compiled
def test_replayed_clicks_give_the_per_click_learner_to_the_bit():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(24, D))
    y = (rng.random(24) < 0.5).astype(float)
    learner = LaplaceBelief.isotropic(D, 2.0)
    for z_t, y_t in zip(z, y, strict=True):
        learner.observe(z_t, int(y_t))
    mu, sigma = np.zeros((1, D)), (2.0 * np.eye(D))[None].copy()
    replay_clicks(mu, sigma, z, y)
    np.testing.assert_array_equal(mu[0], learner.mu)
    np.testing.assert_array_equal(sigma[0], learner.sigma)
