"""Hierarchical Bradley-Terry: each user's strengths = the global strengths + a shrunk deviation.

A sparse user (a few dozen votes over dozens of models) has no MLE and a ridge fit pulls every
strength toward 0, i.e. toward "all models equal". The hierarchical model pulls toward the
*global* ranking instead, and lets the data decide how far users depart from it:

    theta_u = beta + delta_u,   delta_u ~ N(0, tau^2 I),   P(i beats j | u) = s(theta_ui - theta_uj)

``beta`` is the global BT fit of all battles (plugged in, empirical Bayes); ``tau`` (logits) is
one shrinkage level shared by all users, chosen by maximizing the Laplace approximation of the
marginal likelihood ``sum_u log p(W_u | tau)`` over ``log tau`` (a bounded scalar search). Each
user's ``delta_u`` is the posterior mode (batched damped Newton); its Gaussian approximation
``N(delta_u, H_u^{-1})`` gives per-model intervals and, by sampling, rank intervals. Models a
user never saw keep ``delta = 0``: their estimate is the global one with prior width ``tau``.

References:
    Efron & Morris (1975), Data analysis using Stein's estimator and its generalizations.
    Kass & Steffey (1989), Approximate Bayesian inference in conditionally independent
    hierarchical models (parametric empirical Bayes models).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import (
    DEFAULT_RIDGE,
    ELO_PER_LOGIT,
    bt_per_user,
    bt_ratings,
    to_elo,
    win_matrices,
)
from prefduel.ranking.errors import RankingError

#: Search range of the shrinkage level ``tau`` (logits).
TAU_BOUNDS = (0.01, 10.0)
#: Users used to choose ``tau`` (a seeded subsample above this; the final fit uses everyone).
TAU_SAMPLE = 2000
#: Users per batched Newton solve (memory bound: ``chunk x M x M`` floats).
_CHUNK_CELLS = 4_000_000
Z95 = 1.959963984540054


@dataclass(frozen=True)
class HierFit:
    """Hierarchical BT fits of ``U`` users over ``M`` models.

    Attributes:
        users: ``(U,)`` indices into ``battles.users``.
        scores: ``(U, M)`` Elo-scale scores (anchor 1000 = mean over all ``M`` models).
        logits: ``(U, M)`` posterior-mode strengths ``beta + delta_u`` (centered).
        sd: ``(U, M)`` posterior s.d. of each strength (logits; ignores the uncertainty of
            ``beta``).
        lo: ``(U, M)`` 95% interval, Elo scale.
        hi: ``(U, M)`` 95% interval, Elo scale.
        seen: ``(U, M)`` the user evaluated the model.
        tau: The shrinkage level used (logits).
        log_evidence: Laplace log marginal likelihood of the fitted users at ``tau``.
        converged: ``(U,)`` Newton met the tolerance.
    """

    users: np.ndarray
    scores: np.ndarray
    logits: np.ndarray
    sd: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    seen: np.ndarray
    tau: float
    log_evidence: float
    converged: np.ndarray


def bt_hierarchical(
    battles: Battles,
    users: np.ndarray | None = None,
    *,
    tau: float | None = None,
    seed: int = 0,
) -> HierFit:
    """Fit each user's strengths as the global BT strengths plus an empirical-Bayes deviation.

    Args:
        battles: Validated battles (the global fit uses all of them).
        users: Indices of the users to fit, ``(U,)`` (default: all).
        tau: Shrinkage level in logits; ``None`` chooses it by marginal likelihood.
        seed: Seed of the user subsample that chooses ``tau`` when there are more than
            `TAU_SAMPLE` users.

    Returns:
        A `HierFit` with leading dimension ``U``.
    """
    users = np.arange(battles.n_users) if users is None else np.asarray(users, dtype=np.int64)
    if users.size == 0:
        raise RankingError("no users to fit")
    if tau is not None and not (np.isfinite(tau) and tau > 0):
        raise RankingError(f"tau must be a positive number of logits, got {tau}")
    beta = np.nan_to_num(bt_ratings(battles, "mle").logits[0])
    wins = user_wins(battles, users)
    if tau is None:
        tau = choose_tau(wins, beta, seed=seed)
    return _posterior(wins, beta, float(tau), users)


def user_wins(battles: Battles, users: np.ndarray) -> np.ndarray:
    """``(U, M, M)`` win matrices of the given users (ties as halves)."""
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[users] = np.arange(users.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    return win_matrices(
        battles.a[rows], battles.b[rows], battles.outcome[rows], slot[battles.user[rows]],
        users.size, battles.n_models,
    )


def choose_tau(wins: np.ndarray, beta: np.ndarray, *, seed: int = 0) -> float:
    """The ``tau`` maximizing the Laplace log marginal likelihood of ``wins`` ``(U, M, M)``.

    Above `TAU_SAMPLE` users, a seeded subsample of them decides (the level is shared, so a
    couple of thousand users pin it down).
    """
    if wins.shape[0] > TAU_SAMPLE:
        pick = np.random.default_rng(seed).choice(wins.shape[0], TAU_SAMPLE, replace=False)
        wins = wins[np.sort(pick)]
    warm = np.zeros((wins.shape[0], wins.shape[1]))

    def negative_evidence(log_tau: float) -> float:
        delta, hess, _ = _newton(wins, beta, float(np.exp(log_tau)), warm)
        warm[:] = delta
        return -float(_evidence(wins, beta, delta, hess, float(np.exp(log_tau))).sum())

    lo, hi = np.log(TAU_BOUNDS)
    best = optimize.minimize_scalar(
        negative_evidence, bounds=(lo, hi), method="bounded", options={"xatol": 0.02}
    )
    return float(np.exp(best.x))


def rank_intervals(
    fit: HierFit, rng: np.random.Generator, draws: int = 400, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Rank intervals (1 = best) of every user's models, by sampling the posterior.

    Args:
        fit: A hierarchical fit.
        rng: Random stream of the draws.
        draws: Posterior draws per user.
        level: Interval level.

    Returns:
        ``(lo, hi)``, each ``(U, M)`` integer ranks.
    """
    return sampled_rank_intervals(fit.logits, fit.sd, rng, draws, level)


