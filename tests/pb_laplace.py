"""Shared pieces of the Laplace-step tests: TutorDuel-shaped clicks and random covariances."""

from __future__ import annotations

import numpy as np

D = 7
K = 6


def tutorduel_z(rng: np.random.Generator, gap_sd: float = 1.0) -> np.ndarray:
    """Feature difference of a shown pair under phi = [e_p, g]: e_i - e_j plus a rater gap."""
    i, j = rng.choice(K, size=2, replace=False)
    z = np.zeros(D)
    z[i], z[j] = 1.0, -1.0
    z[K] = gap_sd * rng.normal()
    return z


def random_cov(rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """A random ``(D, D)`` covariance with eigenvalues above ``0.2 scale``."""
    a = rng.normal(size=(D, D))
    return scale * (a @ a.T / D + 0.2 * np.eye(D))
