"""Compiled kernels of coduel-ask (optional: used when numba is installed).

Per session coduel-ask values every unasked question on a few hundred draws of theta and adds
each answer to every component of its mixture by an exact Laplace step. In numpy each is a few
dozen small-array operations (a Newton loop of batched solves for a ``least`` answer), each
costing more in call overhead than in arithmetic; compiled, the same arithmetic runs in loops.
These kernels compute what `prefduel.policies.coduel.answers.information_gain` and
`prefduel.policies.coduel.answers.observe_answer` compute in numpy, with the same iteration
counts and stopping rules, so the two paths agree to rounding, not to the bit: the solves here
go through Cholesky factors where numpy's go through LU, and a question's value takes each
answer's log probability from the latent (the exponentials and logarithms of the sigmoids come
from numpy, whose whole-array functions are several times faster than compiled scalar calls).
Tests in ``tests/asking/test_ask_kernels.py``. `replay_clicks` runs the compiled one-click step
of `prefduel.core.laplace` over a session's clicks: the same to the bit as click by click.

The switch is `prefduel.core.jit.ENABLED` (``PREFDUEL_NUMBA=0`` in the environment forces the
numpy path; without numba: ``pip install prefduel[fast]``).
"""

from __future__ import annotations

import math

import numpy as np

from prefduel.core.answer_model import LEVEL_CUTS
from prefduel.core.btl import sigmoid_scalar
from prefduel.core.jit import compiled
from prefduel.core.laplace import update_rows

_sigmoid = compiled(inline="always")(sigmoid_scalar)
#: The ordered logit's cuts with the two open ends.
_CUTS = np.array([-np.inf, *LEVEL_CUTS, np.inf])
_TINY = 1e-300
# 1 - exp(c_{j-1} - c_j) for the level cuts and its log (index j = 1..3; entry 0 unused)
_GAPS = np.r_[1.0, -np.expm1(-np.diff(LEVEL_CUTS))]
_LOG_GAPS = np.log(_GAPS)


@compiled(inline="always")
def _sigmoid_logs(x, e, tail):  # pragma: no cover - compiled
    """``(sigmoid(x), log sigmoid(x), log(1 - sigmoid(x)))`` from ``e = exp(-|x|)`` and
    ``tail = log1p(e)`` (``log sigmoid(x) = -max(-x, 0) - tail``), as `prefduel.core.btl.sigmoid`
    computes the first."""
    if x >= 0.0:
        return 1.0 / (1.0 + e), -tail, -x - tail
    return e / (1.0 + e), x - tail, -tail


@compiled(inline="always")
def _plogp(p):  # pragma: no cover - compiled
    return p * math.log(max(p, _TINY))


@compiled()
def sigmoid_gains(x, e, tail, level):  # pragma: no cover - compiled
    """`information_gain` of ``pair`` or ``level`` questions from their sigmoids' arguments.

    The exponentials and logarithms come in (numpy computes them over whole arrays several
    times faster than compiled scalar calls); each answer's log probability is formed from
    them: ``level`` answer j has probability ``s_j - s_{j-1} = s_j (1 - s_{j-1}) (1 -
    exp(c_{j-1} - c_j))``, ``s_j = sigmoid(c_j - latent)`` the chance of an answer ``<= j``.

    Args:
        x: ``(n, Q, J)`` per draw and question the sigmoids' arguments: ``J = 1``, the latent,
            for ``pair``; the ``J = 4`` values ``c_j - latent`` for ``level``.
        e: ``exp(-|x|)``; tail: ``log1p(e)``.
        level: Whether the questions are ``level`` questions.

    Returns:
        ``(Q,)`` the entropy of the averaged answer distribution minus the average entropy.
    """
    n, n_q, cuts = x.shape
    answers = 5 if level else 2
    mean = np.empty(answers)
    out = np.empty(n_q)
    for q in range(n_q):
        mean[:] = 0.0
        inner = 0.0
        for i in range(n):
            if not level:
                first, log_first, log_second = _sigmoid_logs(x[i, q, 0], e[i, q, 0], tail[i, q, 0])
                second = 1.0 - first
                mean[0] += second
                mean[1] += first
                inner -= second * log_second + first * log_first
                continue
            below = 0.0
            log_above = 0.0
            for j in range(cuts):
                s_j, log_s, log_not = _sigmoid_logs(x[i, q, j], e[i, q, j], tail[i, q, j])
                if j == 0:
                    p_j, log_p = s_j, log_s
                else:
                    p_j = s_j * (1.0 - below) * _GAPS[j]
                    log_p = log_s + log_above + _LOG_GAPS[j]
                mean[j] += p_j
                inner -= p_j * log_p
                below, log_above = s_j, log_not
            mean[cuts] += 1.0 - below
            inner -= (1.0 - below) * log_above
        outer = 0.0
        for a in range(answers):
            outer -= _plogp(mean[a] / n)
        out[q] = outer - inner / n
    return out


