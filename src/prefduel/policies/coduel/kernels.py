"""Compiled per-round kernels of CODuel (optional: used when numba is installed).

CODuel's per-round work is a one-click Laplace update of every component and, while the
belief is undecided, the lookahead over 15 pairs x 2 outcomes x C components x a bank of
questions; after each session, the E-step of some users under every component. In numpy each
is some hundred small-array operations, each costing more in call overhead than in
arithmetic; compiled, the same arithmetic runs in loops. These kernels compute what
`prefduel.policies.coduel.belief.MixtureBelief.observe`,
`prefduel.policies.coduel.pair_rule.lookahead_pair` and
`prefduel.policies.coduel.population.component_evidence` compute in numpy, with the one
Laplace step and scalar root of `prefduel.core.laplace`, so the two paths agree to rounding
(tests in ``tests/policies/coduel/test_coduel_kernels.py``).

The switch is `prefduel.core.jit.ENABLED` (``PREFDUEL_NUMBA=0`` in the environment forces the
numpy path; without numba: ``pip install prefduel[fast]``).
"""

from __future__ import annotations

import math

import numpy as np

from prefduel.core.btl import sigmoid_scalar
from prefduel.core.jit import compiled
from prefduel.core.laplace import PROBIT, solve_root, update_rows

_sigmoid = compiled(inline="always")(sigmoid_scalar)
# reassociation and contraction (sums may vectorize); no assumptions about infinities or NaN
_FAST = {"reassoc", "contract", "nsz", "arcp"}


@compiled()
def mixture_observe(weights, log_weight, mu, sigma, z, y):  # pragma: no cover - compiled
    """`prefduel.policies.coduel.belief.MixtureBelief.observe` in place: every component's
    Laplace update (``z (1, d)``, ``y (1,)``), log weights plus each component's log
    predictive probability of ``y``; returns the mixture's predictive probability of ``y``
    under ``weights`` (before)."""
    p_first = update_rows(mu, sigma, z, y)
    total = 0.0
    for c in range(p_first.shape[0]):
        p_y = p_first[c] if y[0] == 1.0 else 1.0 - p_first[c]
        log_weight[c] += math.log(max(p_y, 1e-300))
        total += weights[c] * p_y
    return total


@compiled(fastmath=_FAST)
def _lookahead_terms(weights, mu, sigma, phi, bank):  # pragma: no cover - compiled
    """The pair-independent terms of `lookahead_values`: utilities under the current means
    (``u_now (C, K)``, ``u_bank (C, Q*K)``), ``s_phi``, ``g`` (see below), the belief's best
    persona value per bank question and the regret term common to all pairs."""
    n_comp, d = mu.shape
    k = phi.shape[0]
    n_bank = bank.shape[0]
    n_m = n_bank * k  # bank utilities, index q * K + e (personas innermost)
    bank_t = np.ascontiguousarray(bank.reshape(n_m, d).T)  # (d, M)
    u_now = np.zeros((n_comp, k))  # loops, not BLAS: these products are tiny
    for c in range(n_comp):
        for a in range(k):
            for i in range(d):
                u_now[c, a] += mu[c, i] * phi[a, i]
    u_bank = np.zeros((n_comp, n_m))
    # s_phi[c, a] = sigma_c phi_a; a click z = phi_a - phi_b then has sigma_c z = s_phi[c, a] -
    # s_phi[c, b], and shifts the utility of bank entry m, per unit of its step, by
    # z . sigma_c bank_m = g[c, a, m] - g[c, b, m]
    s_phi = np.zeros((n_comp, k, d))
    g = np.zeros((n_comp, k, n_m))
    for c in range(n_comp):
        for i in range(d):
            for m in range(n_m):
                u_bank[c, m] += mu[c, i] * bank_t[i, m]
        for a in range(k):
            for i in range(d):
                acc = 0.0
                for j in range(d):
                    acc += sigma[c, i, j] * phi[a, j]
                s_phi[c, a, i] = acc
                for m in range(n_m):
                    g[c, a, m] += acc * bank_t[i, m]
    best_now = np.zeros(n_bank)
    regret_base = 0.0
    for c in range(n_comp):
        for q in range(n_bank):
            top = u_bank[c, q * k]
            for e in range(1, k):
                top = max(top, u_bank[c, q * k + e])
            best_now[q] += weights[c] * top
        top = u_now[c, 0]
        for e in range(1, k):
            top = max(top, u_now[c, e])
        regret_base += weights[c] * 2.0 * top
    return u_now, u_bank, s_phi, g, best_now, regret_base


