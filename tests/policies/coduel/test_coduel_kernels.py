"""CODuel's compiled kernels against the numpy path they replace (skipped without numba), and
the gate's running sums against a recomputation. The compiled Laplace step itself is tested in
``tests/core/test_laplace.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prefduel.core import jit
from prefduel.policies import load_policy
from prefduel.policies.base import policy_context
from prefduel.policies.coduel import kernels
from prefduel.policies.coduel.belief import MixtureBelief
from prefduel.policies.coduel.pair_rule import lookahead_pair

D = 7
K = 6
compiled = pytest.mark.skipif(not jit.ENABLED, reason="numba is not installed")


def _belief(rng, c, scale=0.3):
    weights = rng.dirichlet(np.ones(c))
    mu = rng.normal(scale=1.2, size=(c, D))
    a = rng.normal(size=(c, D, D))
    sigma = scale * (a @ np.swapaxes(a, 1, 2) / D + 0.2 * np.eye(D))
    return weights, mu, sigma


def _question(rng, q=None):
    phi = rng.normal(size=(K, D) if q is None else (q, K, D))
    phi[..., :K] = np.eye(K)
    return phi


@compiled
@pytest.mark.parametrize("value", ["updated", "decision"])
@pytest.mark.parametrize(("seed", "c", "q"), [(0, 1, 16), (1, 4, 16), (2, 12, 5), (3, 3, 1)])
def test_lookahead_kernel_equals_the_numpy_values(value, seed, c, q):
    rng = np.random.default_rng(seed)
    weights, mu, sigma = _belief(rng, c, scale=0.3 if seed % 2 else 3.0)
    phi, bank = _question(rng), _question(rng, q)
    pair_c, fast = lookahead_pair(weights, mu, sigma, phi, bank, 9, value, compiled=True)
    pair_n, slow = lookahead_pair(weights, mu, sigma, phi, bank, 9, value, compiled=False)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
    assert pair_c == pair_n


@compiled
@pytest.mark.parametrize("seed", range(3))
def test_mixture_observe_kernel_equals_the_numpy_update(seed, monkeypatch):
    rng = np.random.default_rng(40 + seed)
    weights, mu, sigma = _belief(rng, 5, scale=1.0 + 10 * seed)
    fast = MixtureBelief(weights, mu, sigma)
    slow = MixtureBelief(weights, mu, sigma)
    for t in range(20):
        z = _question(rng)[t % K] - _question(rng)[(t + 1) % K]
        y = int(rng.random() < 0.5)
        p_fast = fast.observe(z, y)
        monkeypatch.setattr(jit, "ENABLED", False)
        p_slow = slow.observe(z, y)
        monkeypatch.setattr(jit, "ENABLED", True)
        assert p_fast == pytest.approx(p_slow, rel=1e-12)
        np.testing.assert_allclose(fast.mu, slow.mu, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fast.sigma, slow.sigma, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fast.log_weight, slow.log_weight, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fast.weights, slow.weights, atol=1e-12)


def _estep_one_user_at_a_time(lam, h, prec, prior_info, const):
    """The E-step terms computed one user and component at a time, in the order of operations
    that CODuel's published figures were computed with (the compiled kernel runs several users
    at once and must give the same bits)."""
    n, d = h.shape
    n_comp = prec.shape[0]
    loglik, m, second = np.empty((n, n_comp)), np.empty((n, n_comp, d)), np.empty((n, n_comp, d, d))
    for u in range(n):
        for c in range(n_comp):
            chol, inv, v = np.zeros((d, d)), np.zeros((d, d)), np.zeros(d)
            logdet = quad = 0.0
            for j in range(d):
                for i in range(j + 1):
                    acc = prec[c, j, i] + lam[u, j, i]
                    for k in range(i):
                        acc -= chol[j, k] * chol[i, k]
                    if i == j:
                        chol[j, j] = math.sqrt(acc)
                        logdet += math.log(chol[j, j])
                    else:
                        chol[j, i] = acc / chol[i, i]
            for j in range(d):
                acc = prior_info[c, j] + h[u, j]
                for k in range(j):
                    acc -= chol[j, k] * v[k]
                v[j] = acc / chol[j, j]
                quad += v[j] * v[j]
            loglik[u, c] = 0.5 * quad - 0.5 * const[c] - logdet
            for j in range(d):
                for i in range(j + 1):
                    acc = 1.0 if i == j else 0.0
                    for k in range(i, j):
                        acc -= chol[j, k] * inv[k, i]
                    inv[j, i] = acc / chol[j, j]
            for i in range(d):
                acc = 0.0
                for k in range(i, d):
                    acc += inv[k, i] * v[k]
                m[u, c, i] = acc
            for i in range(d):
                for j in range(i, d):
                    acc = m[u, c, i] * m[u, c, j]
                    for k in range(j, d):
                        acc += inv[k, i] * inv[k, j]
                    second[u, c, i, j] = second[u, c, j, i] = acc
    return loglik, m, second


@compiled
@pytest.mark.parametrize(("seed", "n", "c"), [(0, 1, 1), (1, 9, 3), (2, 37, 5)])
def test_estep_kernel_equals_one_user_at_a_time_to_the_bit(seed, n, c):
    rng = np.random.default_rng(70 + seed)
    a = rng.normal(size=(n, D, 12))
    lam = np.ascontiguousarray(a @ np.swapaxes(a, 1, 2) / 4)
    h = rng.normal(size=(n, D))
    _, mu, cov = _belief(rng, c, scale=1.0)
    prec = np.linalg.inv(cov)
    prior_info = np.einsum("cij,cj->ci", prec, mu)
    const = np.einsum("ci,ci->c", mu, prior_info) + np.linalg.slogdet(cov)[1]
    fast = kernels.estep_terms(lam, h, prec, prior_info, const)
    slow = _estep_one_user_at_a_time(lam, h, prec, prior_info, const)
    for got, want in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(got, want)


def test_gate_running_sums_equal_a_recomputation():
    """The gate reads a running mean and sum of squared deviations of the sessions' llr; they
    equal numpy's mean and standard deviation of the whole list, session after session."""
    rng = np.random.default_rng(5)
    policy = load_policy("coduel")
    policy.reset(np.random.default_rng(0), policy_context(10, 24, 6, 7))
    values = list(3.0 + rng.normal(scale=4.0, size=300))
    for i, v in enumerate(values, start=1):
        policy._add_llr(v)
        arr = np.asarray(values[:i])
        assert policy._llr_mean == pytest.approx(arr.mean(), rel=1e-12, abs=1e-12)
        if i > 1:
            sd = np.sqrt(policy._llr_m2 / (i - 1))
            assert sd == pytest.approx(arr.std(ddof=1), rel=1e-10)
    assert policy.llr == values
