"""Preference answers as likelihood terms on Gaussian beliefs, and which question to ask.

A learner's theta (d,) scores persona ``p`` on a question with features ``phi`` (K, d) as
``phi_p . theta``, in click logits. Averaged over a session's questions the persona's utility is
``(M theta)_p`` with ``M = [I_K, gbar]`` (K, d): the persona indicators and the mean rater score
``gbar`` (K,) of each persona (layouts without a rater column: ``M = [I_K, 0]``). The published
answer model (`prefduel.core.answer_model`) reads those utilities divided by the answer noise:

- ``pair`` (a, b): a click on ``z = (M_a - M_b) / noise`` (rank one);
- ``level`` with loadings ``l``: an ordered logit on ``z . theta``, ``z = dir(l) M / noise``,
  ``dir`` the direction whose product with the utilities is the answer model's gap (rank one);
- ``least``: a softmax over ``-M theta / noise`` (rank K).

`observe_answer` adds an answer to a batch of Gaussians ``N(mu[c], Sigma[c])`` by a Laplace
step (exact mode by Newton, covariance at the mode) and returns each one's log evidence, so a
mixture's weights follow the answers as they follow clicks. `information_gain` scores every
question by the mutual information between its answer and theta under a mixture, from draws.

Both run compiled when numba is installed (`prefduel.policies.coduel.ask_kernels`, the same
arithmetic in loops; ``PREFDUEL_NUMBA=0`` keeps the numpy code below).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prefduel.core import jit
from prefduel.core.answer_model import (
    LEVEL_CUTS,
    answer_entropy,
    least_probabilities,
    level_direction,
    level_probabilities,
    pair_probabilities,
)
from prefduel.core.btl import sigmoid
from prefduel.policies.coduel import ask_kernels

NEWTON_STEPS = 30
TOLERANCE = 1e-10


def utility_map(k: int, d: int, gbar: np.ndarray | None) -> np.ndarray:
    """``M`` (K, d): the personas' session-average utilities are ``M theta``."""
    out = np.zeros((k, d))
    out[:, :k] = np.eye(k)
    if gbar is not None and d == k + 1:
        out[:, k] = gbar
    return out


def question_features(
    question: dict[str, Any],
    utility: np.ndarray,
    noise: float,
    direction: np.ndarray | None = None,
) -> np.ndarray:
    """A question's features: ``z`` (d,) for ``pair`` and ``level``, ``M / noise`` (K, d) for
    ``least`` (see the module docstring).

    Args:
        question: The public question.
        utility: ``M`` (K, d).
        noise: The answer noise.
        direction: A ``level`` question's `level_direction`, if already known (it depends on
            the loadings only).
    """
    kind = question["kind"]
    if kind == "pair":
        a, b = question["pair"]
        return (utility[a] - utility[b]) / noise
    if kind == "level":
        if direction is None:
            direction = level_direction(np.asarray(question["loadings"], dtype=float))
        return direction @ utility / noise
    return utility / noise


