"""The one-click Laplace step of `prefduel.core.laplace`: the batched numpy step against a
root found by bracketing, the compiled update against the numpy one, in place.

The scalar step (``prefduel.policies.laplace.laplace_step``) is checked against a full Newton
MAP in ``tests/policies/test_laplace.py``; here the batched version must reproduce it row by
row, on wide covariances and surprising clicks too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

from pb_laplace import D
from pb_laplace import random_cov as _random_cov
from pb_laplace import tutorduel_z as _tutorduel_z
from prefduel.core import jit
from prefduel.core.btl import sigmoid
from prefduel.core.laplace import (
    TOLERANCE,
    laplace_step_batch,
    laplace_update,
    solve_root,
    solve_step,
    update_rows,
)
from prefduel.policies.laplace import laplace_step


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




# ------------------------------------------------------- the compiled update and the root


def _roots_cases(rng, n):
    """``m``, ``s``, ``y`` and the predictive start over the regimes of the batch tests."""
    s = np.exp(rng.uniform(math.log(0.01), math.log(2000.0), size=n))
    m = rng.normal(scale=8.0, size=n)
    y = rng.integers(0, 2, size=n).astype(float)
    p0 = sigmoid(m / np.sqrt(1.0 + math.pi * s / 8.0))
    return m, s, y, p0


def test_every_root_meets_the_tolerance_on_both_paths():
    m, s, y, p0 = _roots_cases(np.random.default_rng(20), 3000)
    numpy_alpha = solve_step(m, s, y, p0)
    scalar_alpha = np.array([solve_root(*args) for args in zip(m, s, y, p0, strict=True)])
    for alpha in (numpy_alpha, scalar_alpha):
        f = alpha - y + sigmoid(m + alpha * s)
        assert np.abs(f).max() < TOLERANCE
        assert np.all((y - 1.0 <= alpha) & (alpha <= y))
    # the same iterations: the two differ only by the rounding of the sigmoid
    np.testing.assert_allclose(numpy_alpha, scalar_alpha, rtol=0, atol=TOLERANCE)


def test_a_root_does_not_depend_on_the_rest_of_the_batch():
    m, s, y, p0 = _roots_cases(np.random.default_rng(21), 400)
    batch = solve_step(m, s, y, p0)
    alone = np.concatenate([solve_step(m[i : i + 1], s[i : i + 1], y[i : i + 1], p0[i : i + 1])
                            for i in range(m.size)])
    np.testing.assert_array_equal(batch, alone)


@pytest.mark.parametrize(
    ("seed", "s_range", "clicks"),
    [
        (0, (0.05, 8.0), "random"),
        (1, (0.05, 1000.0), "expected"),
        (2, (10.0, 1000.0), "surprising"),
    ],
)
def test_the_compiled_update_equals_the_numpy_step(seed, s_range, clicks):
    """`update_rows` (compiled with numba, plain Python without) against the numpy step."""
    rng = np.random.default_rng(30 + seed)
    mu, sigma, z, y = _batch(rng, 30, s_range=s_range, clicks=clicks)
    ref_mu, ref_sigma, ref_p = laplace_step_batch(mu, sigma, z, y)
    out_mu, out_sigma = mu.copy(), sigma.copy()
    p = update_rows(out_mu, out_sigma, z, y.astype(float))
    np.testing.assert_allclose(p, ref_p, rtol=1e-12, atol=1e-300)
    scale = 1.0 + np.abs(ref_mu).max()
    np.testing.assert_allclose(out_mu, ref_mu, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(out_sigma, ref_sigma, rtol=0, atol=1e-9 * (1 + np.abs(sigma).max()))


@pytest.fixture(params=[False, True], ids=["numpy", "kernel"])
def path(request, monkeypatch):
    """`laplace_update` on its numpy path and on its kernel (interpreted without numba)."""
    monkeypatch.setattr(jit, "ENABLED", request.param)
    return request.param


@pytest.mark.parametrize("n", [1, 12])
@pytest.mark.parametrize("shared", ["z and y", "z", "neither"])
def test_laplace_update_writes_the_step_in_place(path, shared, n):
    """Also for one belief alone (its numpy path: numpy products around the scalar root)."""
    rng = np.random.default_rng(40)
    mu, sigma, z, y = _batch(rng, n, shared_z=shared != "neither", s_range=(0.05, 50.0))
    y = int(y[0]) if shared == "z and y" else y
    ref_mu, ref_sigma, ref_p = laplace_step_batch(mu, sigma, z, y)
    p = laplace_update(mu, sigma, z, y)
    np.testing.assert_allclose(p, ref_p, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(mu, ref_mu, rtol=0, atol=1e-9 * (1 + np.abs(ref_mu).max()))
    np.testing.assert_allclose(sigma, ref_sigma, rtol=0, atol=1e-9 * (1 + np.abs(sigma).max()))


def test_laplace_update_refuses_what_it_cannot_update(path):
    mu, sigma, z = np.zeros((3, D)), np.stack([np.eye(D)] * 3), np.ones(D)
    with pytest.raises(ValueError, match="do not fit"):
        laplace_update(mu, sigma[:2], z, 1)
    with pytest.raises(ValueError, match="do not fit"):
        laplace_update(mu, sigma, np.ones(D + 1), 1)
    with pytest.raises(ValueError, match="shared or one per belief"):
        laplace_update(mu, sigma, np.ones((2, D)), 1)
    with pytest.raises(ValueError, match="shared or one per belief"):
        laplace_update(mu, sigma, z, np.ones(2))
    with pytest.raises(ValueError, match="writeable C-contiguous float64"):
        laplace_update(mu.T.copy().T, sigma, z, 1)  # Fortran order
    read_only = mu.copy()
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        laplace_update(read_only, sigma, z, 1)
    np.testing.assert_array_equal(mu, 0.0)  # nothing was written
