"""Posterior predictive checks of a `prefduel.ranking.vote_model.VoteModel`: how faithful a
world built from a vote log is to the log.

- `holdout_check`: each kept voter's votes are split into seeded folds, and every fold is
  predicted by a model fitted on the others: the global Bradley-Terry strengths alone, with
  the category effects, and the world's model (each voter's posterior predictive click
  probability, ``E s(x)`` for ``x ~ N(mean, var)``, by the probit approximation
  ``s(mean / sqrt(1 + pi var / 8))``). Log-loss per held-out vote; ties count half a win
  each way; a coin flip scores ``log 2``.
- `rho_check`: the per-voter Spearman correlation with the global ranking that
  ``prefduel rank --bt-mode hier`` reports, on the log itself and on logs replicated from the
  world (the same voters, pairs and categories; each kept voter's decisive votes redrawn from
  one posterior draw of their strengths; ties and the other voters' votes as in the log).
  A world whose voters depart from the global ranking as the log's do gives the same
  distribution.

References:
    Gelman, Meng & Stern (1996), Posterior predictive assessment of model fitness via realized
    discrepancies. Statistica Sinica.
    MacKay (1992), The evidence framework applied to classification networks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from prefduel.core.btl import sigmoid
from prefduel.core.rng import stream
from prefduel.ranking.battles import TIE, Battles
from prefduel.ranking.bt import bt_ratings
from prefduel.ranking.errors import RankingError
from prefduel.ranking.hier import _fold_of, _subset, bt_hierarchical
from prefduel.ranking.personal import correlation_summary, spearman_to_global
from prefduel.ranking.vote_model import VoteModel, fit_vote_model

#: The quantiles of the per-voter correlations that the check reports.
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def holdout_check(
    battles: Battles,
    category: np.ndarray,
    n_categories: int,
    voters: np.ndarray,
    *,
    folds: int = 5,
    seed: int = 0,
) -> dict[str, Any]:
    """Held-out log-loss of the world's model beside the global BT's.

    Args:
        battles: The battles among the world's models.
        category: ``(n,)`` category of each battle.
        n_categories: Number of categories (1: none).
        voters: ``(V,)`` the world's voters, whose votes are held out and predicted.
        folds: Folds per voter (>= 2).
        seed: Seed of the fold assignment and the fits.

    Returns:
        ``{"folds", "votes", "global", "categories", "world", "coin_flip"}``: mean log-loss per
        held-out vote (``categories`` is None for a log without categories).
    """
    if folds < 2:
        raise RankingError(f"the held-out check needs at least 2 folds, got {folds}")
    fold = _fold_of(battles, voters, folds, seed)
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[voters] = np.arange(voters.size)
    totals = {"global": 0.0, "categories": 0.0, "world": 0.0}
    for k in range(folds):
        test = fold == k
        model = fit_vote_model(
            _subset(battles, ~test), category[~test], n_categories, voters, seed=seed
        )
        rows = np.flatnonzero(test)
        a, b, s = battles.a[rows], battles.b[rows], battles.outcome[rows]
        v, c = slot[battles.user[rows]], category[rows]
        base = model.base[c, a] - model.base[c, b]
        mean = base + model.delta[v, a] - model.delta[v, b]
        cov = np.linalg.inv(model.precision)
        var = cov[v, a, a] + cov[v, b, b] - 2.0 * cov[v, a, b]
        for name, diff in (
            ("global", model.beta[a] - model.beta[b]),
            ("categories", base),
            ("world", mean / np.sqrt(1.0 + np.pi * var / 8.0)),
        ):
            totals[name] += float(np.sum(_log_loss(diff, s)))
    votes = int(np.sum(fold >= 0))
    out = {name: total / max(votes, 1) for name, total in totals.items()}
    return {
        "folds": folds,
        "votes": votes,
        "global": out["global"],
        "categories": out["categories"] if n_categories > 1 else None,
        "world": out["world"],
        "coin_flip": float(np.log(2.0)),
    }


def _log_loss(diff: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Log-loss of each battle predicted with logit ``diff`` (a over b); ties half each way."""
    return outcome * np.logaddexp(0, -diff) + (1 - outcome) * np.logaddexp(0, diff)


