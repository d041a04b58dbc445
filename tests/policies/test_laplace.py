"""The one-click Laplace update against a full Newton MAP, and its predictive formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import minimize, root
from scipy.stats import norm

from pb_laplace import D, K, random_cov, tutorduel_z
from prefduel.core import jit
from prefduel.core.laplace import laplace_update
from prefduel.policies.laplace import LaplaceBelief, laplace_step


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference_step(mu, sigma, z, y):
    """Full d-dimensional MAP of log N(theta; mu, Sigma) + log p(y | theta), and the inverse
    Hessian of the negative log-posterior at the MAP as the covariance."""
    prec = np.linalg.inv(sigma)

    def neg(t):
        a = z @ t
        return (
            y * np.logaddexp(0, -a)
            + (1 - y) * np.logaddexp(0, a)
            + 0.5 * (t - mu) @ prec @ (t - mu)
        )

    def grad(t):
        return -(y - _sig(z @ t)) * z + prec @ (t - mu)

    def hess(t):
        p = _sig(z @ t)
        return p * (1 - p) * np.outer(z, z) + prec

    res = minimize(neg, mu, jac=grad, hess=hess, method="trust-exact")
    sol = root(grad, res.x, jac=hess, tol=1e-14)  # polish to machine precision
    assert np.abs(grad(sol.x)).max() < 1e-10
    return sol.x, np.linalg.inv(hess(sol.x))




def _cases():
    """Priors and clicks of the regime the built-in learners live in (z.Sigma.z <= 4)."""
    rng = np.random.default_rng(0)
    out = []
    while len(out) < 40:
        sigma = random_cov(rng, scale=rng.uniform(0.1, 0.6))
        mu = rng.normal(scale=1.5, size=D)
        z = tutorduel_z(rng)
        if z @ sigma @ z > 4:
            continue
        y = int(rng.random() < 0.5)
        out.append((mu, sigma, z, y))
    # the isotropic prior of notransfer (prior_var = 1), surprising and expected clicks
    for m_sign in (-1, 1):
        for y in (0, 1):
            z = np.array([1.0, -1, 0, 0, 0, 0, 1.2])
            out.append((m_sign * 2.0 * z / (z @ z), np.eye(D), z, y))
    return out


@pytest.mark.parametrize("case", range(44))
def test_laplace_step_matches_the_full_newton_map(case):
    mu, sigma, z, y = _cases()[case]
    new_mu, new_sigma, _ = laplace_step(mu, sigma, z, y)
    ref_mu, ref_sigma = reference_step(mu, sigma, z, y)
    np.testing.assert_allclose(new_mu, ref_mu, atol=1e-6, rtol=0)
    np.testing.assert_allclose(new_sigma, ref_sigma, atol=1e-6, rtol=0)
    np.testing.assert_allclose(new_sigma, new_sigma.T, atol=1e-12)
    assert np.linalg.eigvalsh(new_sigma).min() > 0


def test_a_click_moves_the_mean_toward_the_winner():
    z = np.array([1.0, -1, 0, 0, 0, 0, 0.5])
    for y, sign in ((1, 1), (0, -1)):
        new_mu, new_sigma, _ = laplace_step(np.zeros(D), np.eye(D), z, y)
        assert sign * (z @ new_mu) > 0
        assert z @ new_sigma @ z < z @ z  # less uncertain along z


def test_laplace_step_matches_the_map_for_wide_priors_and_surprising_clicks():
    z = np.array([1.0, -1, 0, 0, 0, 0, 1.5])
    sigma = 4.0 * np.eye(D)  # z.Sigma.z = 17
    mu = -5.0 * z / (z @ z)  # predicts the second item wins; the first wins
    new_mu, _, _ = laplace_step(mu, sigma, z, 1)
    ref_mu, _ = reference_step(mu, sigma, z, 1)
    np.testing.assert_allclose(new_mu, ref_mu, atol=1e-6)


def test_predictive_probability_formula():
    rng = np.random.default_rng(1)
    for _ in range(20):
        sigma = random_cov(rng)
        mu = rng.normal(size=D)
        z = tutorduel_z(rng)
        _, _, p = laplace_step(mu, sigma, z, 1)
        m, s = z @ mu, z @ sigma @ z
        assert p == pytest.approx(
            1 / (1 + math.exp(-m / math.sqrt(1 + math.pi * s / 8))), abs=1e-15
        )
        # the predictive is taken before the update, so it does not depend on the click
        assert laplace_step(mu, sigma, z, 0)[2] == p


@pytest.mark.parametrize("m", [-4.0, -1.0, 0.0, 0.5, 3.0])
@pytest.mark.parametrize("s", [0.1, 1.0, 4.0, 16.0])
def test_predictive_approximates_the_logistic_gaussian_integral(m, s):
    """MacKay's probit approximation: within 0.015 of E[sigmoid(t)], t ~ N(m, s).

    (The largest error over m in [-6, 6] and s in [0.1, 32] is 0.0127.)
    """
    z = np.zeros(D)
    z[0], z[1] = 1.0, -1.0
    mu = np.zeros(D)
    mu[0] = m
    sigma = np.eye(D)
    sigma[0, 0] = s - 1.0 if s > 1 else s / 2
    sigma[1, 1] = 1.0 if s > 1 else s / 2
    assert z @ sigma @ z == pytest.approx(s)
    _, _, p = laplace_step(mu, sigma, z, 1)
    sd = math.sqrt(s)
    exact = quad(lambda t: _sig(t) * norm.pdf(t, m, sd), m - 12 * sd, m + 12 * sd)[0]
    assert p == pytest.approx(exact, abs=0.015)


def test_belief_observe_returns_the_probability_of_the_observed_click():
    z = np.array([0.0, 1, -1, 0, 0, 0, 0.3])
    b1 = LaplaceBelief(np.full(D, 0.2) * np.arange(D), np.eye(D))
    b0 = LaplaceBelief(b1.mu, b1.sigma)
    _, _, p_first = laplace_step(b1.mu, b1.sigma, z, 1)
    assert b1.observe(z, 1) == pytest.approx(p_first)
    assert b0.observe(z, 0) == pytest.approx(1 - p_first)


def test_unidentified_direction_is_untouched_by_clicks():
    """Adding a constant to the six persona weights changes no click probability, so the
    posterior along v = (1,1,1,1,1,1,0) stays at the prior: mean 0, variance 6 * prior_var."""
    v = np.array([1.0] * K + [0.0])
    rng = np.random.default_rng(3)
    theta = rng.normal(size=D)
    prior_var = 1.0
    belief = LaplaceBelief.isotropic(D, prior_var)
    for _ in range(60):
        z = tutorduel_z(rng)
        assert z @ v == 0.0
        # the likelihood of a click does not change along v
        for c in (-3.0, 0.7, 10.0):
            assert _sig(z @ (theta + c * v)) == pytest.approx(_sig(z @ theta), abs=1e-15)
        y = int(rng.random() < _sig(z @ theta))
        belief.observe(z, y)
        assert abs(v @ belief.mu) < 1e-12
        np.testing.assert_allclose(belief.sigma @ v, prior_var * v, atol=1e-12)
    # meanwhile the identified directions did learn something
    assert np.linalg.eigvalsh(belief.sigma).min() < 0.5 * prior_var
    assert v @ belief.sigma @ v == pytest.approx(6 * prior_var, abs=1e-10)


def test_isotropic_belief_and_sampling():
    belief = LaplaceBelief.isotropic(D, 2.5)
    np.testing.assert_array_equal(belief.mu, np.zeros(D))
    np.testing.assert_array_equal(belief.sigma, 2.5 * np.eye(D))
    a = belief.sample(np.random.default_rng(4))
    b = belief.sample(np.random.default_rng(4))
    np.testing.assert_array_equal(a, b)
    draws = np.stack([belief.sample(np.random.default_rng(i)) for i in range(400)])
    assert abs(draws.var() - 2.5) < 0.3



def test_observe_replaces_the_arrays_it_was_read_from():
    """A caller holding the old mean and covariance keeps them (the update is not in place on
    arrays someone else may hold)."""
    belief = LaplaceBelief.isotropic(D, 1.0)
    mu, sigma = belief.mu, belief.sigma
    belief.observe(np.array([1.0, -1, 0, 0, 0, 0, 0.4]), 1)
    np.testing.assert_array_equal(mu, np.zeros(D))
    np.testing.assert_array_equal(sigma, np.eye(D))
    assert belief.mu[0] > 0 > belief.mu[1]


def test_laplace_step_takes_any_array_layout():
    rng = np.random.default_rng(6)
    sigma, z = random_cov(rng), tutorduel_z(rng)
    mu = rng.normal(size=D)
    want = laplace_step(mu, sigma, z, 1)
    got = laplace_step(list(mu), np.asfortranarray(sigma), z[::-1][::-1], 1)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("numba", [True, False])
def test_the_one_belief_update_is_the_batched_one_to_the_bit(numba, monkeypatch):
    """`laplace_step` (one belief, `update_one`) gives exactly what `laplace_update` gives on
    a batch of one, compiled and not, surprising clicks on wide beliefs included."""
    monkeypatch.setattr(jit, "ENABLED", numba and jit.ENABLED)
    rng = np.random.default_rng(7)
    for case in range(200):
        scale = (0.1, 1.0, 30.0)[case % 3]
        mu, sigma, z = 3 * rng.normal(size=D), random_cov(rng, scale), tutorduel_z(rng, 2.0)
        y = int(case % 2)
        new_mu, new_sigma, p = laplace_step(mu, sigma, z, y)
        ref_mu, ref_sigma = mu[None].copy(), sigma[None].copy()
        ref_p = laplace_update(ref_mu, ref_sigma, z, y)
        assert p == ref_p[0]
        assert new_mu.tobytes() == ref_mu[0].tobytes()
        assert new_sigma.tobytes() == ref_sigma[0].tobytes()


def test_laplace_step_rejects_a_click_of_the_wrong_size():
    with pytest.raises(ValueError, match="do not fit"):
        laplace_step(np.zeros(D), np.eye(D), np.ones(D - 1), 1)