@compiled(inline="always")
def _least_probabilities(latent, probs):  # pragma: no cover - compiled
    """`prefduel.core.answer_model.least_probabilities` of one row into ``probs``; returns the
    log of its normalizer after the shift, so that ``log p_k = -latent_k - top - that``."""
    top = -latent[0]
    for k in range(1, latent.shape[0]):
        top = max(top, -latent[k])
    total = 0.0
    for k in range(latent.shape[0]):
        probs[k] = math.exp(-latent[k] - top)
        total += probs[k]
    for k in range(latent.shape[0]):
        probs[k] /= total
    return top + math.log(total)


@compiled()
def least_gains(theta, features):  # pragma: no cover - compiled
    """`information_gain` of ``least`` questions, ``features (Q, K, d)`` (``M / noise`` each;
    a question with the features of an earlier one takes its value)."""
    n, d = theta.shape
    n_q, k = features.shape[0], features.shape[1]
    latent = np.empty(k)
    probs = np.empty(k)
    mean = np.empty(k)
    out = np.empty(n_q)
    for q in range(n_q):
        earlier = -1
        for r in range(q):
            if np.array_equal(features[q], features[r]):
                earlier = r
                break
        if earlier >= 0:
            out[q] = out[earlier]
            continue
        mean[:] = 0.0
        inner = 0.0
        for i in range(n):
            for a in range(k):
                acc = 0.0
                for j in range(d):
                    acc += theta[i, j] * features[q, a, j]
                latent[a] = acc
            shift = _least_probabilities(latent, probs)
            for a in range(k):
                mean[a] += probs[a]
                inner -= probs[a] * (-latent[a] - shift)
        outer = 0.0
        for a in range(k):
            outer -= _plogp(mean[a] / n)
        out[q] = outer - inner / n
    return out


@compiled(inline="always")
def _rank_one_terms(level, answer, u):  # pragma: no cover - compiled
    """Log-likelihood, slope and minus the curvature in ``u`` (``answers._pair_terms`` and
    ``answers._level_terms``)."""
    if not level:
        p = _sigmoid(u)
        loglik = math.log(max(p if answer == 1 else 1.0 - p, _TINY))
        return loglik, answer - p, p * (1.0 - p)
    upper = _sigmoid(_CUTS[answer + 1] - u)
    lower = _sigmoid(_CUTS[answer] - u)
    f_up, f_lo = upper * (1 - upper), lower * (1 - lower)
    prob = max(upper - lower, _TINY)
    slope = (f_lo - f_up) / prob
    second = ((1 - 2 * upper) * f_up - (1 - 2 * lower) * f_lo) / prob - slope**2
    return math.log(prob), slope, -second


