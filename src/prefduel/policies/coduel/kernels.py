"""Compiled per-round kernels of CODuel (optional: used when numba is installed).

CODuel's per-round work is a one-click Laplace update of every component and, while the
belief is undecided, the lookahead over 15 pairs x 2 outcomes x C components x a bank of
questions. In numpy both are some hundred small-array operations per round, each costing
more in call overhead than in arithmetic; compiled, the same arithmetic runs in loops. These
kernels compute what `prefduel.policies.coduel.belief.laplace_step_batch` and
`prefduel.policies.coduel.pair_rule.lookahead_pair` compute, with the same scalar root (to
``|f| < 1e-10``), so the two paths agree to rounding and to that tolerance (tests in
``tests/policies/coduel/test_coduel_kernels.py``).

``PREFDUEL_NUMBA=0`` in the environment forces the numpy path (`ENABLED` is False then, and
when numba is not installed: ``pip install prefduel[fast]``).
"""

from __future__ import annotations

import math
import os

import numpy as np

try:  # optional extra
    if os.environ.get("PREFDUEL_NUMBA", "1") == "0":
        raise ImportError("disabled by PREFDUEL_NUMBA=0")
    from numba import njit
except ImportError:  # the numpy path is used
    ENABLED = False

    def njit(*args, **kwargs):  # a no-op stand-in, so that the module still imports
        def wrap(fn):
            return fn

        return wrap if not args or not callable(args[0]) else args[0]

else:
    ENABLED = True


def _compiled(**options):
    """``njit(cache=True, **options)``, or without the on-disk cache where numba cannot keep
    one (a read-only install with an unwritable home folder): compiled once per process."""

    def wrap(fn):
        try:
            return njit(cache=True, **options)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return njit(cache=False, **options)(fn)

    return wrap

_PROBIT = math.pi / 8.0
# reassociation and contraction (sums may vectorize); no assumptions about infinities or NaN
_FAST = {"reassoc", "contract", "nsz", "arcp"}


