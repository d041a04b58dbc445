"""Per-user rankings and how far they depart from the global ranking.

For each user with at least ``min_votes`` battles, Elo and Bradley-Terry scores are computed on
that user's battles alone (or, for BT mode ``"hier"``, as the global strengths plus a shrunk
user deviation, `prefduel.ranking.hier`), and compared with the global scores by Spearman's
rank correlation over only the models the user evaluated (unseen models would add artificial
agreement).

Each user's leaderboard also gets 95% intervals of the BT scores and of the ranks: for MLE and
ridge fits from the Laplace (Wald) approximation -- the inverse of the (penalized) Fisher
information at the fit, for the strengths centred over the user's models -- and for the
hierarchical fit from its Gaussian posterior; rank intervals come from `RANK_DRAWS` draws of
those Gaussians, ranking only the models the user saw.

References:
    Personalized Benchmarking: Evaluating LLMs by Individual Preferences, ACL Findings 2026
    (115 Arena users with >= 25 votes; mean Spearman 0.43 for Elo and 0.04 for BT).
    Wilcoxon (1945), Individual comparisons by ranking methods.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from prefduel.core.rng import stream
from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import DEFAULT_RIDGE, ELO_PER_LOGIT, bt_per_user, strongly_connected
from prefduel.ranking.elo import PAPER_K, elo_orders, elo_per_user
from prefduel.ranking.errors import RankingError
from prefduel.ranking.hier import Z95, bt_hierarchical, sampled_rank_intervals, user_wins

DEFAULT_MIN_VOTES = 25
#: Thresholds of the "near-zero or negative correlation" shares reported by the paper.
LOW_THRESHOLDS = (0.1, 0.5)
#: Per-user BT modes: those of `prefduel.ranking.bt.bt_per_user`, and the hierarchical fit.
PERSONAL_BT_MODES: tuple[str, ...] = ("mle", "ridge", "hier")
#: Gaussian draws per user behind the per-user rank intervals.
RANK_DRAWS = 200
#: Users per chunk of the per-user win matrices (memory bound: ``chunk x M x M`` floats).
_CHUNK_CELLS = 4_000_000


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
        bt_mle_exists: ``(U,)`` the user's unregularized BT MLE exists (whatever the mode).
        bt_estimate: ``(U,)`` the estimate behind ``bt``: ``"mle"``, ``"ridge"`` or
            ``"hierarchical"``.
        bt_lo: ``(U, M)`` lower end of the 95% interval of ``bt``; NaN unseen.
        bt_hi: ``(U, M)`` upper end; NaN unseen.
        rank: ``(U, M)`` rank by ``bt`` among the user's models (1 = best); 0 unseen.
        rank_lo: ``(U, M)`` best rank of the 95% rank interval; 0 unseen.
        rank_hi: ``(U, M)`` worst rank of the 95% rank interval; 0 unseen.
        battles_with: ``(U, M)`` battles of the user in which the model took part.
        tau: Shrinkage level of the hierarchical fit (logits), ``None`` for other modes.
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
    bt_mle_exists: np.ndarray
    bt_estimate: np.ndarray
    bt_lo: np.ndarray
    bt_hi: np.ndarray
    rank: np.ndarray
    rank_lo: np.ndarray
    rank_hi: np.ndarray
    battles_with: np.ndarray
    tau: float | None = None


@dataclass(frozen=True)
class _UserBT:
    """Per-user BT fits of one mode, with the Laplace or posterior s.d. of each strength."""

    scores: np.ndarray
    logits: np.ndarray
    sd: np.ndarray
    seen: np.ndarray
    fallback: np.ndarray
    mle_exists: np.ndarray
    never_won: np.ndarray
    never_lost: np.ndarray
    estimate: np.ndarray
    tau: float | None


def eligible_users(battles: Battles, min_votes: int = DEFAULT_MIN_VOTES) -> np.ndarray:
    """Indices of the users with at least ``min_votes`` battles, shape ``(U,)``."""
    if min_votes < 1:
        raise RankingError(f"min_votes must be >= 1, got {min_votes}")
    return np.flatnonzero(battles.votes_per_user() >= min_votes)


def find_user(battles: Battles, user_id: str, min_votes: int = DEFAULT_MIN_VOTES) -> int:
    """The index of user ``user_id``, checked to have at least ``min_votes`` battles.

    Raises:
        RankingError: the id is not in the battles (the message lists close matches), or the
            user has fewer than ``min_votes`` battles (the message gives their count).
    """
    where = {u: i for i, u in enumerate(battles.users)}
    if user_id not in where:
        by_case = {}  # ids that differ only in case match best
        for u in battles.users:
            by_case.setdefault(u.casefold(), u)
        folded = difflib.get_close_matches(user_id.casefold(), list(by_case), n=5, cutoff=0.6)
        close = [by_case[f] for f in folded]
        hint = (
            f"close matches: {', '.join(repr(c) for c in close)}"
            if close
            else f"no close match; ids look like {', '.join(repr(u) for u in battles.users[:3])}"
        )
        raise RankingError(
            f"unknown user {user_id!r}: not among the {battles.n_users} users of "
            f"{battles.source}; {hint}"
        )
    index = where[user_id]
    votes = int(battles.votes_per_user()[index])
    if votes < min_votes:
        raise RankingError(
            f"user {user_id!r} cast {votes} votes, fewer than --min-votes {min_votes}, so they "
            f"get no leaderboard; lower --min-votes to {votes} or less to rank them anyway"
        )
    return index


def personal_ratings(
    battles: Battles,
    min_votes: int = DEFAULT_MIN_VOTES,
    *,
    k: float = PAPER_K,
    bt_mode: str = "mle",
    ridge: float = DEFAULT_RIDGE,
    seed: int = 0,
    elo_order_count: int = 0,
) -> PersonalRatings:
    """Per-user Elo (time order, K = ``k``) and BT of every user with ``>= min_votes`` battles.

    Args:
        battles: Validated battles.
        min_votes: Users with fewer battles are left out (counted).
        k: Elo K-factor.
        bt_mode: ``"mle"``, ``"ridge"`` or ``"hier"`` (`PERSONAL_BT_MODES`).
        ridge: Penalty of ridge fits and fallbacks.
        seed: Seed of the hierarchical fit, the rank-interval draws and the Elo orders.
        elo_order_count: 0: Elo in the battles' order; ``N > 0``: the mean over ``N`` seeded
            random orders (`prefduel.ranking.elo.elo_orders`).

    Raises:
        RankingError: no user has ``min_votes`` battles (the message gives the largest count),
            or an unknown mode.
    """
    users, votes = _analysed_users(battles, min_votes, bt_mode)
    elo = _user_elo(battles, users, k, elo_order_count, seed)
    fit = _user_bt(battles, users, bt_mode, ridge, seed)
    rank, rank_lo, rank_hi = _rank_intervals(fit, stream(seed, "ranking", "user_ranks"))
    half = Z95 * ELO_PER_LOGIT * fit.sd
    below = votes < min_votes
    return PersonalRatings(
        users=users,
        votes=votes[users],
        seen=fit.seen,
        elo=elo,
        bt=fit.scores,
        bt_fallback=fit.fallback,
        bt_never_won=fit.never_won,
        bt_never_lost=fit.never_lost,
        below_min_users=int(below.sum()),
        below_min_battles=int(votes[below].sum()),
        bt_mle_exists=fit.mle_exists,
        bt_estimate=fit.estimate,
        bt_lo=fit.scores - half,
        bt_hi=fit.scores + half,
        rank=rank,
        rank_lo=rank_lo,
        rank_hi=rank_hi,
        battles_with=_battles_with(battles, users),
        tau=fit.tau,
    )


def _analysed_users(
    battles: Battles, min_votes: int, bt_mode: str
) -> tuple[np.ndarray, np.ndarray]:
    """The users with at least ``min_votes`` battles and every user's battle count; a
    `RankingError` for an unknown BT mode or when no user has enough battles."""
    if bt_mode not in PERSONAL_BT_MODES:
        raise RankingError(f"BT mode must be one of {PERSONAL_BT_MODES}, got {bt_mode!r}")
    users = eligible_users(battles, min_votes)
    votes = battles.votes_per_user()
    if users.size == 0:
        raise RankingError(
            f"no user has at least {min_votes} battles (the most active has "
            f"{int(votes.max())}); lower --min-votes"
        )
    return users, votes


def _user_elo(
    battles: Battles, users: np.ndarray, k: float, orders: int, seed: int
) -> np.ndarray:
    """Per-user Elo ``(U, M)``: in the battles' order, or the mean over ``orders`` seeded
    random orders (summed one order at a time: memory stays one ``U x M`` table however many
    orders; the orders are those of one `elo_orders` call)."""
    if orders == 0:
        return elo_per_user(battles, users, k)
    rng = stream(seed, "ranking", "elo_orders", "users")
    total = elo_orders(battles, rng, 1, k, users)[0]
    for _ in range(orders - 1):
        total += elo_orders(battles, rng, 1, k, users)[0]
    return total / orders


def _user_bt(battles: Battles, users: np.ndarray, mode: str, ridge: float, seed: int) -> _UserBT:
    """BT of each user in ``mode``, with the s.d. of each strength and the MLE flags."""
    m = battles.n_models
    if mode == "hier":
        hier = bt_hierarchical(battles, users, seed=seed)
        exists = np.zeros(users.size, dtype=bool)
        never_won = np.zeros(users.size, dtype=np.int64)
        never_lost = np.zeros(users.size, dtype=np.int64)
        for sl, wins in _user_chunks(battles, users):
            seen = (wins + np.swapaxes(wins, 1, 2)).sum(axis=2) > 0
            exists[sl] = strongly_connected(wins, seen)
            never_won[sl] = (seen & (wins.sum(axis=2) <= 0)).sum(axis=1)
            never_lost[sl] = (seen & (wins.sum(axis=1) <= 0)).sum(axis=1)
        seen = hier.seen
        return _UserBT(
            scores=np.where(seen, hier.scores, np.nan),
            logits=np.where(seen, hier.logits, np.nan),
            sd=np.where(seen, hier.sd, np.nan),
            seen=seen,
            fallback=np.zeros(users.size, dtype=bool),
            mle_exists=exists,
            never_won=never_won,
            never_lost=never_lost,
            estimate=np.full(users.size, "hierarchical", dtype=object),
            tau=hier.tau,
        )
    fit = bt_per_user(battles, users, mode, ridge)
    uses_ridge = fit.fallback | (mode == "ridge")
    penalty = np.where(uses_ridge, ridge, 0.0)
    sd = np.full((users.size, m), np.nan)
    for sl, wins in _user_chunks(battles, users):
        sd[sl] = _laplace_sd(wins, fit.logits[sl], fit.seen[sl], penalty[sl])
    return _UserBT(
        scores=fit.scores,
        logits=fit.logits,
        sd=sd,
        seen=fit.seen,
        fallback=fit.fallback,
        mle_exists=fit.mle_exists,
        never_won=fit.never_won.sum(axis=1),
        never_lost=fit.never_lost.sum(axis=1),
        estimate=np.where(uses_ridge, "ridge", "mle").astype(object),
        tau=None,
    )


def _user_chunks(battles: Battles, users: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """``(slice of users, their (chunk, M, M) win matrices)``, a memory-bounded chunk at a
    time."""
    m = battles.n_models
    chunk = max(1, _CHUNK_CELLS // (m * m))
    for lo in range(0, users.size, chunk):
        sl = slice(lo, min(lo + chunk, users.size))
        yield sl, user_wins(battles, users[sl])


def _laplace_sd(
    wins: np.ndarray, logits: np.ndarray, seen: np.ndarray, penalty: np.ndarray
) -> np.ndarray:
    """Laplace (Wald) s.d. of the strengths centred over each data set's seen models.

    The covariance of the fit is the inverse of the (penalized) Fisher information
    ``L + penalty I`` (``L``: the Laplacian of pair weights ``n_ij p_ij (1 - p_ij)``); an MLE
    (``penalty = 0``) fixes only differences, so ``L + 1 1^T / m`` stands in (same inverse on
    centred strengths). Centring over the ``m`` seen models is the projection ``P C P``.

    Args:
        wins: ``(B, M, M)`` win matrices.
        logits: ``(B, M)`` fitted strengths (NaN unseen).
        seen: ``(B, M)`` models present.
        penalty: ``(B,)`` ridge penalty of each fit (0 for an MLE).

    Returns:
        ``(B, M)`` s.d. in logits; NaN unseen.
    """
    m = wins.shape[1]
    theta = np.nan_to_num(logits)
    p = 1.0 / (1.0 + np.exp(-(theta[:, :, None] - theta[:, None, :])))
    weight = (wins + np.swapaxes(wins, 1, 2)) * p * (1.0 - p)
    diag = np.arange(m)
    info = -weight
    info[:, diag, diag] = weight.sum(axis=2) - weight[:, diag, diag]
    m_seen = np.maximum(seen.sum(axis=1), 1)[:, None, None]
    both = seen[:, :, None] & seen[:, None, :]
    info += np.where((penalty == 0)[:, None, None], both / m_seen, 0.0)
    info[:, diag, diag] += np.where(seen, penalty[:, None], 1.0)  # unseen: identity rows
    cov = np.linalg.inv(info)
    share = seen / m_seen[:, :, 0]
    row = np.einsum("bij,bj->bi", cov, share)  # mean covariance with the seen models
    total = np.einsum("bi,bi->b", row, share)[:, None]
    var = np.diagonal(cov, axis1=1, axis2=2) - 2.0 * row + total
    return np.where(seen, np.sqrt(np.maximum(var, 0.0)), np.nan)


def _rank_intervals(
    fit: _UserBT, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each user's rank of each seen model by BT (1 = best, 0 unseen) and its 95% interval
    from Gaussian draws of the strengths, widened where needed to hold the point rank."""
    u, m = fit.scores.shape
    order = np.argsort(-np.where(fit.seen, fit.scores, -np.inf), axis=1, kind="stable")
    rank = np.zeros((u, m), dtype=np.int64)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(1, m + 1), (u, m)), axis=1)
    rank[~fit.seen] = 0
    lo, hi = sampled_rank_intervals(fit.logits, fit.sd, rng, RANK_DRAWS, 0.95, fit.seen)
    return rank, np.minimum(lo, rank), np.maximum(hi, rank)