@compiled()
def observe_rank_one(z, answer, level, mu, sigma, steps, tolerance):  # pragma: no cover
    """``answers._observe_rank_one`` on every component, in place: the exact 1-D Laplace step
    on ``u = z . theta`` of a ``pair`` (``level`` False) or ``level`` answer.

    Args:
        z: ``(d,)``; answer: the answer; mu: ``(C, d)``; sigma: ``(C, d, d)``.
        steps, tolerance: Newton's iteration cap and step tolerance.

    Returns:
        ``(C,)`` each component's log evidence of the answer.
    """
    n_comp, d = mu.shape
    out = np.empty(n_comp)
    sz = np.empty(d)
    for c in range(n_comp):
        m = 0.0
        s = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += sigma[c, i, j] * z[j]
            sz[i] = acc
            m += z[i] * mu[c, i]
        for i in range(d):
            s += z[i] * sz[i]
        if s <= 0.0:
            out[c] = _rank_one_terms(level, answer, m)[0]
            continue
        u = m
        for _ in range(steps):
            _, slope, curv = _rank_one_terms(level, answer, u)
            step = (slope - (u - m) / s) / (curv + 1.0 / s)
            u += step
            if abs(step) < tolerance:
                break
        loglik, _, curv = _rank_one_terms(level, answer, u)
        shift = (u - m) / s
        factor = curv / (1.0 + curv * s)
        for i in range(d):
            mu[c, i] += sz[i] * shift
            for j in range(d):
                sigma[c, i, j] -= (sz[i] * sz[j]) * factor
        out[c] = loglik - (u - m) ** 2 / (2 * s) - 0.5 * math.log1p(curv * s)
    return out


@compiled(inline="always")
def _cholesky(a, chol):  # pragma: no cover - compiled
    """Lower Cholesky factor of the SPD ``a`` into ``chol``; returns ``log det a``, or NaN
    when ``a`` is not numerically positive definite."""
    d = a.shape[0]
    logdet = 0.0
    for j in range(d):
        for i in range(j + 1):
            acc = a[j, i]
            for k in range(i):
                acc -= chol[j, k] * chol[i, k]
            if i == j:
                if not acc > 0.0:
                    return math.nan
                chol[j, j] = math.sqrt(acc)
                logdet += 2.0 * math.log(chol[j, j])
            else:
                chol[j, i] = acc / chol[i, i]
    return logdet


@compiled(inline="always")
def _cholesky_solve(chol, b, x):  # pragma: no cover - compiled
    """``x = a^-1 b`` from the Cholesky factor of ``a``."""
    d = b.shape[0]
    for j in range(d):
        acc = b[j]
        for k in range(j):
            acc -= chol[j, k] * x[k]
        x[j] = acc / chol[j, j]
    for j in range(d - 1, -1, -1):
        acc = x[j]
        for k in range(j + 1, d):
            acc -= chol[k, j] * x[k]
        x[j] = acc / chol[j, j]


@compiled(inline="always")
def _cholesky_inverse(chol, inv, column):  # pragma: no cover - compiled
    """``a^-1`` into ``inv`` from the Cholesky factor of ``a``, column by column."""
    d = chol.shape[0]
    unit = np.zeros(d)
    for i in range(d):
        unit[i] = 1.0
        _cholesky_solve(chol, unit, column)
        unit[i] = 0.0
        for j in range(d):
            inv[j, i] = column[j]


@compiled(inline="always")
def _least_terms(utility, theta, probs, mean, hess):  # pragma: no cover - compiled
    """``answers._least_terms`` of one theta: the softmax of ``-utility theta`` into ``probs``
    and ``U' (diag p - p p') U`` into ``hess``."""
    k, d = utility.shape
    latent = np.empty(k)
    for a in range(k):
        acc = 0.0
        for j in range(d):
            acc += theta[j] * utility[a, j]
        latent[a] = acc
    _least_probabilities(latent, probs)
    for i in range(d):
        acc = 0.0
        for a in range(k):
            acc += probs[a] * utility[a, i]
        mean[i] = acc
    for i in range(d):
        for j in range(d):
            acc = 0.0
            for a in range(k):
                acc += probs[a] * utility[a, i] * utility[a, j]
            hess[i, j] = acc - mean[i] * mean[j]


