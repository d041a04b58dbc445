"""Per-user rankings and how far they depart from the global ranking.

For each user with at least ``min_votes`` battles, Elo and Bradley-Terry scores are computed on
that user's battles alone, and compared with the global scores by Spearman's rank correlation
over only the models the user evaluated (unseen models would add artificial agreement).

References:
    Personalized Benchmarking: Evaluating LLMs by Individual Preferences, ACL Findings 2026
    (115 Arena users with >= 25 votes; mean Spearman 0.43 for Elo and 0.04 for BT).
    Wilcoxon (1945), Individual comparisons by ranking methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import DEFAULT_RIDGE, BTMode, bt_per_user
from prefduel.ranking.elo import PAPER_K, elo_per_user
from prefduel.ranking.errors import RankingError

DEFAULT_MIN_VOTES = 25
#: Thresholds of the "near-zero or negative correlation" shares reported by the paper.
LOW_THRESHOLDS = (0.1, 0.5)


@dataclass(frozen=True)
class PersonalRatings:
    """Elo and BT scores of the users with enough votes (``U`` users, ``M`` models).

    Attributes:
        users: ``(U,)`` indices into ``battles.users``.
        votes: ``(U,)`` battles per user.
        seen: ``(U, M)`` models the user evaluated.
        elo: ``(U, M)`` per-user Elo; NaN unseen.
        bt: ``(U, M)`` per-user BT on the Elo scale; NaN unseen.
        bt_fallback: ``(U,)`` the user's MLE does not exist and ridge was used (mode "mle").
        bt_never_won: ``(U,)`` number of seen models that never won for that user.
        bt_never_lost: ``(U,)`` number of seen models that never lost.
        below_min_users: users left out for having fewer than ``min_votes`` battles.
        below_min_battles: their battles (still used by the global ratings).
    """

    users: np.ndarray
    votes: np.ndarray
    seen: np.ndarray
    elo: np.ndarray
    bt: np.ndarray
    bt_fallback: np.ndarray
    bt_never_won: np.ndarray
    bt_never_lost: np.ndarray
    below_min_users: int
    below_min_battles: int


def eligible_users(battles: Battles, min_votes: int = DEFAULT_MIN_VOTES) -> np.ndarray:
    """Indices of the users with at least ``min_votes`` battles, shape ``(U,)``."""
    if min_votes < 1:
        raise RankingError(f"min_votes must be >= 1, got {min_votes}")
    return np.flatnonzero(battles.votes_per_user() >= min_votes)


def personal_ratings(
    battles: Battles,
    min_votes: int = DEFAULT_MIN_VOTES,
    *,
    k: float = PAPER_K,
    bt_mode: BTMode = "mle",
    ridge: float = DEFAULT_RIDGE,
) -> PersonalRatings:
    """Per-user Elo (time order, K = ``k``) and BT of every user with ``>= min_votes`` battles.

    Raises:
        RankingError: no user has ``min_votes`` battles (the message gives the largest count).
    """
    users = eligible_users(battles, min_votes)
    votes = battles.votes_per_user()
    if users.size == 0:
        raise RankingError(
            f"no user has at least {min_votes} battles (the most active has "
            f"{int(votes.max())}); lower --min-votes"
        )
    elo = elo_per_user(battles, users, k)
    fit = bt_per_user(battles, users, bt_mode, ridge)
    below = votes < min_votes
    return PersonalRatings(
        users=users,
        votes=votes[users],
        seen=fit.seen,
        elo=elo,
        bt=fit.scores,
        bt_fallback=fit.fallback,
        bt_never_won=fit.never_won.sum(axis=1),
        bt_never_lost=fit.never_lost.sum(axis=1),
        below_min_users=int(below.sum()),
        below_min_battles=int(votes[below].sum()),
    )


def spearman_to_global(user_scores: np.ndarray, global_scores: np.ndarray) -> np.ndarray:
    """Spearman correlation of each user's scores with the global ones, over the user's models.

    Ranks use average ties. A user whose own (or the global) scores are constant over their
    models, or who saw fewer than 2 models, gets NaN (undefined).

    Args:
        user_scores: ``(U, M)``; NaN marks models the user did not evaluate.
        global_scores: ``(M,)`` global scores.

    Returns:
        ``(U,)`` correlations in ``[-1, 1]`` or NaN.
    """
    user_scores = np.asarray(user_scores, dtype=float)
    global_scores = np.asarray(global_scores, dtype=float)
    if user_scores.ndim != 2 or user_scores.shape[1] != global_scores.shape[0]:
        raise RankingError(
            f"user scores must be (U, M) with M = {global_scores.shape[0]}, got {user_scores.shape}"
        )
    seen = np.isfinite(user_scores) & np.isfinite(global_scores)[None, :]
    glob = np.where(seen, global_scores[None, :], np.nan)
    mine = np.where(seen, user_scores, np.nan)
    return _masked_pearson(_ranks(mine), _ranks(glob), seen)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average-tie ranks along the last axis, ignoring NaN (which stays NaN)."""
    return stats.rankdata(x, axis=-1, nan_policy="omit")


