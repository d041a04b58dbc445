"""CODuel's mixture belief: its bookkeeping must equal a slow per-component loop of the
scalar ``laplace_step`` (itself checked in ``tests/core/test_laplace.py`` and
``tests/policies/test_laplace.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pb_laplace import D
from pb_laplace import random_cov as _random_cov
from pb_laplace import tutorduel_z as _tutorduel_z
from prefduel.policies.coduel.belief import MixtureBelief
from prefduel.policies.laplace import laplace_step

# ------------------------------------------------------------------------- MixtureBelief


def _random_mixture(rng, c):
    weights = rng.dirichlet(np.ones(c))
    mu = rng.normal(scale=1.5, size=(c, D))
    sigma = np.stack([_random_cov(rng, rng.uniform(0.1, 3.0)) for _ in range(c)])
    return weights, mu, sigma


@pytest.mark.parametrize("seed", range(4))
def test_mixture_observe_matches_a_slow_per_component_loop(seed):
    rng = np.random.default_rng(300 + seed)
    c = 4
    weights, mu, sigma = _random_mixture(rng, c)
    belief = MixtureBelief(weights, mu, sigma)
    # reference state: a list of (log weight, mean, covariance) per component
    ref = [[math.log(weights[i]), mu[i].copy(), sigma[i].copy()] for i in range(c)]
    for _ in range(15):
        z = _tutorduel_z(rng)
        y = int(rng.random() < 0.5)
        old_log_w = belief.log_weight.copy()
        total = sum(math.exp(r[0]) for r in ref)
        expected_p = 0.0
        for r in ref:
            new_mu, new_sigma, p_first = laplace_step(r[1], r[2], z, y)
            p_y = p_first if y == 1 else 1.0 - p_first
            expected_p += math.exp(r[0]) / total * p_y
            r[0] += math.log(p_y)
            r[1], r[2] = new_mu, new_sigma
        returned = belief.observe(z, y)
        assert returned == pytest.approx(expected_p, rel=1e-10)
        ref_log_w = np.array([r[0] for r in ref])
        np.testing.assert_allclose(belief.log_weight, ref_log_w, rtol=1e-10, atol=1e-10)
        # new log weights = old + log predictive of each component
        gain = belief.log_weight - old_log_w
        assert np.all(gain < 0)
        for i, r in enumerate(ref):
            np.testing.assert_allclose(belief.mu[i], r[1], atol=1e-8)
            np.testing.assert_allclose(belief.sigma[i], r[2], atol=1e-9)
        w_ref = np.exp(ref_log_w - ref_log_w.max())
        np.testing.assert_allclose(belief.weights, w_ref / w_ref.sum(), atol=1e-12)
        np.testing.assert_allclose(belief.mean(), belief.weights @ belief.mu, atol=1e-12)


def test_mixture_predictive_is_the_weighted_component_predictive():
    rng = np.random.default_rng(9)
    weights, mu, sigma = _random_mixture(rng, 3)
    belief = MixtureBelief(weights, mu, sigma)
    z = _tutorduel_z(rng)
    expected = sum(
        w * laplace_step(m, s, z, 1)[2] for w, m, s in zip(weights, mu, sigma, strict=True)
    )
    assert belief.predictive(z) == pytest.approx(expected, rel=1e-12)
    # observe returns P(y) under the belief before the click, i.e. the same predictive
    assert MixtureBelief(weights, mu, sigma).observe(z, 1) == pytest.approx(expected, rel=1e-12)
    assert MixtureBelief(weights, mu, sigma).observe(z, 0) == pytest.approx(1 - expected, rel=1e-12)


def test_mixture_belief_copies_its_inputs():
    rng = np.random.default_rng(10)
    weights, mu, sigma = _random_mixture(rng, 2)
    mu0, sigma0 = mu.copy(), sigma.copy()
    belief = MixtureBelief(weights, mu, sigma)
    belief.observe(_tutorduel_z(rng), 1)
    np.testing.assert_array_equal(mu, mu0)  # a population's arrays are not changed by a user
    np.testing.assert_array_equal(sigma, sigma0)


def test_clicks_shift_weight_toward_the_component_that_explains_them():
    theta_a = np.array([2.0, -2.0, 0, 0, 0, 0, 0.0])
    mu = np.stack([theta_a, -theta_a])
    sigma = np.stack([0.05 * np.eye(D)] * 2)
    belief = MixtureBelief(np.array([0.5, 0.5]), mu, sigma)
    z = np.array([1.0, -1, 0, 0, 0, 0, 0])
    for _ in range(3):
        belief.observe(z, 1)  # persona 0 beats persona 1, as component 0 says
    assert belief.weights[0] > 0.999


def test_log_weight_gain_is_exact_for_a_very_surprising_click():
    z = np.array([1.0, -1, 0, 0, 0, 0, 0])
    mu = np.array([[-20.0, 20.0, 0, 0, 0, 0, 0]])  # z.mu = -40: predicts the second item
    sigma = 1e-4 * np.eye(D)[None]
    belief = MixtureBelief(np.ones(1), mu, sigma)
    _, _, p_first = laplace_step(mu[0], sigma[0], z, 1)
    belief.observe(z, 1)
    assert belief.log_weight[0] == pytest.approx(math.log(p_first), rel=1e-6)