@compiled(fastmath=_FAST)
def lookahead_values(weights, mu, sigma, phi, bank, pairs, remaining, updated):  # pragma: no cover
    """Values of every pair under the lookahead (as `pair_rule.lookahead_pair`).

    Args:
        weights: ``(C,)``; mu: ``(C, d)``; sigma: ``(C, d, d)``.
        phi: ``(K, d)`` the current question; bank: ``(Q, K, d)`` recent questions.
        pairs: ``(P, 2)`` the pairs; remaining: rounds left after this one.
        updated: True for the ``"updated"`` value of the best persona, False for
            ``"decision"``.

    Returns:
        ``(P,)`` regret now plus ``remaining`` times the expected greedy regret after the click.
    """
    n_comp, d = mu.shape
    k = phi.shape[0]
    n_bank = bank.shape[0]
    n_pairs = pairs.shape[0]
    n_m = n_bank * k  # bank utilities, index q * K + e (personas innermost)
    u_now, u_bank, s_phi, g, best_now, regret_base = _lookahead_terms(weights, mu, sigma, phi, bank)
    values = np.empty(n_pairs)
    alpha = np.empty((2, n_comp))
    new_w = np.empty((2, n_comp))
    mean = np.empty(n_m)
    util = np.empty(n_m)
    for p in range(n_pairs):
        a, b = pairs[p, 0], pairs[p, 1]
        now = regret_base
        p_1 = 0.0
        p_0 = 0.0
        for c in range(n_comp):
            now -= weights[c] * (u_now[c, a] + u_now[c, b])
            m_c = 0.0
            s_c = 0.0
            for i in range(d):
                zi = phi[a, i] - phi[b, i]
                m_c += zi * mu[c, i]
                s_c += zi * (s_phi[c, a, i] - s_phi[c, b, i])
            p0 = _sigmoid(m_c / math.sqrt(1.0 + PROBIT * s_c))
            alpha[0, c] = solve_root(m_c, s_c, 1.0, p0)
            alpha[1, c] = solve_root(m_c, s_c, 0.0, p0)
            new_w[0, c] = weights[c] * p0
            new_w[1, c] = weights[c] * (1.0 - p0)
            p_1 += new_w[0, c]
            p_0 += new_w[1, c]
        future = 0.0
        for y in range(2):
            p_y = p_1 if y == 0 else p_0
            norm = 1.0 / max(p_y, 1e-300)
            mean[:] = 0.0
            best = np.zeros(n_bank)
            for c in range(n_comp):
                w_c = new_w[y, c] * norm
                step = alpha[y, c]
                for m in range(n_m):
                    util[m] = u_bank[c, m] + step * (g[c, a, m] - g[c, b, m])
                    mean[m] += w_c * util[m]
                if updated:
                    for q in range(n_bank):
                        top = util[q * k]
                        for e in range(1, k):
                            top = max(top, util[q * k + e])
                        best[q] += w_c * top
            total = 0.0
            for q in range(n_bank):
                first = mean[q * k]
                second = -1e300
                for e in range(1, k):
                    v = mean[q * k + e]
                    if v > first:
                        second = first
                        first = v
                    elif v > second:
                        second = v
                total += 2.0 * (best[q] if updated else best_now[q]) - first - second
            future += p_y * total / n_bank
        values[p] = now + remaining * future
    return values