def sampled_rank_intervals(
    logits: np.ndarray,
    sd: np.ndarray,
    rng: np.random.Generator,
    draws: int = 400,
    level: float = 0.95,
    seen: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rank intervals (1 = best) from independent Gaussian draws of each strength.

    Args:
        logits: ``(U, M)`` strengths (centre of the draws).
        sd: ``(U, M)`` their standard deviations.
        rng: Random stream of the draws.
        draws: Draws per user.
        level: Interval level.
        seen: ``(U, M)`` rank only these models (the others rank last and get 0); default all.

    Returns:
        ``(lo, hi)``, each ``(U, M)`` integer ranks.
    """
    users, m = logits.shape
    lo = np.zeros((users, m), dtype=np.int64)
    hi = np.zeros((users, m), dtype=np.int64)
    tail = (1.0 - level) / 2.0
    chunk = max(1, _CHUNK_CELLS // (draws * m))
    for start in range(0, users, chunk):
        sl = slice(start, min(users, start + chunk))
        noise = rng.standard_normal((sl.stop - sl.start, draws, m))
        samples = logits[sl, None, :] + noise * sd[sl, None, :]
        if seen is not None:
            samples = np.where(seen[sl, None, :], samples, -np.inf)
        ranks = np.argsort(np.argsort(-samples, axis=2), axis=2) + 1
        lo[sl] = np.floor(np.quantile(ranks, tail, axis=1)).astype(np.int64)
        hi[sl] = np.ceil(np.quantile(ranks, 1.0 - tail, axis=1)).astype(np.int64)
    if seen is not None:
        lo[~seen] = 0
        hi[~seen] = 0
    return lo, hi


def holdout_logloss(
    battles: Battles, users: np.ndarray, *, folds: int = 5, seed: int = 0,
    ridge: float = DEFAULT_RIDGE,
) -> dict[str, float]:
    """Held-out-vote log-loss of the global, per-user ridge and hierarchical estimates.

    Each user's battles are split into ``folds`` seeded folds; every fold is predicted by fits
    of everything else (the global fit also sees other users' battles). A tie scores as half a
    win each way. Lower is better; ``log 2 = 0.693`` is a coin flip.

    Args:
        battles: Validated battles.
        users: ``(U,)`` users whose votes are held out and predicted.
        folds: Number of folds (>= 2).
        seed: Seed of the fold assignment.
        ridge: Penalty of the per-user ridge fits.

    Returns:
        ``{"global", "ridge", "hierarchical"}`` mean log-loss per held-out vote, plus
        ``"votes"`` (how many votes were predicted) and ``"tau"`` (mean chosen level).
    """
    if folds < 2:
        raise RankingError(f"held-out log-loss needs at least 2 folds, got {folds}")
    users = np.asarray(users, dtype=np.int64)
    fold = _fold_of(battles, users, folds, seed)
    losses = {"global": 0.0, "ridge": 0.0, "hierarchical": 0.0}
    taus = []
    for k in range(folds):
        test = fold == k
        train = _subset(battles, ~test)
        glob = np.nan_to_num(bt_ratings(train, "mle").logits[0])
        per_user = np.nan_to_num(bt_per_user(train, users, "ridge", ridge).logits)
        hier = bt_hierarchical(train, users, seed=seed)
        taus.append(hier.tau)
        slot = np.full(battles.n_users, -1, dtype=np.int64)
        slot[users] = np.arange(users.size)
        rows = np.flatnonzero(test)
        a, b, s, u = battles.a[rows], battles.b[rows], battles.outcome[rows], slot[
            battles.user[rows]
        ]
        for name, diff in (
            ("global", glob[a] - glob[b]),
            ("ridge", per_user[u, a] - per_user[u, b]),
            ("hierarchical", hier.logits[u, a] - hier.logits[u, b]),
        ):
            losses[name] += float(np.sum(_log_loss(diff, s)))
    votes = int(np.sum(fold >= 0))
    out = {name: total / max(votes, 1) for name, total in losses.items()}
    return {**out, "votes": votes, "tau": float(np.mean(taus))}


def _log_loss(diff: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Log-loss of each battle predicted with strength difference ``diff`` (a minus b)."""
    return outcome * np.logaddexp(0, -diff) + (1 - outcome) * np.logaddexp(0, diff)


def _fold_of(battles: Battles, users: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Fold of each battle (-1 for battles of users not held out), balanced within each user."""
    chosen = np.zeros(battles.n_users, dtype=bool)
    chosen[users] = True
    fold = np.full(battles.n, -1, dtype=np.int64)
    rows = np.flatnonzero(chosen[battles.user])
    shuffled = rows[np.random.default_rng(seed).permutation(rows.size)]
    order = shuffled[np.argsort(battles.user[shuffled], kind="stable")]
    first = np.searchsorted(battles.user[order], battles.user[order], side="left")
    fold[order] = (np.arange(order.size) - first) % folds
    return fold


def _subset(battles: Battles, keep: np.ndarray) -> Battles:
    """The battles where ``keep`` is true (same models and users)."""
    return dataclasses.replace(
        battles,
        a=battles.a[keep],
        b=battles.b[keep],
        outcome=battles.outcome[keep],
        user=battles.user[keep],
        time=None if battles.time is None else battles.time[keep],
        prompts=None if battles.prompts is None else battles.prompts[keep],
        rows=None if battles.rows is None else battles.rows[keep],
    )


# -- computation ----------------------------------------------------------------------------


def _posterior(wins: np.ndarray, beta: np.ndarray, tau: float, users: np.ndarray) -> HierFit:
    m = wins.shape[1]
    chunk = max(1, _CHUNK_CELLS // (m * m))
    deltas, sds, evidence, converged = [], [], 0.0, []
    for start in range(0, wins.shape[0], chunk):
        part = wins[start : start + chunk]
        delta, hess, ok = _newton(part, beta, tau, np.zeros((part.shape[0], m)))
        evidence += float(_evidence(part, beta, delta, hess, tau).sum())
        deltas.append(delta)
        sds.append(np.sqrt(np.diagonal(np.linalg.inv(hess), axis1=1, axis2=2)))
        converged.append(ok)
    theta = beta[None, :] + np.concatenate(deltas)
    theta = theta - theta.mean(axis=1, keepdims=True)
    sd = np.concatenate(sds)
    scores = to_elo(theta)
    seen = (wins + np.swapaxes(wins, 1, 2)).sum(axis=2) > 0
    half = Z95 * ELO_PER_LOGIT * sd
    return HierFit(
        users=users,
        scores=scores,
        logits=theta,
        sd=sd,
        lo=scores - half,
        hi=scores + half,
        seen=seen,
        tau=tau,
        log_evidence=evidence,
        converged=np.concatenate(converged),
    )


def _pairs(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pi, pj = np.triu_indices(m, 1)
    incidence = np.zeros((pi.size, m))
    incidence[np.arange(pi.size), pi] = 1.0
    incidence[np.arange(pi.size), pj] = -1.0
    return pi, pj, incidence


def _log_posterior(w_ij, w_ji, d, delta, tau) -> np.ndarray:
    """Per-user log-likelihood of the pair differences ``d`` minus the Gaussian penalty."""
    n = w_ij + w_ji
    return (n * -np.logaddexp(0.0, -d) - w_ji * d).sum(axis=1) - 0.5 * (delta * delta).sum(
        axis=1
    ) / (tau * tau)


def _newton(
    wins: np.ndarray, beta: np.ndarray, tau: float, start: np.ndarray, max_iter: int = 100,
    tol: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batched damped Newton ascent of each user's log posterior in ``delta`` ``(U, M)``.

    Returns:
        ``(delta, hessian, converged)``: modes ``(U, M)``, negative Hessians ``(U, M, M)`` at
        the modes (the posterior precisions), ``(U,)`` flags.
    """
    m = wins.shape[1]
    pi, pj, incidence = _pairs(m)
    w_ij, w_ji = wins[:, pi, pj], wins[:, pj, pi]
    n = w_ij + w_ji
    base = beta @ incidence.T
    delta = start.copy()
    d = base + delta @ incidence.T
    obj = _log_posterior(w_ij, w_ji, d, delta, tau)
    converged = np.zeros(wins.shape[0], dtype=bool)
    diag = np.arange(m)
    for _ in range(max_iter):
        hess = _precision(n, d, tau, pi, pj, incidence, diag)
        grad = (w_ij - n / (1.0 + np.exp(-d))) @ incidence - delta / (tau * tau)
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        scale = np.ones(wins.shape[0])
        for _ in range(40):
            cand = delta + scale[:, None] * step
            d_new = base + cand @ incidence.T
            new = _log_posterior(w_ij, w_ji, d_new, cand, tau)
            worse = new < obj - 1e-12 * np.abs(obj)
            if not worse.any():
                break
            scale[worse] *= 0.5
        delta, d, obj = cand, d_new, new
        done = np.abs(scale[:, None] * step).max(axis=1) < tol
        converged |= done
        if converged.all():
            break
    return delta, _precision(n, d, tau, pi, pj, incidence, diag), converged


def _precision(n, d, tau, pi, pj, incidence, diag) -> np.ndarray:
    """Negative Hessian of the log posterior: the weighted graph Laplacian plus ``I / tau^2``."""
    p = 1.0 / (1.0 + np.exp(-d))
    v = n * p * (1.0 - p)
    m = incidence.shape[1]
    hess = np.zeros((n.shape[0], m, m))
    hess[:, pi, pj] = -v
    hess[:, pj, pi] = -v
    hess[:, diag, diag] = v @ np.abs(incidence) + 1.0 / (tau * tau)
    return hess


def _evidence(wins, beta, delta, hess, tau) -> np.ndarray:
    """Laplace log marginal likelihood per user (unseen models contribute exactly 0)."""
    pi, pj, incidence = _pairs(wins.shape[1])
    d = beta @ incidence.T + delta @ incidence.T
    log_post = _log_posterior(wins[:, pi, pj], wins[:, pj, pi], d, delta, tau)
    _, logdet = np.linalg.slogdet(hess * (tau * tau))
    return log_post - 0.5 * logdet


__all__ = [
    "TAU_BOUNDS",
    "TAU_SAMPLE",
    "HierFit",
    "bt_hierarchical",
    "choose_tau",
    "holdout_logloss",
    "rank_intervals",
    "sampled_rank_intervals",
    "user_wins",
]
