"""Bradley-Terry-Luce math: link functions, pairwise probabilities, ridge BT fits.

References:
    Bradley & Terry (1952), Rank analysis of incomplete block designs.
    Luce (1959), Individual Choice Behavior.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


# The 15 unordered pairs (a < b) of six personas, in a fixed order used everywhere.
@lru_cache(maxsize=32)
def pairs_of(k: int) -> np.ndarray:
    """All unordered pairs ``(a, b)`` with ``a < b`` of ``k`` items, shape ``(k(k-1)/2, 2)``
    (read-only: the array is shared between callers)."""
    a, b = np.triu_indices(k, 1)
    pairs = np.stack([a, b], axis=1)
    pairs.flags.writeable = False
    return pairs


def sigmoid(x: np.ndarray | float) -> np.ndarray:
    """Numerically stable logistic function ``1 / (1 + exp(-x))``, elementwise.

    The one logistic function of prefduel (worlds, policies, references); compiled kernels use
    its scalar form `sigmoid_scalar`. For ``x < 0`` it is ``exp(x) / (1 + exp(x))``, which keeps
    relative precision far into the lower tail (a very surprising click never has probability
    exactly 0 before ``x`` is below about -745).
    """
    x = np.asarray(x, dtype=float)
    e = np.exp(-np.abs(x))  # exp(-x) where x >= 0, exp(x) below: never overflows
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def sigmoid_scalar(x: float) -> float:
    """`sigmoid` of one float, in plain Python so that compiled kernels can compile it (the
    same formula, with ``math.exp``)."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def top_two(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the largest and the second-largest score along the last axis.

    Ties go to the lower index (the greedy pair of a policy, the two best personas of a
    reference row).

    Args:
        scores: ``(..., K)`` scores, ``K >= 2``.

    Returns:
        ``(best, second)``: integer arrays of shape ``(...)`` (numpy integers for ``(K,)``).

    Raises:
        ValueError: ``scores`` has fewer than two entries on its last axis.
    """
    scores = np.asarray(scores)
    if scores.ndim == 0 or scores.shape[-1] < 2:
        raise ValueError(f"top_two needs at least two scores, got shape {scores.shape}")
    order = np.argsort(-scores, axis=-1, kind="stable")
    if scores.ndim == 1:
        return order[0], order[1]
    return order[..., 0], order[..., 1]


def btl_matrix(scores: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Pairwise win probabilities ``P[..., a, b] = sigmoid(scale * (s_a - s_b))``.

    Args:
        scores: Array ``(..., K)`` of BT scores.
        scale: Logit scale.

    Returns:
        Array ``(..., K, K)`` with ``P + P^T = 1`` and 0.5 on the diagonal.
    """
    diff = scores[..., :, None] - scores[..., None, :]
    return sigmoid(scale * diff)


def fit_bt_ridge(prob: np.ndarray, ridge: float = 0.01, steps: int = 12) -> np.ndarray:
    """Ridge-regularized BT scores fitted to pairwise probabilities, batched.

    Maximizes, independently for every leading index,
    ``sum_{a<b} P_ab log s(b_a - b_b) + (1 - P_ab) log s(b_b - b_a) - ridge/2 |b|^2``
    by Newton's method (the objective is strictly concave, so a dozen steps converge).

    Args:
        prob: Array ``(..., K, K)``; ``prob[..., a, b]`` is the chance that ``a`` beats ``b``.
            Only the upper triangle (``a < b``) is read.
        ridge: L2 penalty (> 0 makes the fit unique).
        steps: Newton iterations.

    Returns:
        Scores ``(..., K)``, centered to mean 0 over the last axis.
    """
    if ridge <= 0:
        raise ValueError(f"ridge must be > 0, got {ridge}")
    prob = np.asarray(prob, dtype=float)
    k = prob.shape[-1]
    lead = prob.shape[:-2]
    flat = prob.reshape(-1, k, k)
    a, b = np.triu_indices(k, 1)
    target = flat[:, a, b]  # (M, n_pairs)
    # Incidence matrix: z[pair] = e_a - e_b.
    z = np.zeros((a.size, k))
    z[np.arange(a.size), a] = 1.0
    z[np.arange(a.size), b] = -1.0
    beta = np.zeros((flat.shape[0], k))
    eye = np.eye(k)
    for _ in range(steps):
        p = sigmoid(beta @ z.T)  # (M, n_pairs)
        grad = (target - p) @ z - ridge * beta
        w = p * (1.0 - p)
        hess = np.einsum("mp,pi,pj->mij", w, z, z) + ridge * eye
        beta = beta + np.linalg.solve(hess, grad[..., None])[..., 0]
    beta -= beta.mean(axis=-1, keepdims=True)
    return beta.reshape(*lead, k)
