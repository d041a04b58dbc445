"""CODuel's vectorized Laplace step and mixture belief against the scalar ``laplace_step``.

The scalar step is itself checked against a full Newton MAP in ``test_laplace.py``; here the
batched version must reproduce it row by row, and the mixture's bookkeeping must equal a slow
per-component loop.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

from prefduel.policies.coduel.belief import MixtureBelief, laplace_step_batch
from prefduel.policies.laplace import laplace_step

D = 7
K = 6


def _tutorduel_z(rng, gap_sd=1.0):
    i, j = rng.choice(K, size=2, replace=False)
    z = np.zeros(D)
    z[i], z[j] = 1.0, -1.0
    z[K] = gap_sd * rng.normal()
    return z


def _random_cov(rng, scale):
    a = rng.normal(size=(D, D))
    return scale * (a @ a.T / D + 0.2 * np.eye(D))


def _sig(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _batch(rng, n, *, shared_z=False, s_range=(0.05, 1000.0), clicks="random"):
    """Random means, covariances with z.Sigma.z log-uniform in ``s_range``, and clicks.

    ``clicks``: ``"random"`` (y independent of the mean), ``"expected"`` (y agrees with the
    sign of z.mu, |z.mu| in [0.5, 8]) or ``"surprising"`` (y contradicts it, |z.mu| in [3, 8]).
    """
    z_shared = _tutorduel_z(rng)
    mu = np.empty((n, D))
    sigma = np.empty((n, D, D))
    z = np.empty((n, D))
    y = rng.integers(0, 2, size=n)
    for b in range(n):
        zb = z_shared if shared_z else (_tutorduel_z(rng) if b % 2 else rng.normal(size=D))
        cov = _random_cov(rng, 1.0)
        target_s = math.exp(rng.uniform(math.log(s_range[0]), math.log(s_range[1])))
        cov *= target_s / (zb @ cov @ zb)
        m_b = rng.normal(size=D)
        if clicks != "random":
            sign = 1 if clicks == "expected" else -1
            size = rng.uniform(0.5, 8.0) if clicks == "expected" else rng.uniform(3.0, 8.0)
            m_target = sign * (2 * y[b] - 1) * size
            m_b += (m_target - zb @ m_b) * zb / (zb @ zb)
        mu[b], sigma[b], z[b] = m_b, cov, zb
    return mu, sigma, (z_shared if shared_z else z), y


def exact_step(mu, sigma, z, y):
    """The one-click Laplace step with its scalar root found by bracketing (brentq).

    The MAP of N(mu, Sigma) x sigmoid((2y-1) z.theta) lies on mu + alpha Sigma z with
    alpha = y - sigmoid(z.mu + alpha s) (stationarity), alpha in (y - 1, y); the covariance
    is the inverse Hessian at the MAP (Sherman-Morrison), as in ``test_laplace.py``.
    """
    sz = sigma @ z
    m, s = float(z @ mu), float(z @ sz)

    def f(a):
        return a - y + _sig(m + a * s)

    alpha = brentq(f, y - 1.0, float(y), xtol=1e-15, rtol=4 * np.finfo(float).eps)
    p = _sig(m + alpha * s)
    w = p * (1.0 - p)
    predictive = _sig(m / math.sqrt(1.0 + math.pi * s / 8.0))
    return mu + alpha * sz, sigma - w / (1.0 + w * s) * np.outer(sz, sz), predictive


def test_exact_reference_is_the_full_map():
    """The bracketed reference equals a full d-dimensional MAP, also where z.Sigma.z ~ 1000
    and the click is surprising (so it can judge the batch step there)."""
    rng = np.random.default_rng(5)
    mu, sigma, z, y = _batch(rng, 6, s_range=(20.0, 1000.0), clicks="surprising")
    for b in range(6):
        prec = np.linalg.inv(sigma[b])
        sign = 2 * y[b] - 1

        def neg(t, b=b, prec=prec, sign=sign):
            return np.logaddexp(0, -sign * (z[b] @ t)) + 0.5 * (t - mu[b]) @ prec @ (t - mu[b])

        def grad(t, b=b, prec=prec, sign=sign):
            return -sign * _sig(-sign * (z[b] @ t)) * z[b] + prec @ (t - mu[b])

        res = minimize(neg, mu[b], jac=grad, method="BFGS", options={"gtol": 1e-11})
        ref_mu, _, _ = exact_step(mu[b], sigma[b], z[b], int(y[b]))
        np.testing.assert_allclose(res.x, ref_mu, atol=1e-5 * (1 + np.abs(ref_mu).max()))


def _assert_rows_match(mu, sigma, z, y, out, reference=laplace_step):
    """Row-by-row agreement to 2e-8 of each row's scale: the batch stops once |f| < 1e-10 for
    the scalar root, which for z.Sigma.z ~ 1000 moves the result by up to ~5e-9 relative."""
    new_mu, new_sigma, p_first = out
    n = mu.shape[0]
    zz = np.broadcast_to(z, mu.shape)
    yy = np.broadcast_to(y, (n,))
    for b in range(n):
        ref_mu, ref_sigma, ref_p = reference(mu[b], sigma[b], zz[b], int(yy[b]))
        scale = 1.0 + np.abs(ref_mu).max()
        np.testing.assert_allclose(
            new_mu[b], ref_mu, rtol=0, atol=2e-8 * scale, err_msg=f"row {b}: mean"
        )
        np.testing.assert_allclose(
            new_sigma[b],
            ref_sigma,
            rtol=0,
            atol=2e-8 * (1.0 + np.abs(sigma[b]).max()),
            err_msg=f"row {b}: covariance",
        )
        assert p_first[b] == pytest.approx(ref_p, rel=1e-9, abs=1e-14), f"row {b}: predictive"


def _s(sigma, z):
    zz = np.broadcast_to(z, sigma.shape[:2])
    return np.einsum("bi,bij,bj->b", zz, sigma, zz)


@pytest.mark.parametrize("seed", range(4))
def test_batch_matches_scalar_for_random_clicks_on_moderate_priors(seed):
    rng = np.random.default_rng(seed)
    mu, sigma, z, y = _batch(rng, 40, s_range=(0.05, 8.0))
    out = laplace_step_batch(mu, sigma, z, y)
    _assert_rows_match(mu, sigma, z, y, out)
    _assert_rows_match(mu, sigma, z, y, out, reference=exact_step)


@pytest.mark.parametrize("seed", range(4))
def test_batch_matches_scalar_for_wide_covariances(seed):
    """z.Sigma.z up to 1000 with clicks the mean expects."""
    rng = np.random.default_rng(50 + seed)
    mu, sigma, z, y = _batch(rng, 40, s_range=(0.05, 1000.0), clicks="expected")
    assert _s(sigma, z).max() > 200
    out = laplace_step_batch(mu, sigma, z, y)
    _assert_rows_match(mu, sigma, z, y, out)
    _assert_rows_match(mu, sigma, z, y, out, reference=exact_step)


@pytest.mark.parametrize("seed", range(3))
def test_batch_matches_scalar_for_surprising_clicks(seed):
    """Every click contradicts the mean (|z.mu| in [3, 8]); z.Sigma.z up to 8."""
    rng = np.random.default_rng(80 + seed)
    mu, sigma, z, y = _batch(rng, 40, s_range=(0.05, 8.0), clicks="surprising")
    m = np.einsum("bi,bi->b", z, mu)
    assert np.all((2 * y - 1) * m < -2.5)
    out = laplace_step_batch(mu, sigma, z, y)
    _assert_rows_match(mu, sigma, z, y, out)
    _assert_rows_match(mu, sigma, z, y, out, reference=exact_step)


@pytest.mark.parametrize("seed", range(3))
def test_batch_matches_scalar_with_a_shared_z_and_per_row_y(seed):
    rng = np.random.default_rng(100 + seed)
    mu, sigma, z, y = _batch(rng, 30, shared_z=True, s_range=(0.05, 8.0))
    assert z.shape == (D,)
    assert 0 < y.sum() < y.size  # both outcomes present
    out = laplace_step_batch(mu, sigma, z, y)
    _assert_rows_match(mu, sigma, z, y, out)
    # and wide covariances along the shared z, clicks as expected
    mu, sigma, z, y = _batch(rng, 30, shared_z=True, s_range=(1.0, 1000.0), clicks="expected")
    out = laplace_step_batch(mu, sigma, z, y)
    _assert_rows_match(mu, sigma, z, y, out, reference=exact_step)


@pytest.mark.parametrize("y_scalar", [0, 1])
def test_batch_matches_scalar_with_a_scalar_outcome(y_scalar):
    rng = np.random.default_rng(7 + y_scalar)
    mu, sigma, z, _ = _batch(rng, 25, s_range=(0.05, 8.0))
    out = laplace_step_batch(mu, sigma, z, y_scalar)
    _assert_rows_match(mu, sigma, z, np.full(25, y_scalar), out)


@pytest.mark.parametrize("seed", range(2))
def test_batch_is_exact_for_wide_covariances_and_surprising_clicks(seed):
    """Surprising clicks with z.Sigma.z in [10, 1000]: plain Newton falls into 2-cycles between
    the bracket ends here (regression: the step used to accept lo <= step <= hi and stopped
    unconverged on ~70% of these rows)."""
    rng = np.random.default_rng(200 + seed)
    mu, sigma, z, y = _batch(rng, 40, s_range=(10.0, 1000.0), clicks="surprising")
    out = laplace_step_batch(mu, sigma, z, y)
    _assert_rows_match(mu, sigma, z, y, out, reference=exact_step)


def test_batch_newton_two_cycle_minimal_repro():
    """d = 1: m = -6.9729, s = 23.224, y = 1; the true alpha is 0.3306 (regression: the batch
    used to cycle between 3.47e-6 and 0.97783 for all 60 iterations and return 3.5e-6)."""
    mu = np.array([[-6.972896591168097]])
    sigma = np.array([[[23.224125458389526]]])
    z = np.array([[1.0]])
    new_mu, _, _ = laplace_step_batch(mu, sigma, z, 1)
    ref_mu, _, _ = exact_step(mu[0], sigma[0], z[0], 1)
    assert new_mu[0, 0] == pytest.approx(ref_mu[0], abs=1e-8)


def test_scalar_step_newton_two_cycle_minimal_repro():
    """The scalar step CODuel's no-transfer learner uses. d = 1: m = 14.2528, s = 350.85,
    y = 0; the true alpha is -0.0491 (regression: a '<=' safeguard returned 0)."""
    mu = np.array([14.252774975484957])
    sigma = np.array([[350.8534800737548]])
    z = np.array([1.0])
    new_mu, _, _ = laplace_step(mu, sigma, z, 0)
    ref_mu, _, _ = exact_step(mu, sigma, z, 0)
    assert new_mu[0] == pytest.approx(ref_mu[0], abs=1e-8)


def test_zero_feature_rows_are_no_ops():
    rng = np.random.default_rng(11)
    mu, sigma, z, y = _batch(rng, 12, s_range=(0.05, 8.0))
    zero = np.array([0, 3, 4, 9])
    z[zero] = 0.0
    new_mu, new_sigma, p_first = laplace_step_batch(mu, sigma, z, y)
    np.testing.assert_array_equal(new_mu[zero], mu[zero])
    np.testing.assert_array_equal(new_sigma[zero], sigma[zero])
    np.testing.assert_allclose(p_first[zero], 0.5, atol=1e-15)
    other = np.setdiff1d(np.arange(12), zero)
    assert np.all(np.abs(new_mu[other] - mu[other]).max(axis=1) > 0)  # the others did move
    _assert_rows_match(mu, sigma, z, y, (new_mu, new_sigma, p_first))


def test_inputs_are_not_modified():
    rng = np.random.default_rng(12)
    mu, sigma, z, y = _batch(rng, 6)
    copies = [a.copy() for a in (mu, sigma, z, y)]
    laplace_step_batch(mu, sigma, z, y)
    for a, b in zip((mu, sigma, z, y), copies, strict=True):
        np.testing.assert_array_equal(a, b)


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
