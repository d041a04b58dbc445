"""Online Elo ratings of models from battles in time order, globally and per user.

After each battle ``(a, b, s)`` with ``s`` = 1 (a won), 0 (b won) or 0.5 (tie)::

    E_a = 1 / (1 + base ** ((R_b - R_a) / scale))
    R_a <- R_a + K (s - E_a)
    R_b <- R_b + K ((1 - s) - (1 - E_a))

``K = 32`` is the value of the personalized-benchmarking paper, ``K = 4`` Chatbot Arena's.

References:
    Elo (1978), The Rating of Chessplayers, Past and Present.
    Chiang et al. (2024), Chatbot Arena, ICML (K = 4).
    Personalized Benchmarking: Evaluating LLMs by Individual Preferences, ACL Findings 2026
    (K = 32, per-user Elo).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from prefduel.ranking.battles import Battles
from prefduel.ranking.errors import RankingError

PAPER_K = 32.0
ARENA_K = 4.0
#: The largest K-factor: 250 times Arena's. Far beyond it, one battle moves a rating by more
#: than the odds formula can take (``base ** (diff / scale)`` overflows a float).
MAX_K = 1000.0


def elo_ratings(
    battles: Battles,
    k: float = PAPER_K,
    *,
    initial: float = 1000.0,
    scale: float = 400.0,
    base: float = 10.0,
) -> np.ndarray:
    """Global online Elo over every battle, in time order.

    Args:
        battles: Validated battles (already in time order).
        k: K-factor (> 0).
        initial: Starting rating of every model.
        scale: Rating points per factor ``base`` in the odds.
        base: Base of the odds.

    Returns:
        Ratings ``(M,)``.
    """
    _check(k, scale, base)
    return _elo_sequence(
        battles.a, battles.b, battles.outcome, battles.n_models, k, initial, scale, base
    )


def elo_per_user(
    battles: Battles,
    users: np.ndarray | None = None,
    k: float = PAPER_K,
    *,
    initial: float = 1000.0,
    scale: float = 400.0,
    base: float = 10.0,
) -> np.ndarray:
    """Online Elo of each user on their own battles, in time order; vectorized over users.

    Args:
        battles: Validated battles.
        users: Indices of the users to rate, shape ``(U',)`` (default: every user).
        k: K-factor (> 0).
        initial: Starting rating.
        scale: Rating points per factor ``base`` in the odds.
        base: Base of the odds.

    Returns:
        Ratings ``(U', M)``; NaN for models the user never saw.
    """
    _check(k, scale, base)
    users = np.arange(battles.n_users) if users is None else np.asarray(users, dtype=np.int64)
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[users] = np.arange(users.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    group = slot[battles.user[rows]]
    a, b, s = battles.a[rows], battles.b[rows], battles.outcome[rows]
    ratings = _elo_grouped(a, b, s, group, users.size, battles.n_models, k, initial, scale, base)
    seen = np.zeros((users.size, battles.n_models), dtype=bool)
    seen[group, a] = True
    seen[group, b] = True
    return np.where(seen, ratings, np.nan)


def elo_bootstrap(
    battles: Battles,
    rng: np.random.Generator,
    n_boot: int,
    k: float = PAPER_K,
    *,
    initial: float = 1000.0,
    scale: float = 400.0,
    base: float = 10.0,
    keep_order: bool = True,
) -> np.ndarray:
    """Elo of bootstrap resamples of the battles (with replacement, time order kept).

    The replicates run side by side, one vectorized step per battle, so the cost grows with
    the number of battles ``n``; memory is ``n_boot x n`` indices.

    Args:
        battles: Validated battles.
        rng: Seeded generator.
        n_boot: Number of replicates.
        k: K-factor.
        initial: Starting rating.
        scale: Rating points per factor ``base`` in the odds.
        base: Base of the odds.
        keep_order: Replay each resample in the battles' order; ``False`` replays it in a
            random order (so the intervals also cover the order, as with `elo_orders`).

    Returns:
        Ratings ``(n_boot, M)``.
    """
    _check(k, scale, base)
    n = battles.n
    samples = rng.integers(0, n, size=(n_boot, n))
    if keep_order:
        samples = np.sort(samples, axis=1)
    a, b, s = battles.a[samples], battles.b[samples], battles.outcome[samples]
    ratings = np.full((n_boot, battles.n_models), float(initial))
    rep = np.arange(n_boot)
    for t in range(n):
        _elo_step(ratings, rep, a[:, t], b[:, t], s[:, t], k, scale, base)
    return ratings


def elo_orders(
    battles: Battles,
    rng: np.random.Generator,
    n_orders: int,
    k: float = PAPER_K,
    users: np.ndarray | None = None,
) -> np.ndarray:
    """Online Elo replayed in ``n_orders`` seeded random orders of the battles.

    Online Elo depends on the order of the battles; without timestamps that order is the
    file's, which is arbitrary. Averaging over random orders removes that arbitrariness, and
    the spread across orders shows how much it mattered.

    Args:
        battles: Validated battles.
        rng: Seeded generator of the orders.
        n_orders: Number of orders (>= 1).
        k: K-factor.
        users: Rate these users ``(U',)`` on their own battles instead of all battles
            globally.

    Returns:
        ``(n_orders, M)`` global ratings, or ``(n_orders, U', M)`` per-user ratings (NaN
        unseen) when ``users`` is given.
    """
    _check(k, 400.0, 10.0)
    if n_orders < 1:
        raise RankingError(f"Elo orders must be >= 1, got {n_orders}")
    reps = []
    for _ in range(n_orders):
        order = rng.permutation(battles.n)
        a, b, s = battles.a[order], battles.b[order], battles.outcome[order]
        if users is None:
            reps.append(_elo_sequence(a, b, s, battles.n_models, k, 1000.0, 400.0, 10.0))
        else:
            shuffled = dataclasses.replace(battles, a=a, b=b, outcome=s, user=battles.user[order])
            reps.append(elo_per_user(shuffled, users, k))
    return np.stack(reps)


# -- kernels ---------------------------------------------------------------------------------


def _check(k: float, scale: float, base: float) -> None:
    if not (np.isfinite(k) and 0 < k <= MAX_K):
        raise RankingError(f"Elo K-factor must be a number in (0, {MAX_K:g}], got {k}")
    if not (scale > 0 and base > 1):
        raise RankingError(f"Elo needs scale > 0 and base > 1, got scale={scale}, base={base}")


def _elo_sequence(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    n_models: int,
    k: float,
    initial: float,
    scale: float,
    base: float,
) -> np.ndarray:
    """One sequence of battles ``(n,)``; plain-float loop (fast for a single sequence)."""
    ratings = [float(initial)] * n_models
    k, scale, base = float(k), float(scale), float(base)
    for i, j, score in zip(a.tolist(), b.tolist(), s.tolist(), strict=True):
        ra, rb = ratings[i], ratings[j]
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        ratings[i] = ra + k * (score - ea)
        ratings[j] = rb + k * ((1.0 - score) - (1.0 - ea))
    return np.asarray(ratings)


def _elo_step(
    ratings: np.ndarray,
    rows: np.ndarray,
    ia: np.ndarray,
    ib: np.ndarray,
    score: np.ndarray,
    k: float,
    scale: float,
    base: float,
) -> None:
    """Update ``ratings[rows]`` (one battle per row) in place.

    The arithmetic is that of the plain loop, operation for operation; the power goes through
    Python's ``float.__pow__`` (C ``pow``) because NumPy's vectorized power may differ from it in
    the last bit, and per-user ratings are meant to equal a straightforward loop exactly.
    """
    ra = ratings[rows, ia]
    rb = ratings[rows, ib]
    x = (rb - ra) / scale
    odds = np.fromiter(map(float(base).__pow__, x.tolist()), dtype=float, count=x.size)
    ea = 1.0 / (1.0 + odds)
    ratings[rows, ia] = ra + k * (score - ea)
    ratings[rows, ib] = rb + k * ((1.0 - score) - (1.0 - ea))


def _elo_grouped(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    n_models: int,
    k: float,
    initial: float,
    scale: float,
    base: float,
) -> np.ndarray:
    """Independent Elo sequences, one per group, stepped in parallel.

    Step ``t`` updates every group that has a ``t``-th battle. Groups are sorted by battle count
    so the active groups at step ``t`` are a prefix (no padding).

    Args:
        a, b, s: ``(n,)`` battles in time order.
        group: ``(n,)`` group of each battle in ``[0, n_groups)``.

    Returns:
        Ratings ``(n_groups, n_models)``.
    """
    ratings = np.full((n_groups, n_models), float(initial))
    if a.size == 0:
        return ratings
    order = np.argsort(group, kind="stable")  # time order kept inside each group
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    by_count = np.argsort(-counts, kind="stable")
    desc = counts[by_count]
    neg = -desc  # ascending
    for t in range(int(desc[0])):
        active = int(np.searchsorted(neg, -t, side="left"))  # groups with count > t
        g = by_count[:active]
        idx = order[starts[g] + t]
        _elo_step(ratings, g, a[idx], b[idx], s[idx], k, scale, base)
    return ratings