@compiled()
def observe_least(utility, answer, mu, sigma, steps, tolerance):  # pragma: no cover
    """``answers._observe_least``: the Laplace step of a ``least`` answer on every component by
    Newton in theta (all components step until the largest step is below ``tolerance``).

    Returns:
        ``(ok, new_mu (C, d), new_sigma (C, d, d), log_evidence (C,))``; ``ok`` is False (and
        the rest undefined) when a covariance or posterior precision is not numerically
        positive definite, for the caller to take the numpy path.
    """
    n_comp, d = mu.shape
    k = utility.shape[0]
    precision = np.empty((n_comp, d, d))
    logdet_sigma = np.empty(n_comp)
    chol = np.empty((d, d))
    column = np.empty(d)
    for c in range(n_comp):
        logdet_sigma[c] = _cholesky(sigma[c], chol)
        if math.isnan(logdet_sigma[c]):
            return False, mu, sigma, np.empty(n_comp)
        _cholesky_inverse(chol, precision[c], column)
    theta = mu.copy()
    probs = np.empty(k)
    mean = np.empty(d)
    hess = np.empty((d, d))
    system = np.empty((d, d))
    grad = np.empty(d)
    step = np.empty(d)
    for _ in range(steps):
        largest = 0.0
        for c in range(n_comp):
            _least_terms(utility, theta[c], probs, mean, hess)
            for i in range(d):
                acc = 0.0
                for a in range(k):
                    acc += (probs[a] - (1.0 if a == answer else 0.0)) * utility[a, i]
                for j in range(d):
                    acc -= precision[c, i, j] * (theta[c, j] - mu[c, j])
                    system[i, j] = precision[c, i, j] + hess[i, j]
                grad[i] = acc
            if math.isnan(_cholesky(system, chol)):
                return False, mu, sigma, np.empty(n_comp)
            _cholesky_solve(chol, grad, step)
            for i in range(d):
                theta[c, i] += step[i]
                largest = max(largest, abs(step[i]))
        if largest < tolerance:
            break
    new_sigma = np.empty((n_comp, d, d))
    evidence = np.empty(n_comp)
    for c in range(n_comp):
        _least_terms(utility, theta[c], probs, mean, hess)
        for i in range(d):
            for j in range(d):
                system[i, j] = precision[c, i, j] + hess[i, j]
        logdet_post = _cholesky(system, chol)
        if math.isnan(logdet_post):
            return False, mu, sigma, np.empty(n_comp)
        _cholesky_inverse(chol, hess, column)  # hess is free now: the posterior covariance
        quad = 0.0
        for i in range(d):
            for j in range(d):
                new_sigma[c, i, j] = 0.5 * (hess[i, j] + hess[j, i])
                quad += (theta[c, i] - mu[c, i]) * precision[c, i, j] * (theta[c, j] - mu[c, j])
        # det(I + Sigma H) = det(Sigma) det(Sigma^-1 + H)
        logdet = logdet_sigma[c] + logdet_post
        evidence[c] = math.log(max(probs[answer], _TINY)) - 0.5 * quad - 0.5 * logdet
    return True, theta, new_sigma, evidence


@compiled()
def replay_clicks(mu, sigma, z, y):  # pragma: no cover - compiled
    """`prefduel.core.laplace.laplace_update` of one belief ``mu (1, d)``, ``sigma (1, d, d)``
    on the clicks ``z (S, d)``, ``y (S,)`` in turn, in place: the same compiled step, with one
    call from Python for a whole session."""
    for t in range(z.shape[0]):
        update_rows(mu, sigma, z[t : t + 1], y[t : t + 1])
