"""Rater recalibration: replace the rater feature g(q) by A g(q), with A = a I + A'.

``A`` is fitted by ridge-penalized logistic regression on every click of the completed
sessions, holding each user's preference vector at its posterior mean: for a click of user u
on the pair (i, j), ``logit = theta_e[i] - theta_e[j] + theta_g ((A g)_i - (A g)_j)``, which is
linear in the entries of A. The penalty ``ridge/2 |A'|^2`` with ``a`` free equals
``ridge/2 vec(A)^T (I - v v^T / K) vec(A)`` with ``v = vec(I)``, so the fit shrinks A toward a
multiple of the identity, not toward zero.
"""

from __future__ import annotations

import numpy as np

from prefduel.core.btl import sigmoid


def recal_design(
    first: np.ndarray, second: np.ndarray, g: np.ndarray, theta: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and covariates of the recalibration regression.

    Args:
        first, second: ``(M,)`` shown personas of M clicks.
        g: ``(M, K)`` raw rater scores of each click's question.
        theta: ``(M, K + 1)`` the clicking user's preference vector ``[theta_e, theta_g]``.

    Returns:
        ``(offset (M,), X (M, K*K))`` so that ``logit = offset + X @ vec(A)``.
    """
    m, k = g.shape
    rows = np.arange(m)
    offset = theta[rows, first] - theta[rows, second]
    diff = np.zeros((m, k))
    diff[rows, first] += 1.0
    diff[rows, second] -= 1.0
    x = theta[:, k, None, None] * diff[:, :, None] * g[:, None, :]  # (M, K, K): A[p, q]
    return offset, x.reshape(m, k * k)


def fit_recalibration(
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    g: np.ndarray,
    theta: np.ndarray,
    ridge: float = 10.0,
    steps: int = 25,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Fit ``A (K, K)`` by penalized logistic regression (Newton's method from A = I).

    Args:
        first, second, outcome: ``(M,)`` clicks (outcome 1 = first won).
        g: ``(M, K)`` raw rater scores.
        theta: ``(M, K + 1)`` users' posterior means at each click.
        ridge: Penalty on ``A' = A - a I``.
        steps: Newton iterations (stops early at convergence).
        start: Starting point (e.g. the previous fit); the identity when None.

    Returns:
        The fitted ``A``.
    """
    k = g.shape[1]
    offset, x = recal_design(first, second, g, theta)
    v = np.eye(k).ravel()
    penalty = ridge * (np.eye(k * k) - np.outer(v, v) / k)
    coef = v.copy() if start is None else np.array(start, dtype=float).ravel()
    y = outcome.astype(float)
    for _ in range(steps):
        p = sigmoid(offset + x @ coef)
        grad = x.T @ (y - p) - penalty @ coef
        hess = (x * (p * (1 - p))[:, None]).T @ x + penalty + 1e-9 * np.eye(k * k)
        step = np.linalg.solve(hess, grad)
        coef = coef + step
        if np.abs(step).max() < 1e-7:
            break
    return coef.reshape(k, k)


def apply_recalibration(phi: np.ndarray, matrix: np.ndarray | None) -> np.ndarray:
    """Features with the last column g replaced by ``A g``; ``phi (..., K, d)``."""
    if matrix is None:
        return phi
    out = np.array(phi, dtype=float)
    out[..., -1] = phi[..., -1] @ matrix.T
    return out
