"""Bayesian logistic regression on pairwise clicks with a per-click Laplace update.

A click on the shown pair (i, j) with features ``z = phi_i - phi_j`` is modeled as
``P(first wins) = sigmoid(theta . z)``. The posterior ``N(mu, Sigma)`` is updated after every
click in O(d^2) by the one-click Laplace step of `prefduel.core.laplace` (the new mode on the
line ``mu + alpha Sigma z``, the covariance by Sherman-Morrison), compiled when numba is
installed.
"""

from __future__ import annotations

import functools

import numpy as np

from prefduel.core.laplace import update_one


@functools.cache
def cholesky_jitter(d: int) -> np.ndarray:
    """``1e-12 I_d`` (read-only), added to a covariance before its Cholesky factorization
    (made once per ``d`` instead of once per round)."""
    jitter = 1e-12 * np.eye(d)
    jitter.flags.writeable = False
    return jitter


def laplace_step(
    mu: np.ndarray, sigma: np.ndarray, z: np.ndarray, y: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """One-click Laplace update of a Gaussian belief (pure function).

    Args:
        mu: Prior mean ``(d,)``.
        sigma: Prior covariance ``(d, d)``.
        z: Feature difference ``(d,)`` of the shown pair (first minus second).
        y: 1 if the first item won, else 0.

    Returns:
        ``(mu', sigma', p)``: posterior mean and covariance, and the predictive probability
        (before the update) that the first item wins, ``sigmoid(m / sqrt(1 + pi s / 8))``.
    """
    new_mu = np.array(mu, dtype=float, order="C")
    new_sigma = np.array(sigma, dtype=float, order="C")
    return new_mu, new_sigma, update_one(new_mu, new_sigma, z, y)


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
        """Update on one click; returns the predictive probability of ``y`` (before updating).

        ``mu`` and ``sigma`` are replaced by new arrays (arrays read before stay as they were).

        Args:
            z: Feature difference ``(d,)`` of the shown pair (first minus second).
            y: 1 if the first item won, else 0.
        """
        self.mu, self.sigma, p_first = laplace_step(self.mu, self.sigma, z, y)
        return p_first if y == 1 else 1.0 - p_first

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One draw of theta from the belief."""
        chol = np.linalg.cholesky(self.sigma + cholesky_jitter(self.mu.size))
        return self.mu + chol.dot(rng.standard_normal(self.mu.size))  # chol @ draw's BLAS call

