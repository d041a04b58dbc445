"""Bayesian logistic regression on pairwise clicks with a per-click Laplace update.

A click on the shown pair (i, j) with features ``z = phi_i - phi_j`` is modeled as
``P(first wins) = sigmoid(theta . z)``. The posterior ``N(mu, Sigma)`` is updated after every
click in O(d^2) (assumed-density filtering with a Laplace step):

* the new mode lies on the line ``mu + alpha Sigma z``; the scalar ``alpha`` solves
  ``alpha = y - sigmoid(z.mu + alpha z.Sigma.z)`` (3-4 Newton steps);
* the new covariance follows by Sherman-Morrison:
  ``Sigma' = Sigma - w Sigma z z^T Sigma / (1 + w z.Sigma.z)`` with ``w = p (1 - p)``.

References:
    Chapelle & Li (2011), An empirical evaluation of Thompson sampling (Laplace-approximated
    logistic posteriors). Spiegelhalter & Lauritzen (1990), sequential updating.
"""

from __future__ import annotations

import math

import numpy as np

_PROBIT = math.pi / 8.0


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def laplace_step(
    mu: np.ndarray, sigma: np.ndarray, z: np.ndarray, y: int, newton_steps: int = 4
) -> tuple[np.ndarray, np.ndarray, float]:
    """One-click Laplace update of a Gaussian belief (pure function).

    Args:
        mu: Prior mean ``(d,)``.
        sigma: Prior covariance ``(d, d)``.
        z: Feature difference ``(d,)`` of the shown pair (first minus second).
        y: 1 if the first item won, else 0.
        newton_steps: Typical Newton iterations for the scalar step ``alpha`` (more are taken,
            safeguarded by bisection, until it converges).

    Returns:
        ``(mu', sigma', p)``: posterior mean and covariance, and the predictive probability
        (before the update) that the first item wins, ``sigmoid(m / sqrt(1 + pi s / 8))``.
    """
    sz = sigma @ z
    m = float(z @ mu)
    s = float(z @ sz)
    predictive = _sigmoid(m / math.sqrt(1.0 + _PROBIT * s))
    # alpha solves f(alpha) = alpha - y + sigmoid(m + alpha s) = 0; f is increasing and the
    # root lies in (y - 1, y), so Newton steps that leave the bracket fall back to bisection
    # (plain Newton overshoots when s = z.Sigma.z is large and the click is surprising).
    # (safeguarded Newton as in Numerical Recipes' rtsafe: bisect when the Newton point leaves
    # the bracket or does not halve the step, which breaks the cycles plain Newton falls into)
    lo, hi = float(y) - 1.0, float(y)
    alpha = 0.0
    dx = dx_old = 1.0
    for _ in range(newton_steps + 60):
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
    new_mu = mu + alpha * sz
    new_sigma = sigma - (w / (1.0 + w * s)) * np.outer(sz, sz)
    return new_mu, new_sigma, predictive


class LaplaceBelief:
    """Mutable Gaussian belief ``N(mu, Sigma)`` over a d-dimensional weight vector."""

    __slots__ = ("mu", "sigma")

    def __init__(self, mu: np.ndarray, sigma: np.ndarray) -> None:
        self.mu = np.array(mu, dtype=float)
        self.sigma = np.array(sigma, dtype=float)

    @classmethod
    def isotropic(cls, d: int, variance: float) -> LaplaceBelief:
        """Zero-mean prior with covariance ``variance * I``."""
        return cls(np.zeros(d), variance * np.eye(d))

    def observe(self, z: np.ndarray, y: int) -> float:
        """Update on one click; returns the predictive probability of ``y`` (before updating)."""
        self.mu, self.sigma, p_first = laplace_step(self.mu, self.sigma, z, y)
        return p_first if y == 1 else 1.0 - p_first

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One draw of theta from the belief."""
        chol = np.linalg.cholesky(self.sigma + 1e-12 * np.eye(self.mu.size))
        return self.mu + chol @ rng.standard_normal(self.mu.size)


def top_two(scores: np.ndarray) -> tuple[int, int]:
    """Indices of the two largest scores (best first)."""
    best = int(np.argmax(scores))
    masked = scores.copy()
    masked[best] = -np.inf
    return best, int(np.argmax(masked))