@compiled()
def estep_terms(lam, h, prec, prior_info, const):  # pragma: no cover - compiled
    """Per user and component, the log evidence and posterior moments of
    `prefduel.policies.coduel.population.component_evidence` (Cholesky factor of the
    posterior precision, one triangular solve, the triangular inverse).

    The users are the innermost loop of every step (the "lanes", stored ``(..., n)``), so the
    arithmetic runs in SIMD registers several users at a time; each user's operations and
    their order are those of the one-user-at-a-time loop, so the values are the same to the
    bit (``tests/policies/coduel/test_coduel_kernels.py``).

    Args:
        lam: ``(n, d, d)``, h: ``(n, d)`` likelihood summaries.
        prec: ``(C, d, d)`` component precisions; prior_info: ``(C, d)`` ``prec_c mu_c``.
        const: ``(C,)`` ``mu_c . prec_c mu_c + log det cov_c``.

    Returns:
        ``(loglik (n, C), m (n, C, d), second (n, C, d, d))``: log evidence (up to a
        constant per user), posterior means and ``m m^T + posterior covariance``.
    """
    n, d = h.shape
    n_comp = prec.shape[0]
    lam_t = np.empty((d, d, n))
    h_t = np.empty((d, n))
    for u in range(n):
        for j in range(d):
            h_t[j, u] = h[u, j]
            for i in range(d):
                lam_t[j, i, u] = lam[u, j, i]
    loglik = np.empty((n, n_comp))
    m = np.empty((n, n_comp, d))
    second = np.empty((n, n_comp, d, d))
    chol = np.empty((d, d, n))
    inv = np.zeros((d, d, n))
    v = np.empty((d, n))
    mean = np.empty((d, n))
    acc = np.empty(n)
    for c in range(n_comp):
        logdet = _cholesky_lanes(prec[c], lam_t, chol, acc)
        quad = _solve_lanes(prior_info[c], h_t, chol, v, acc)
        for u in range(n):
            loglik[u, c] = 0.5 * quad[u] - 0.5 * const[c] - logdet[u]
        _inverse_lanes(chol, inv, acc)
        for i in range(d):  # m = L^-T v
            acc[:] = 0.0
            for k in range(i, d):
                for u in range(n):
                    acc[u] += inv[k, i, u] * v[k, u]
            for u in range(n):
                mean[i, u] = acc[u]
                m[u, c, i] = acc[u]
        for i in range(d):  # m m^T + L^-T L^-1
            for j in range(i, d):
                for u in range(n):
                    acc[u] = mean[i, u] * mean[j, u]
                for k in range(j, d):
                    for u in range(n):
                        acc[u] += inv[k, i, u] * inv[k, j, u]
                for u in range(n):
                    second[u, c, i, j] = acc[u]
                    second[u, c, j, i] = acc[u]
    return loglik, m, second


@compiled()
def _cholesky_lanes(prec, lam_t, chol, acc):  # pragma: no cover - compiled
    """Cholesky factors ``chol (d, d, n)`` (lower triangle) of ``prec (d, d)`` plus each
    user's ``lam_t[..., u]``, row by row; returns the log determinants of the factors
    ``(n,)``."""
    d, _, n = lam_t.shape
    logdet = np.zeros(n)
    for j in range(d):
        for i in range(j + 1):
            for u in range(n):
                acc[u] = prec[j, i] + lam_t[j, i, u]
            for k in range(i):
                for u in range(n):
                    acc[u] -= chol[j, k, u] * chol[i, k, u]
            if i == j:
                for u in range(n):
                    chol[j, j, u] = math.sqrt(acc[u])
                for u in range(n):
                    logdet[u] += math.log(chol[j, j, u])
            else:
                for u in range(n):
                    chol[j, i, u] = acc[u] / chol[i, i, u]
    return logdet


@compiled()
def _solve_lanes(prior_info, h_t, chol, v, acc):  # pragma: no cover - compiled
    """``v = L^-1 (prior_info + h)`` per user into ``v (d, n)``; returns ``|v|^2 (n,)``."""
    d, n = h_t.shape
    quad = np.zeros(n)
    for j in range(d):
        for u in range(n):
            acc[u] = prior_info[j] + h_t[j, u]
        for k in range(j):
            for u in range(n):
                acc[u] -= chol[j, k, u] * v[k, u]
        for u in range(n):
            v[j, u] = acc[u] / chol[j, j, u]
            quad[u] += v[j, u] * v[j, u]
    return quad


@compiled()
def _inverse_lanes(chol, inv, acc):  # pragma: no cover - compiled
    """``L^-1`` per user into the lower triangle of ``inv (d, d, n)`` (its upper triangle
    stays zero), by forward substitution."""
    d, _, n = chol.shape
    for j in range(d):
        for i in range(j + 1):
            one = 1.0 if i == j else 0.0
            for u in range(n):
                acc[u] = one
            for k in range(i, j):
                for u in range(n):
                    acc[u] -= chol[j, k, u] * inv[k, i, u]
            for u in range(n):
                inv[j, i, u] = acc[u] / chol[j, j, u]
