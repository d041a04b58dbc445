"""CODuel's rater recalibration: the ridge logistic fit of A against scipy, recovery of a
known A, and the feature map ``g -> A g``."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from prefduel.policies.coduel.recal import apply_recalibration, fit_recalibration

K = 6

try:  # threaded BLAS on a 30000 x 36 design is slower than one thread on a busy machine
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None


def _one_blas_thread():
    return threadpool_limits(limits=1) if threadpool_limits else contextlib.nullcontext()


def _simulate(rng, m, a_true, theta_g_mean=1.5):
    first = rng.integers(0, K, size=m)
    second = (first + rng.integers(1, K, size=m)) % K
    g = rng.normal(size=(m, K))
    theta = np.c_[rng.normal(scale=0.7, size=(m, K)), rng.normal(theta_g_mean, 0.5, size=m)]
    rows = np.arange(m)
    ag = g @ a_true.T
    logit = (
        theta[rows, first]
        - theta[rows, second]
        + theta[:, K] * (ag[rows, first] - ag[rows, second])
    )
    outcome = (rng.random(m) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return first, second, outcome, g, theta


def _objective(first, second, outcome, g, theta, ridge):
    """Penalized negative log-likelihood in A and its gradient, written out directly."""
    rows = np.arange(first.size)

    def f(vec):
        a = vec.reshape(K, K)
        ag = g @ a.T
        logit = (
            theta[rows, first]
            - theta[rows, second]
            + theta[:, K] * (ag[rows, first] - ag[rows, second])
        )
        nll = np.sum(outcome * np.logaddexp(0, -logit) + (1 - outcome) * np.logaddexp(0, logit))
        dev = a - np.trace(a) / K * np.eye(K)
        value = nll + 0.5 * ridge * np.sum(dev**2)
        resid = 1.0 / (1.0 + np.exp(-logit)) - outcome  # d nll / d logit
        grad = np.zeros((K, K))
        for p_idx, sign in ((first, 1.0), (second, -1.0)):
            np.add.at(grad, p_idx, sign * (resid * theta[:, K])[:, None] * g)
        grad += ridge * dev  # d/dA of ||A - tr(A)/K I||^2 / 2 (the trace term's share is 0)
        return value, grad.ravel()

    return f


@pytest.mark.parametrize("ridge", [10.0, 1.0, 0.05])
def test_fit_matches_scipy_minimize_of_the_penalized_likelihood(ridge):
    rng = np.random.default_rng(int(ridge * 100))
    a_true = 0.8 * np.eye(K) + 0.3 * rng.normal(size=(K, K))
    data = _simulate(rng, 400, a_true)
    fitted = fit_recalibration(*data, ridge=ridge)
    f = _objective(*data, ridge)
    res = minimize(f, np.eye(K).ravel(), jac=True, method="BFGS", options={"gtol": 1e-9})
    assert np.abs(f(res.x)[1]).max() < 1e-6
    np.testing.assert_allclose(fitted, res.x.reshape(K, K), atol=1e-5)
    assert np.abs(f(fitted.ravel())[1]).max() < 1e-7  # the fit is a stationary point
    assert f(fitted.ravel())[0] <= res.fun + 1e-9


def test_the_unidentified_part_of_a_goes_to_the_least_penalized_representative():
    """Adding the same row c to every row of A leaves every click logit unchanged; the ridge
    therefore picks the representative whose A' = A - tr(A)/K I has zero column sums."""
    rng = np.random.default_rng(3)
    a_true = np.eye(K) + 0.4 * rng.normal(size=(K, K))
    data = _simulate(rng, 500, a_true)
    fitted = fit_recalibration(*data, ridge=2.0)
    dev = fitted - np.trace(fitted) / K * np.eye(K)
    np.testing.assert_allclose(dev.sum(axis=0), 0.0, atol=1e-8)
    f = _objective(*data, 2.0)
    shifted = fitted + np.outer(np.ones(K), rng.normal(size=K))
    assert f(shifted.ravel())[0] > f(fitted.ravel())[0]


def test_recovers_a_known_matrix_from_a_large_sample():
    rng = np.random.default_rng(4)
    h = np.eye(K) - np.ones((K, K)) / K
    raw = 0.35 * rng.normal(size=(K, K))
    # A' = H (R - tau I): zero column sums (the representative the ridge picks, so A is fully
    # identified) and zero trace
    dev = h @ (raw - np.trace(h @ raw) / (K - 1) * np.eye(K))
    a_true = 1.2 * np.eye(K) + dev
    assert abs(np.trace(dev)) < 1e-12
    np.testing.assert_allclose(
        (a_true - np.trace(a_true) / K * np.eye(K)).sum(axis=0), 0, atol=1e-12
    )
    data = _simulate(rng, 30000, a_true)
    with _one_blas_thread():
        fitted = fit_recalibration(*data, ridge=1e-3)
    err = np.abs(fitted - a_true)
    assert err.max() < 0.15, err.max()
    assert err.mean() < 0.04, err.mean()
    # far better than the starting point A = I
    assert err.mean() < 0.25 * np.abs(np.eye(K) - a_true).mean()


def test_a_large_ridge_shrinks_toward_a_multiple_of_the_identity():
    rng = np.random.default_rng(5)
    a_true = 1.5 * np.eye(K) + 0.5 * rng.normal(size=(K, K))
    data = _simulate(rng, 600, a_true)
    loose = fit_recalibration(*data, ridge=0.1)
    tight = fit_recalibration(*data, ridge=1e6)

    def off_identity(a):
        return np.linalg.norm(a - np.trace(a) / K * np.eye(K))

    assert off_identity(tight) < 1e-3
    assert off_identity(loose) > 0.5
    # and its scale is the unpenalized fit of A = a I
    f = _objective(*data, 0.0)
    best = minimize_scalar(
        lambda a: f((a * np.eye(K)).ravel())[0],
        bounds=(0.01, 10),
        method="bounded",
        options={"xatol": 1e-9},
    )
    assert np.trace(tight) / K == pytest.approx(best.x, abs=1e-4)


def test_apply_recalibration_replaces_only_the_last_column():
    rng = np.random.default_rng(6)
    a = rng.normal(size=(K, K))
    phi = np.c_[np.eye(K), rng.normal(size=K)]
    original = phi.copy()
    out = apply_recalibration(phi, a)
    np.testing.assert_array_equal(out[:, :K], phi[:, :K])
    np.testing.assert_allclose(out[:, K], a @ phi[:, K], atol=1e-14)
    np.testing.assert_array_equal(phi, original)  # the input is not modified
    # batched: a bank of questions (Q, K, d)
    bank = rng.normal(size=(5, K, K + 1))
    out = apply_recalibration(bank, a)
    np.testing.assert_array_equal(out[..., :K], bank[..., :K])
    for q in range(5):
        np.testing.assert_allclose(out[q, :, K], a @ bank[q, :, K], atol=1e-14)
    # no matrix: the features pass through unchanged
    assert apply_recalibration(phi, None) is phi
    read_only = phi.copy()
    read_only.setflags(write=False)
    np.testing.assert_array_equal(apply_recalibration(read_only, np.eye(K)), read_only)