def _battles_with(battles: Battles, users: np.ndarray) -> np.ndarray:
    """``(U, M)`` battles of each user in which each model took part."""
    m = battles.n_models
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[users] = np.arange(users.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    cell = slot[battles.user[rows]] * m
    size = users.size * m
    counts = np.bincount(cell + battles.a[rows], minlength=size)
    counts += np.bincount(cell + battles.b[rows], minlength=size)
    return counts.reshape(users.size, m)


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


def correlation_by_estimate(
    rho_elo: np.ndarray, rho_bt: np.ndarray, mle_exists: np.ndarray
) -> dict[str, dict[str, Any]]:
    """The correlation summaries of the users whose BT MLE exists and of the others.

    Sparse users rarely have an MLE; their BT comes from ridge or the hierarchical fit, whose
    shrinkage moves their correlation with the global ranking, so a reader needs both groups.

    Args:
        rho_elo: ``(U,)`` per-user Elo correlations.
        rho_bt: ``(U,)`` per-user BT correlations.
        mle_exists: ``(U,)`` the user's BT MLE exists.

    Returns:
        ``{"mle_exists": {...}, "no_mle": {...}}``, each with ``users`` and the ``elo`` and
        ``bt`` summaries of `correlation_summary`.
    """
    groups = {"mle_exists": np.asarray(mle_exists, dtype=bool)}
    groups["no_mle"] = ~groups["mle_exists"]
    return {
        name: {
            "users": int(mask.sum()),
            "elo": correlation_summary(rho_elo[mask]),
            "bt": correlation_summary(rho_bt[mask]),
        }
        for name, mask in groups.items()
    }


def _wilcoxon(diff: np.ndarray) -> dict[str, Any]:
    nonzero = diff[diff != 0]
    if nonzero.size < 2:
        return {"n": int(diff.size), "statistic": None, "p": None}
    res = stats.wilcoxon(nonzero)
    return {"n": int(diff.size), "statistic": float(res.statistic), "p": float(res.pvalue)}
