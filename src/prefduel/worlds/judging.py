"""From a judge's pairwise picks to click probabilities and utilities (pure functions).

A judge compares every pair ``a < b`` of ``K`` personas under four configurations (display
order x label assignment, `JUDGE_CONFIGS`) and a few sampled picks each. `judge_probabilities`
averages the smoothed log-odds of the configurations into click probabilities ``P`` with
``P + P^T = 1``; `bt_utilities` fits ridge Bradley-Terry scores to ``P`` and maps them to
utilities in ``[0, 1]``.

TutorSim (`prefduel.worlds.tutorsim`, which re-exports everything here) applies them to its
simulated judge, `prefduel.datagen` to real judge picks.
"""

from __future__ import annotations

import numpy as np

from prefduel.core.btl import fit_bt_ridge, pairs_of, sigmoid

#: The four judge configurations of a pair ``(a, b)``, ``a < b``, in the order of the last axis
#: of ``wins``/``total`` below: ``(a shown first?, a labelled "A"?)``. ``JUDGE_ORDER`` is +1 when
#: ``a`` is displayed first, ``JUDGE_LABEL`` +1 when ``a`` carries the label ``A``.
JUDGE_CONFIGS = ((True, True), (True, False), (False, True), (False, False))
JUDGE_ORDER = np.array([1.0, 1.0, -1.0, -1.0])
JUDGE_LABEL = np.array([1.0, -1.0, 1.0, -1.0])


def smoothed_log_odds(wins: np.ndarray, total: np.ndarray | int) -> np.ndarray:
    """Smoothed log-odds ``log((k + 0.5) / (n - k + 0.5))`` of ``k`` wins in ``n`` picks.

    Args:
        wins: Wins ``k`` of the first item, any shape.
        total: Valid picks ``n`` (broadcast against ``wins``).

    Returns:
        Float array of ``wins``' shape; finite even for ``k = 0`` or ``k = n``.
    """
    return np.log((wins + 0.5) / (total + 0.5 - wins))


def pair_matrix(p_pair: np.ndarray, k: int) -> np.ndarray:
    """Click-probability matrices from the probabilities of the ``k(k-1)/2`` pairs.

    Args:
        p_pair: ``(..., k(k-1)/2)`` chance that ``a`` beats ``b`` for each pair ``a < b`` in
            `pairs_of` order.
        k: Number of items.

    Returns:
        ``(..., k, k)`` with ``P + P^T = 1`` and 0.5 on the diagonal.
    """
    pairs = pairs_of(k)
    prob = np.full((*p_pair.shape[:-1], k, k), 0.5)
    prob[..., pairs[:, 0], pairs[:, 1]] = p_pair
    prob[..., pairs[:, 1], pairs[:, 0]] = 1.0 - p_pair
    return prob


def judge_probabilities(wins: np.ndarray, total: np.ndarray | int, k: int) -> np.ndarray:
    """Aggregate judge picks into click probabilities (TutorSim and ``datagen`` share this).

    For every pair the smoothed log-odds (`smoothed_log_odds`) of each judge
    configuration (display order x label assignment) are averaged and mapped back through the
    logistic function. Configurations without any valid pick (``total == 0``, e.g. every
    sample malformed) are left out of the average; a pair with none at all gets 0.5.

    Args:
        wins: ``(..., k(k-1)/2, C)`` picks won by the lower-index item ``a`` of each pair
            (`pairs_of` order) in each of ``C`` configurations.
        total: Valid picks per configuration, an int or an array broadcastable to ``wins``.
        k: Number of items.

    Returns:
        ``(..., k, k)`` click probabilities ``P[a, b]`` with ``P + P^T = 1``.
    """
    log_odds = smoothed_log_odds(wins, total)
    total = np.broadcast_to(total, np.shape(wins))
    if np.all(total > 0):
        mean = log_odds.mean(axis=-1)
    else:
        seen = total > 0
        count = seen.sum(axis=-1)
        mean = np.where(seen, log_odds, 0.0).sum(axis=-1) / np.maximum(count, 1)
    return pair_matrix(sigmoid(mean), k)


def bt_utilities(prob: np.ndarray, *, ridge: float = 0.01, scale: float = 8.0) -> np.ndarray:
    """Utilities in [0, 1] from click probabilities: ridge Bradley-Terry, common logit scale.

    Fits per leading index BT scores to the pairwise probabilities
    (`fit_bt_ridge`) and maps them to
    ``U = clip(0.5 + (beta - mean beta) / scale, 0, 1)``.

    Args:
        prob: ``(..., K, K)`` click probabilities.
        ridge: L2 penalty of the fit.
        scale: Logits spanning the unit interval (8 in the paper).

    Returns:
        ``(..., K)`` utilities.
    """
    beta = fit_bt_ridge(prob, ridge=ridge)
    return np.clip(0.5 + beta / scale, 0.0, 1.0)
