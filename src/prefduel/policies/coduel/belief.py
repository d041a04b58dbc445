"""Mixture-of-Laplace beliefs over a user's preference vector, updated per click.

A belief is a mixture over components c with log weights ``lw[c]``; inside each component a
Gaussian ``N(mu[c], Sigma[c])`` is updated after every click by the one-click Laplace step of
`prefduel.core.laplace` (here over all components at once), and the
component's log weight gains the log predictive probability of the click (assumed-density
filtering: the weights track each component's evidence for the session so far).
"""

from __future__ import annotations

import numpy as np

from prefduel.core import jit
from prefduel.core.btl import sigmoid
from prefduel.core.laplace import PROBIT, laplace_update
from prefduel.policies.coduel import kernels


class MixtureBelief:
    """A user's belief: mixture weights and one Laplace posterior per component.

    Attributes:
        log_weight: ``(C,)`` unnormalized log weights (prior weight + session evidence).
        mu: ``(C, d)`` component means.
        sigma: ``(C, d, d)`` component covariances.
    """

    def __init__(self, weights: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> None:
        self.log_weight = np.log(np.maximum(np.asarray(weights, float), 1e-300))
        self.mu = np.array(mu, dtype=float)
        self.sigma = np.array(sigma, dtype=float)
        self._weights: np.ndarray | None = None  # normalized weights, until the next click

    @property
    def weights(self) -> np.ndarray:
        """Normalized component weights ``(C,)``."""
        if self._weights is None:
            w = np.exp(self.log_weight - self.log_weight.max())
            self._weights = w / w.sum()
        return self._weights

    def mean(self) -> np.ndarray:
        """Mixture mean of theta ``(d,)``."""
        return self.weights @ self.mu

    def predictive(self, z: np.ndarray) -> float:
        """Probability that the first item of a pair with features ``z`` wins."""
        m = self.mu @ z
        s = np.einsum("i,cij,j->c", z, self.sigma, z)
        return float(self.weights @ sigmoid(m / np.sqrt(1.0 + PROBIT * s)))

    def observe(self, z: np.ndarray, y: int) -> float:
        """Update on one click; returns the mixture's predictive probability of ``y``.

        Every component takes the one-click Laplace step (in place: the arrays are this
        belief's own) and its log weight gains the log predictive probability of ``y``.

        Args:
            z: Feature difference ``(d,)`` of the shown pair (first minus second).
            y: 1 if the first item won, else 0.

        Raises:
            ValueError: ``z`` does not have shape ``(d,)``.
        """
        w = self.weights
        self._weights = None
        z = np.asarray(z, dtype=float)
        if z.shape != self.mu.shape[1:]:
            raise ValueError(f"z must have shape {self.mu.shape[1:]}, got {z.shape}")
        if jit.ENABLED:
            return kernels.mixture_observe(
                w, self.log_weight, self.mu, self.sigma, z[None], np.array([float(y)])
            )
        p_first = laplace_update(self.mu, self.sigma, z, y)
        p_y = p_first if y == 1 else 1.0 - p_first
        self.log_weight = self.log_weight + np.log(np.maximum(p_y, 1e-300))
        return float(w @ p_y)


def likelihood_summaries(
    z: np.ndarray, y: np.ndarray, prior_var: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian likelihood summaries of users' clicks by a Laplace pass from an isotropic prior.

    Args:
        z: ``(n, T, d)`` click features (first minus second; zero rows are no-ops).
        y: ``(n, T)`` outcomes.
        prior_var: Variance of the isotropic prior used for the pass (then divided out).

    Returns:
        ``(lam (n, d, d), h (n, d), mean (n, d))``: likelihood precision, information vector,
        and posterior mean under the isotropic prior.
    """
    n, t, d = z.shape
    mu = np.zeros((n, d))
    sigma = np.broadcast_to(prior_var * np.eye(d), (n, d, d)).copy()
    for r in range(t):
        laplace_update(mu, sigma, z[:, r], y[:, r])
    prec = np.linalg.inv(sigma)
    prec = 0.5 * (prec + np.swapaxes(prec, 1, 2))
    lam = prec - np.eye(d) / prior_var
    h = np.einsum("nij,nj->ni", prec, mu)
    return lam, h, mu
