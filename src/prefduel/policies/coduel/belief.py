"""Mixture-of-Laplace beliefs over a user's preference vector, updated per click.

A belief is a mixture over components c with log weights ``lw[c]``; inside each component a
Gaussian ``N(mu[c], Sigma[c])`` is updated after every click by the one-click Laplace step of
`prefduel.policies.laplace.laplace_step` (here vectorized over components), and the
component's log weight gains the log predictive probability of the click (assumed-density
filtering: the weights track each component's evidence for the session so far).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from prefduel.policies.coduel import kernels

_PROBIT = np.pi / 8.0


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # expit keeps relative precision far into the tails (tanh-based forms round to exactly 0
    # below about -37, which would turn a very surprising click into log(0))
    return expit(x)


def _safeguarded_step(
    m: np.ndarray, s: np.ndarray, y: np.ndarray, alpha: np.ndarray, max_iter: int
) -> np.ndarray:
    """The scalar root of `solve_step` by safeguarded Newton (rtsafe), as in
    `prefduel.policies.laplace.laplace_step`: bisect when the Newton point leaves the bracket
    ``(y - 1, y)`` or does not halve the step; converged entries keep their alpha."""
    lo, hi = y - 1.0, y.copy()
    alpha = np.clip(alpha, lo, hi)
    dx = dx_old = np.ones_like(m)
    for _ in range(max_iter):
        p = _sigmoid(m + alpha * s)
        f = alpha - y + p
        abs_f = np.abs(f)
        if abs_f.max() < 1e-10:
            break
        above = f > 0
        hi = np.where(above, alpha, hi)
        lo = np.where(above, lo, alpha)
        df = 1.0 + s * (p - p * p)
        step = f / df
        newton = alpha - step
        bisect = ((newton - hi) * (newton - lo) >= 0.0) | (2.0 * abs_f > np.abs(dx_old * df))
        dx_old, dx = dx, np.where(bisect, 0.5 * (hi - lo), step)
        alpha = np.where(abs_f >= 1e-10, np.where(bisect, lo + dx, newton), alpha)
    return alpha


def solve_step(
    m: np.ndarray, s: np.ndarray, y: np.ndarray, p_first: np.ndarray, max_iter: int = 60
) -> np.ndarray:
    """Step sizes ``alpha`` of one-click Laplace updates: the roots of
    ``alpha - y + sigmoid(m + alpha s) = 0`` (``|f| < 1e-10``), elementwise.

    Plain Newton from a step taken with the predictive probability ``p_first`` (``f`` is
    increasing with slope in ``[1, 1 + s/4]``) converges in 4-5 iterations on every click of
    a CODuel run on ``dev``; each entry stops at its own first iterate with ``|f| < 1e-10``,
    so its root does not depend on the rest of the batch. Entries plain Newton leaves
    unconverged (very surprising clicks on very wide beliefs, where it can cycle) are solved
    again by safeguarded Newton.

    Args:
        m, s: ``z . mu`` and ``z . Sigma z`` (any shape).
        y: Outcomes (same shape; 1 = first item won).
        p_first: Predictive probabilities that the first item wins (same shape).
        max_iter: Cap on safeguarded iterations for the entries plain Newton leaves.

    Returns:
        ``alpha`` (same shape).
    """
    alpha = (y - p_first) / (1.0 + s * (p_first - p_first * p_first))
    for _ in range(6):
        p = _sigmoid(m + alpha * s)
        f = alpha - y + p
        done = np.abs(f) < 1e-10
        if done.all():
            return alpha
        # converged entries stay where they stopped: each entry's root is then the same
        # whatever else is in the batch
        alpha = np.where(done, alpha, alpha - f / (1.0 + s * (p - p * p)))
    f = alpha - y + _sigmoid(m + alpha * s)
    bad = ~(np.abs(f) < 1e-10)  # also catches NaN
    if bad.any():
        alpha = alpha.copy()
        alpha[bad] = _safeguarded_step(m[bad], s[bad], y[bad], alpha[bad], max_iter)
    return alpha


def laplace_step_batch(
    mu: np.ndarray,
    sigma: np.ndarray,
    z: np.ndarray,
    y: np.ndarray | int,
    max_iter: int = 60,
    *,
    with_sigma: bool = True,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """One-click Laplace updates of B Gaussian beliefs at once.

    Args:
        mu: Means ``(B, d)``.
        sigma: Covariances ``(B, d, d)``.
        z: Feature differences ``(B, d)`` or one ``(d,)`` shared by all beliefs.
        y: Outcomes ``(B,)`` or a scalar (1 = first item won).
        max_iter: Cap on safeguarded Newton iterations for the scalar step.
        with_sigma: Also return the updated covariances (else ``None``; saves the rank-one
            update when only the means are needed).

    Returns:
        ``(mu', sigma', p_first)`` with shapes ``(B, d)``, ``(B, d, d)``, ``(B,)``; ``p_first``
        is the probit-approximated predictive probability that the first item wins,
        ``sigmoid(m / sqrt(1 + pi s / 8))``, computed before the update.
    """
    z = np.broadcast_to(z, mu.shape)
    y = np.broadcast_to(np.asarray(y, dtype=float), mu.shape[:1])
    sz = np.einsum("bij,bj->bi", sigma, z)
    m = np.einsum("bi,bi->b", z, mu)
    s = np.einsum("bi,bi->b", z, sz)
    p_first = _sigmoid(m / np.sqrt(1.0 + _PROBIT * s))
    alpha = solve_step(m, s, y, p_first, max_iter)
    p = _sigmoid(m + alpha * s)
    w = p * (1.0 - p)
    new_mu = mu + alpha[:, None] * sz
    if not with_sigma:
        return new_mu, None, p_first
    new_sigma = sigma - (w / (1.0 + w * s))[:, None, None] * np.einsum("bi,bj->bij", sz, sz)
    return new_mu, new_sigma, p_first


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
        return float(self.weights @ _sigmoid(m / np.sqrt(1.0 + _PROBIT * s)))

    def observe(self, z: np.ndarray, y: int) -> float:
        """Update on one click; returns the mixture's predictive probability of ``y``."""
        w = self.weights
        self._weights = None
        if kernels.ENABLED:  # in place (the arrays are this belief's own)
            return kernels.mixture_observe(
                w, self.log_weight, self.mu, self.sigma, np.asarray(z, float), float(y)
            )
        self.mu, self.sigma, p_first = laplace_step_batch(self.mu, self.sigma, z, y)
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
        mu, sigma, _ = laplace_step_batch(mu, sigma, z[:, r], y[:, r])
    prec = np.linalg.inv(sigma)
    prec = 0.5 * (prec + np.swapaxes(prec, 1, 2))
    lam = prec - np.eye(d) / prior_var
    h = np.einsum("nij,nj->ni", prec, mu)
    return lam, h, mu