def answer_probabilities(kind: str, features: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``(n, answers)`` probability of each answer under each of ``theta`` (n, d)."""
    latent = theta @ features.T
    if kind == "pair":
        return pair_probabilities(latent)
    if kind == "level":
        return level_probabilities(latent)
    return least_probabilities(latent)


def observe_answer(
    kind: str,
    features: np.ndarray,
    answer: int,
    mu: np.ndarray,
    sigma: np.ndarray,
    compiled: bool | None = None,
) -> np.ndarray:
    """Laplace update of ``N(mu[c], sigma[c])`` (C, d), (C, d, d) on one answer, in place.

    Args:
        kind, features, answer: The question's kind and features, and its answer.
        mu, sigma: The Gaussians; C-contiguous float64, overwritten.
        compiled: False for the numpy path even when numba is enabled (the two paths agree
            to rounding, not to the bit); by default the compiled kernels when it is.

    Returns:
        ``(C,)`` each Gaussian's log evidence of the answer (Laplace approximation).
    """
    if jit.ENABLED and compiled is not False:
        evidence = _observe_compiled(kind, features, answer, mu, sigma)
        if evidence is not None:
            return evidence
    if kind == "least":
        return _observe_least(features, answer, mu, sigma)
    grad_hess = _pair_terms if kind == "pair" else _level_terms
    return np.array(
        [_observe_rank_one(features, answer, grad_hess, mu[c], sigma[c]) for c in range(len(mu))]
    )


def _observe_compiled(
    kind: str, features: np.ndarray, answer: int, mu: np.ndarray, sigma: np.ndarray
) -> np.ndarray | None:
    """`observe_answer` by the compiled kernels; None (nothing changed) where a ``least``
    step meets a matrix that is not numerically positive definite: numpy's path then runs."""
    if kind != "least":
        level = kind == "level"
        z = np.ascontiguousarray(features, dtype=float)
        return ask_kernels.observe_rank_one(z, answer, level, mu, sigma, NEWTON_STEPS, TOLERANCE)
    utility = np.ascontiguousarray(features, dtype=float)
    ok, new_mu, new_sigma, evidence = ask_kernels.observe_least(
        utility, answer, mu, sigma, NEWTON_STEPS, TOLERANCE
    )
    if not ok:
        return None
    mu[:] = new_mu
    sigma[:] = new_sigma
    return evidence


def _pair_terms(u: float, answer: int) -> tuple[float, float, float]:
    """Log-likelihood, its slope and minus its curvature in ``u`` for a pair answer."""
    p = float(sigmoid(u))
    loglik = np.log(max(p if answer == 1 else 1.0 - p, 1e-300))
    return loglik, answer - p, p * (1.0 - p)


def _level_terms(u: float, answer: int) -> tuple[float, float, float]:
    """The same for an ordered-logit answer (concave in ``u``)."""
    cuts = (-np.inf, *LEVEL_CUTS, np.inf)
    upper, lower = float(sigmoid(cuts[answer + 1] - u)), float(sigmoid(cuts[answer] - u))
    f_up, f_lo = upper * (1 - upper), lower * (1 - lower)
    prob = max(upper - lower, 1e-300)
    slope = (f_lo - f_up) / prob
    second = ((1 - 2 * upper) * f_up - (1 - 2 * lower) * f_lo) / prob - slope**2
    return float(np.log(prob)), slope, -second


def _observe_rank_one(z, answer, terms, mu, sigma) -> float:
    """Exact 1-D Laplace step on ``u = z . theta`` (the likelihood is concave in ``u``)."""
    sz = sigma @ z
    m, s = float(z @ mu), float(z @ sz)
    if s <= 0.0:
        return terms(m, answer)[0]
    u = m
    for _ in range(NEWTON_STEPS):
        _, slope, curv = terms(u, answer)
        step = (slope - (u - m) / s) / (curv + 1.0 / s)
        u += step
        if abs(step) < TOLERANCE:
            break
    loglik, _, curv = terms(u, answer)
    mu += sz * ((u - m) / s)
    sigma -= np.outer(sz, sz) * (curv / (1.0 + curv * s))
    return loglik - (u - m) ** 2 / (2 * s) - 0.5 * np.log1p(curv * s)


def _observe_least(utility, answer, mu, sigma) -> np.ndarray:
    """Laplace step for a ``least`` answer on every component at once, by Newton in theta
    (the log softmax is concave); returns each component's log evidence."""
    precision = np.linalg.inv(sigma)  # (C, d, d)
    theta = mu.copy()
    chosen = np.eye(utility.shape[0])[answer]
    for _ in range(NEWTON_STEPS):
        probs, hess = _least_terms(utility, theta)
        grad = (probs - chosen) @ utility - np.einsum("cij,cj->ci", precision, theta - mu)
        step = np.linalg.solve(precision + hess, grad[..., None])[..., 0]
        theta += step
        if np.abs(step).max() < TOLERANCE:
            break
    probs, hess = _least_terms(utility, theta)
    delta = theta - mu
    _, logdet = np.linalg.slogdet(np.eye(mu.shape[1]) + sigma @ hess)
    new_sigma = np.linalg.inv(precision + hess)
    mu[:] = theta
    sigma[:] = 0.5 * (new_sigma + np.swapaxes(new_sigma, 1, 2))
    loglik = np.log(np.maximum(probs[:, answer], 1e-300))
    return loglik - 0.5 * np.einsum("ci,cij,cj->c", delta, precision, delta) - 0.5 * logdet


def _least_terms(utility: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The softmax ``(C, K)`` of ``-utility theta`` and minus the log likelihood's Hessian in
    theta ``(C, d, d)``: ``U' (diag p - p p') U``."""
    probs = least_probabilities(theta @ utility.T)
    mean = probs @ utility  # (C, d)
    hess = np.einsum("ck,kd,ke->cde", probs, utility, utility)
    return probs, hess - np.einsum("cd,ce->cde", mean, mean)


def mixture_draws(
    weights: np.ndarray, mu: np.ndarray, sigma: np.ndarray, count: int, rng: np.random.Generator
) -> np.ndarray:
    """``(count, d)`` draws of theta from the mixture (components drawn by weight)."""
    comps = rng.choice(len(weights), size=count, p=weights)
    chol = np.linalg.cholesky(sigma + 1e-10 * np.eye(mu.shape[1]))
    noise = rng.standard_normal((count, mu.shape[1]))
    return mu[comps] + np.einsum("nij,nj->ni", chol[comps], noise)


def information_gain(kinds: list[str], features: list[np.ndarray], theta: np.ndarray) -> np.ndarray:
    """``(Q,)`` mutual information (nats) between each question's answer and theta, estimated
    on the draws ``theta`` (n, d): the entropy of the averaged answer distribution minus the
    average entropy of the answer given theta. Questions of one kind are valued together."""
    out = np.empty(len(kinds))
    for kind in set(kinds):
        index = [q for q, k in enumerate(kinds) if k == kind]
        if jit.ENABLED:
            out[index] = _gain_compiled(kind, [features[q] for q in index], theta)
            continue
        if kind == "least":  # (n, Q, K): each question's utilities
            latent = np.einsum("nd,qkd->nqk", theta, np.stack([features[q] for q in index]))
            probs = least_probabilities(latent)
        else:
            latent = theta @ np.stack([features[q] for q in index]).T  # (n, Q)
            probs = pair_probabilities(latent) if kind == "pair" else level_probabilities(latent)
        out[index] = answer_entropy(probs.mean(axis=0)) - answer_entropy(probs).mean(axis=0)
    return out


def _gain_compiled(kind: str, features: list[np.ndarray], theta: np.ndarray) -> np.ndarray:
    """`information_gain` of questions of one kind by the compiled kernels; the sigmoids'
    exponentials and logarithms are taken here, over whole arrays."""
    stacked = np.stack(features).astype(float, copy=False)
    if kind == "least":
        return ask_kernels.least_gains(theta, stacked)
    latent = theta @ stacked.T  # (n, Q)
    x = latent[..., None] if kind == "pair" else np.asarray(LEVEL_CUTS) - latent[..., None]
    e = np.exp(-np.abs(x))
    return ask_kernels.sigmoid_gains(x, e, np.log1p(e), kind == "level")


def decision_gain(
    kinds: list[str], features: list[np.ndarray], theta: np.ndarray, utility: np.ndarray
) -> np.ndarray:
    """``(Q,)`` expected gain of each answer in the value of the best pair: the sum of the two
    highest expected utilities after the answer (averaged over answers) minus before."""
    values = theta @ utility.T  # (n, K) each draw's utility of each persona
    before = _top_two_sum(values.mean(axis=0))
    out = np.empty(len(kinds))
    for q, (kind, feats) in enumerate(zip(kinds, features, strict=True)):
        probs = answer_probabilities(kind, feats, theta)  # (n, A)
        mass = probs.sum(axis=0)  # (A,) n x the predictive probability of each answer
        posterior = (probs.T @ values) / np.maximum(mass, 1e-300)[:, None]  # (A, K)
        after = np.array([_top_two_sum(row) for row in posterior])
        out[q] = float(mass @ after) / theta.shape[0] - before
    return out


def _top_two_sum(values: np.ndarray) -> float:
    return float(np.sort(values)[-2:].sum())