def rho_check(
    battles: Battles,
    category: np.ndarray,
    model: VoteModel,
    *,
    replicates: int = 5,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-voter Spearman correlation with the global ranking, on the log and on logs
    replicated from the world.

    Args:
        battles: The battles among the world's models (the model was fitted on them).
        category: ``(n,)`` category of each battle.
        model: The fitted model; its voters are the ones compared.
        replicates: Replicated logs (>= 1).
        seed: Seed of the fits and of the replicated votes.

    Returns:
        ``{"log", "world", "world_without_vote_noise", "replicates", "replicate_means"}``:
        `rho_distribution` of the log's voters, of the replicated logs' voters (pooled over
        replicates), and of the world's drawn strengths themselves (the correlation with
        unlimited votes); the mean of each replicate.
    """
    if replicates < 1:
        raise RankingError(f"the correlation check needs at least 1 replicate, got {replicates}")
    log_rho = _rank_rho(battles, model.voters, seed)
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[model.voters] = np.arange(model.voters.size)
    rows = np.flatnonzero((slot[battles.user] >= 0) & (battles.outcome != TIE))
    a, b, v, c = battles.a[rows], battles.b[rows], slot[battles.user[rows]], category[rows]
    chol = model.covariance_cholesky()
    shares = _category_shares(v, c, model.voters.size, model.gamma.shape[0])
    world, truth, means = [], [], []
    for r in range(replicates):
        rng = stream(seed, "votes-world", "check", r)
        draw = model.delta + np.einsum("vij,vj->vi", chol, rng.standard_normal(model.delta.shape))
        diff = model.base[c, a] - model.base[c, b] + draw[v, a] - draw[v, b]
        outcome = battles.outcome.copy()
        outcome[rows] = (rng.random(rows.size) < sigmoid(diff)).astype(float)
        rho = _rank_rho(dataclasses.replace(battles, outcome=outcome), model.voters, seed)
        world.append(rho)
        means.append(float(np.nanmean(rho)) if np.isfinite(rho).any() else None)
        strengths = shares @ model.base + draw
        seen = _seen(battles, model.voters)
        truth.append(spearman_to_global(np.where(seen, strengths, np.nan), model.beta))
    return {
        "log": rho_distribution(log_rho),
        "world": rho_distribution(np.concatenate(world)),
        "world_without_vote_noise": rho_distribution(np.concatenate(truth)),
        "replicates": replicates,
        "replicate_means": means,
    }


def _rank_rho(battles: Battles, voters: np.ndarray, seed: int) -> np.ndarray:
    """``(V,)`` what ``prefduel rank --bt-mode hier`` reports per voter: Spearman of the
    hierarchical BT with the global BT over the models the voter evaluated."""
    fit = bt_hierarchical(battles, voters, seed=seed)
    glob = bt_ratings(battles, "mle").scores[0]
    return spearman_to_global(np.where(fit.seen, fit.scores, np.nan), glob)


def _seen(battles: Battles, voters: np.ndarray) -> np.ndarray:
    """``(V, K)`` the models each voter evaluated."""
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[voters] = np.arange(voters.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    seen = np.zeros((voters.size, battles.n_models), dtype=bool)
    seen[slot[battles.user[rows]], battles.a[rows]] = True
    seen[slot[battles.user[rows]], battles.b[rows]] = True
    return seen


def _category_shares(
    voter: np.ndarray, category: np.ndarray, n_voters: int, n_categories: int
) -> np.ndarray:
    """``(V, C)`` share of each voter's votes in each category (uniform without votes)."""
    counts = np.bincount(voter * n_categories + category, minlength=n_voters * n_categories)
    counts = counts.reshape(n_voters, n_categories).astype(float)
    total = counts.sum(axis=1, keepdims=True)
    return np.where(total > 0, counts / np.maximum(total, 1.0), 1.0 / n_categories)


def rho_distribution(rho: np.ndarray) -> dict[str, Any]:
    """`correlation_summary` of per-voter correlations, with their `QUANTILES`."""
    rho = np.asarray(rho, dtype=float)
    out = correlation_summary(rho)
    ok = rho[np.isfinite(rho)]
    out["quantiles"] = {
        f"{q:g}": (float(np.quantile(ok, q)) if ok.size else None) for q in QUANTILES
    }
    return out


__all__ = ["QUANTILES", "holdout_check", "rho_check", "rho_distribution"]