@_compiled(inline="always")
def _sigmoid(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@_compiled()
def _solve(m: float, s: float, y: float, p0: float) -> float:
    """The root of ``alpha - y + sigmoid(m + alpha s)`` (as `belief.solve_step`): plain
    Newton from the predictive step, safeguarded Newton (rtsafe) if it has not converged."""
    alpha = (y - p0) / (1.0 + s * (p0 - p0 * p0))
    for _ in range(6):
        p = _sigmoid(m + alpha * s)
        f = alpha - y + p
        if abs(f) < 1e-10:
            return alpha
        alpha -= f / (1.0 + s * (p - p * p))
    lo, hi = y - 1.0, y
    alpha = min(max(alpha, lo), hi)
    dx = dx_old = 1.0
    for _ in range(60):
        p = _sigmoid(m + alpha * s)
        f = alpha - y + p
        if abs(f) < 1e-10:
            break
        if f > 0:
            hi = alpha
        else:
            lo = alpha
        df = 1.0 + s * (p - p * p)
        newton = alpha - f / df
        if (newton - hi) * (newton - lo) >= 0.0 or 2.0 * abs(f) > abs(dx_old * df):
            dx_old, dx = dx, 0.5 * (hi - lo)
            alpha = lo + dx
        else:
            dx_old, dx = dx, f / df
            alpha = newton
    return alpha


@_compiled()
def laplace_rows(mu, sigma, z, y):  # pragma: no cover - compiled
    """One-click Laplace update, in place, of ``mu (B, d)``, ``sigma (B, d, d)`` for one
    click ``z (d,)``, ``y``; returns ``p_first (B,)`` (before the update)."""
    n, d = mu.shape
    p_first = np.empty(n)
    sz = np.empty(d)
    for b in range(n):
        m = 0.0
        s = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += sigma[b, i, j] * z[j]
            sz[i] = acc
            m += z[i] * mu[b, i]
            s += z[i] * acc
        p0 = _sigmoid(m / math.sqrt(1.0 + _PROBIT * s))
        p_first[b] = p0
        alpha = _solve(m, s, y, p0)
        p = _sigmoid(m + alpha * s)
        w = p * (1.0 - p)
        c = w / (1.0 + w * s)
        for i in range(d):
            mu[b, i] += alpha * sz[i]
            for j in range(d):
                sigma[b, i, j] -= c * sz[i] * sz[j]
    return p_first


@_compiled()
def mixture_observe(weights, log_weight, mu, sigma, z, y):  # pragma: no cover - compiled
    """`prefduel.policies.coduel.belief.MixtureBelief.observe` in place: every component's
    Laplace update, log weights plus each component's log predictive probability of ``y``;
    returns the mixture's predictive probability of ``y`` under ``weights`` (before)."""
    p_first = laplace_rows(mu, sigma, z, y)
    total = 0.0
    for c in range(p_first.shape[0]):
        p_y = p_first[c] if y == 1.0 else 1.0 - p_first[c]
        log_weight[c] += math.log(max(p_y, 1e-300))
        total += weights[c] * p_y
    return total


@_compiled()
def laplace_one(mu, sigma, z, y):  # pragma: no cover - compiled
    """`prefduel.policies.laplace.laplace_step` (the no-transfer learner's update, same
    iteration and tolerance), in place on ``mu (d,)``, ``sigma (d, d)``; returns the
    predictive probability that the first item wins (before the update)."""
    d = mu.shape[0]
    sz = np.empty(d)
    m = 0.0
    s = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += sigma[i, j] * z[j]
        sz[i] = acc
        m += z[i] * mu[i]
    for i in range(d):
        s += z[i] * sz[i]
    predictive = _sigmoid(m / math.sqrt(1.0 + _PROBIT * s))
    lo, hi = y - 1.0, y
    alpha = 0.0
    dx = dx_old = 1.0
    for _ in range(64):
        p = _sigmoid(m + alpha * s)
        f = alpha - y + p
        if abs(f) < 1e-12:
            break
        if f > 0:
            hi = alpha
        else:
            lo = alpha
        df = 1.0 + s * p * (1.0 - p)
        out = ((alpha - hi) * df - f) * ((alpha - lo) * df - f) > 0
        if out or abs(2.0 * f) > abs(dx_old * df):
            dx_old, dx = dx, 0.5 * (hi - lo)
            alpha = lo + dx
        else:
            dx_old, dx = dx, f / df
            alpha -= dx
        if abs(dx) < 1e-15:
            break
    p = _sigmoid(m + alpha * s)
    w = p * (1.0 - p)
    c = w / (1.0 + w * s)
    for i in range(d):
        mu[i] += alpha * sz[i]
        for j in range(d):
            sigma[i, j] -= c * sz[i] * sz[j]
    return predictive


@_compiled(fastmath=_FAST)
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


@_compiled(fastmath=_FAST)
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
            p0 = _sigmoid(m_c / math.sqrt(1.0 + _PROBIT * s_c))
            alpha[0, c] = _solve(m_c, s_c, 1.0, p0)
            alpha[1, c] = _solve(m_c, s_c, 0.0, p0)
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


@_compiled()
def estep_terms(lam, h, prec, prior_info, const):  # pragma: no cover - compiled
    """Per user and component, the log evidence and posterior moments of
    `prefduel.policies.coduel.population.component_evidence` (Cholesky factor of the
    posterior precision, one triangular solve, the triangular inverse).

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
    loglik = np.empty((n, n_comp))
    m = np.empty((n, n_comp, d))
    second = np.empty((n, n_comp, d, d))
    chol = np.empty((d, d))
    inv = np.empty((d, d))
    v = np.empty(d)
    for u in range(n):
        for c in range(n_comp):
            logdet = 0.0
            for j in range(d):  # Cholesky, row by row (lower triangle)
                for i in range(j + 1):
                    acc = prec[c, j, i] + lam[u, j, i]
                    for k in range(i):
                        acc -= chol[j, k] * chol[i, k]
                    if i == j:
                        chol[j, j] = math.sqrt(acc)
                        logdet += math.log(chol[j, j])
                    else:
                        chol[j, i] = acc / chol[i, i]
            quad = 0.0
            for j in range(d):  # v = L^-1 b
                acc = prior_info[c, j] + h[u, j]
                for k in range(j):
                    acc -= chol[j, k] * v[k]
                v[j] = acc / chol[j, j]
                quad += v[j] * v[j]
            loglik[u, c] = 0.5 * quad - 0.5 * const[c] - logdet
            for j in range(d):  # L^-1, lower triangular
                for i in range(d):
                    inv[j, i] = 0.0
                for i in range(j + 1):
                    acc = 1.0 if i == j else 0.0
                    for k in range(i, j):
                        acc -= chol[j, k] * inv[k, i]
                    inv[j, i] = acc / chol[j, j]
            for i in range(d):  # m = L^-T v
                acc = 0.0
                for k in range(i, d):
                    acc += inv[k, i] * v[k]
                m[u, c, i] = acc
            for i in range(d):  # m m^T + L^-T L^-1
                for j in range(i, d):
                    acc = m[u, c, i] * m[u, c, j]
                    for k in range(j, d):
                        acc += inv[k, i] * inv[k, j]
                    second[u, c, i, j] = acc
                    second[u, c, j, i] = acc
    return loglik, m, second