def _masked_pearson(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n = mask.sum(axis=1)
    safe_n = np.maximum(n, 1)
    xm = np.where(mask, x, 0.0).sum(axis=1) / safe_n
    ym = np.where(mask, y, 0.0).sum(axis=1) / safe_n
    dx = np.where(mask, x - xm[:, None], 0.0)
    dy = np.where(mask, y - ym[:, None], 0.0)
    sxy = (dx * dy).sum(axis=1)
    sxx = (dx * dx).sum(axis=1)
    syy = (dy * dy).sum(axis=1)
    denom = np.sqrt(sxx * syy)
    ok = (n >= 2) & (denom > 1e-12 * np.maximum(1.0, n))
    rho = np.full(x.shape[0], np.nan)
    rho[ok] = np.clip(sxy[ok] / denom[ok], -1.0, 1.0)
    return rho


def correlation_summary(rho: np.ndarray) -> dict[str, Any]:
    """Mean, s.d., median and the shares below 0.1 and 0.5 of defined correlations.

    Args:
        rho: ``(U,)`` correlations; NaN (undefined) are counted, not summarized.

    Returns:
        ``{"n", "undefined", "mean", "sd", "median", "share_below_0.1", "share_below_0.5"}``.
    """
    rho = np.asarray(rho, dtype=float)
    ok = rho[np.isfinite(rho)]
    out: dict[str, Any] = {"n": int(ok.size), "undefined": int(rho.size - ok.size)}
    if ok.size == 0:
        out.update(
            {"mean": None, "sd": None, "median": None}
            | {f"share_below_{t}": None for t in LOW_THRESHOLDS}
        )
        return out
    out["mean"] = float(ok.mean())
    out["sd"] = float(ok.std(ddof=1)) if ok.size > 1 else None
    out["median"] = float(np.median(ok))
    for t in LOW_THRESHOLDS:
        out[f"share_below_{t}"] = float(np.mean(ok < t))
    return out


def correlation_tests(rho_elo: np.ndarray, rho_bt: np.ndarray) -> dict[str, Any]:
    """Wilcoxon signed-rank tests: each system's correlations vs 0, and Elo vs BT paired.

    Args:
        rho_elo: ``(U,)`` per-user Elo correlations (NaN undefined).
        rho_bt: ``(U,)`` per-user BT correlations of the same users.

    Returns:
        ``{"elo_vs_0": {...}, "bt_vs_0": {...}, "elo_vs_bt": {...}}`` with ``n``, ``statistic``
        and two-sided ``p`` (None when there are too few users or no non-zero differences).
    """
    rho_elo = np.asarray(rho_elo, dtype=float)
    rho_bt = np.asarray(rho_bt, dtype=float)
    both = np.isfinite(rho_elo) & np.isfinite(rho_bt)
    return {
        "elo_vs_0": _wilcoxon(rho_elo[np.isfinite(rho_elo)]),
        "bt_vs_0": _wilcoxon(rho_bt[np.isfinite(rho_bt)]),
        "elo_vs_bt": _wilcoxon(rho_elo[both] - rho_bt[both]),
    }


def _wilcoxon(diff: np.ndarray) -> dict[str, Any]:
    nonzero = diff[diff != 0]
    if nonzero.size < 2:
        return {"n": int(diff.size), "statistic": None, "p": None}
    res = stats.wilcoxon(nonzero)
    return {"n": int(diff.size), "statistic": float(res.statistic), "p": float(res.pvalue)}
