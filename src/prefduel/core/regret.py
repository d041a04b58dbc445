"""Strong regret of pair choices, its floor, and the exact expectation under random pairs.

For a round with utilities ``U`` (K personas) and a shown pair ``(i, j)``:
``r = 2 U* - U_i - U_j``; the floor is ``U* - U2nd`` (best and second best shown); a uniformly
random distinct pair has expected regret ``2 U* - 2 mean(U)`` (each persona is in the pair with
probability ``2/K``). Score = ``100 (R_rand - R) / (R_rand - G)``.
"""

from __future__ import annotations

import numpy as np


def pair_regret(utilities: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Strong regret of shown pairs.

    Args:
        utilities: ``(..., K)`` utilities.
        first, second: Integer arrays of shape ``...``, the shown personas.

    Returns:
        ``(...)`` regrets ``2 max(U) - U_first - U_second``.
    """
    u_first = np.take_along_axis(utilities, first[..., None], axis=-1)[..., 0]
    u_second = np.take_along_axis(utilities, second[..., None], axis=-1)[..., 0]
    return 2.0 * utilities.max(axis=-1) - u_first - u_second


def floor_regret(utilities: np.ndarray) -> np.ndarray:
    """Per-round floor ``U* - U2nd`` (regret of showing the two best), shape ``(...)``."""
    top2 = -np.partition(-utilities, 1, axis=-1)[..., :2]
    return top2[..., 0] - top2[..., 1]


def random_regret(utilities: np.ndarray) -> np.ndarray:
    """Exact expected regret of a uniformly random distinct pair, shape ``(...)``."""
    return 2.0 * utilities.max(axis=-1) - 2.0 * utilities.mean(axis=-1)


def score(total_regret: float, total_random: float, total_floor: float) -> float:
    """Benchmark score ``100 (R_rand - R) / (R_rand - G)``: random 0, floor 100."""
    denom = total_random - total_floor
    if denom <= 0:
        raise ValueError("random and floor regret coincide; the score is undefined")
    return 100.0 * (total_random - total_regret) / denom
