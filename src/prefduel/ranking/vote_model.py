"""A fitted model of a vote log that a world can be built from.

Among the ``K`` models of the log with the most votes, voter ``u``'s strength of model ``m``
on a prompt of category ``c`` is

    theta_u(m, c) = beta_m + gamma_cm + delta_um

- ``beta``: the global Bradley-Terry strengths, the maximum-likelihood fit of every vote among
  the ``K`` models (ridge where the MLE does not exist), as ``prefduel rank`` fits them;
- ``gamma_c``: category effects, each category's deviation from ``beta`` shrunk by one
  empirical-Bayes level (categories are the groups of `prefduel.ranking.hier_cells`); zero
  when the log has no categories;
- ``delta_u``: each voter's deviation, shrunk by one level ``tau`` chosen by marginal
  likelihood, with a Gaussian posterior ``N(delta_u, H_u^{-1})``: the hierarchical per-user
  Bradley-Terry of ``prefduel rank --bt-mode hier`` (`prefduel.ranking.hier`), fitted at the
  category's global strengths instead of ``beta`` alone.

Ties count as half a win each way, as everywhere in `prefduel.ranking`.
`leave_one_out_strengths` refits ``beta + gamma_c`` without one voter's votes: what a router
could know of a prompt's category without that user.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from prefduel.ranking.battles import Battles
from prefduel.ranking.bt import bt_from_wins, bt_ratings, win_matrices, win_matrix
from prefduel.ranking.errors import RankingError
from prefduel.ranking.hier_cells import Cells, battle_cells, fit_groups


@dataclass(frozen=True)
class VoteModel:
    """The fitted model of a vote log (``K`` models, ``C`` categories, ``V`` voters).

    Attributes:
        beta: ``(K,)`` global strengths (logits, centered).
        gamma: ``(C, K)`` category effects (zeros for a log without categories).
        tau_category: The categories' shrinkage level (None without categories).
        voters: ``(V,)`` the fitted voters (indices into ``battles.users``).
        delta: ``(V, K)`` each voter's posterior mode deviation.
        precision: ``(V, K, K)`` each voter's posterior precision.
        tau: The voters' shrinkage level (logits).
        converged: ``(V,)`` each voter's Newton met the tolerance.
    """

    beta: np.ndarray
    gamma: np.ndarray
    tau_category: float | None
    voters: np.ndarray
    delta: np.ndarray
    precision: np.ndarray
    tau: float
    converged: np.ndarray

    @property
    def base(self) -> np.ndarray:
        """``(C, K)`` the global strengths on each category, ``beta + gamma_c``."""
        return self.beta[None, :] + self.gamma

    def covariance_cholesky(self) -> np.ndarray:
        """``(V, K, K)`` lower Cholesky factors of the voters' posterior covariances."""
        return np.linalg.cholesky(np.linalg.inv(self.precision))


def top_models(battles: Battles, k: int) -> np.ndarray:
    """The ``k`` models with the most battles (ties: the first name), most voted first.

    Raises:
        RankingError: fewer than 2 models to choose from, or ``k < 2``.
    """
    if k < 2:
        raise RankingError(f"a world needs at least 2 models (personas), got --models {k}")
    if battles.n_models < 2:
        raise RankingError(
            f"{battles.source}: only {battles.n_models} model left after the row checks "
            "(see the skips); a world needs at least 2"
        )
    counts = np.bincount(battles.a, minlength=battles.n_models) + np.bincount(
        battles.b, minlength=battles.n_models
    )
    return np.argsort(-counts, kind="stable")[:k]


def among_models(battles: Battles, models: np.ndarray) -> tuple[Battles, np.ndarray]:
    """The battles between two of ``models``, re-indexed so that model ``i`` is
    ``models[i]`` (users keep their indices).

    Returns:
        ``(battles, kept)``: the battles and the ``(n,)`` mask of the kept ones.
    """
    slot = np.full(battles.n_models, -1, dtype=np.int64)
    slot[models] = np.arange(models.size)
    kept = (slot[battles.a] >= 0) & (slot[battles.b] >= 0)
    picked = dataclasses.replace(
        battles,
        models=tuple(battles.models[i] for i in models.tolist()),
        a=slot[battles.a[kept]],
        b=slot[battles.b[kept]],
        outcome=battles.outcome[kept],
        user=battles.user[kept],
        time=None if battles.time is None else battles.time[kept],
        prompts=None if battles.prompts is None else battles.prompts[kept],
        rows=None if battles.rows is None else battles.rows[kept],
    )
    return picked, kept


def fit_vote_model(
    battles: Battles,
    category: np.ndarray,
    n_categories: int,
    voters: np.ndarray,
    *,
    seed: int = 0,
) -> VoteModel:
    """Fit the global strengths, the category effects and each voter's posterior.

    Args:
        battles: The battles among the world's models (every voter's: all inform ``beta``
            and ``gamma``).
        category: ``(n,)`` category of each battle (``0 .. n_categories - 1``).
        n_categories: Number of categories (1: none).
        voters: ``(V,)`` the voters to fit (indices into ``battles.users``).
        seed: Seed of the subsamples that choose the shrinkage levels.

    Raises:
        RankingError: no voter.
    """
    if voters.size == 0:
        raise RankingError("no voter to fit")
    k = battles.n_models
    beta = np.nan_to_num(bt_ratings(battles, "mle").logits[0])
    gamma, tau_category = np.zeros((max(n_categories, 1), k)), None
    if n_categories > 1:
        cells = battle_cells(
            battles.a, battles.b, battles.outcome, category,
            np.zeros(battles.n, dtype=np.int64), n_categories, k,
        )
        fit = fit_groups(cells, beta[None], seed=seed)
        gamma, tau_category = fit.delta, fit.tau
    fit = fit_groups(_voter_cells(battles, category, voters), beta[None] + gamma, seed=seed)
    return VoteModel(
        beta=beta,
        gamma=gamma,
        tau_category=tau_category,
        voters=np.asarray(voters, dtype=np.int64),
        delta=fit.delta,
        precision=fit.precision,
        tau=fit.tau,
        converged=fit.converged,
    )


def _voter_cells(battles: Battles, category: np.ndarray, voters: np.ndarray) -> Cells:
    """The cells (voter, category) of the battles of ``voters``."""
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[voters] = np.arange(voters.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    return battle_cells(
        battles.a[rows], battles.b[rows], battles.outcome[rows], slot[battles.user[rows]],
        category[rows], voters.size, battles.n_models,
    )


def leave_one_out_strengths(
    battles: Battles,
    category: np.ndarray,
    model: VoteModel,
    voter: np.ndarray,
    cell_category: np.ndarray,
) -> np.ndarray:
    """The global strengths on a category fitted without one voter's votes, per (voter,
    category) cell.

    ``beta`` is refitted by maximum likelihood on every vote but the voter's (ridge where the
    MLE does not exist), and the category's effect is its posterior mode at that ``beta``
    with the category level ``model.tau_category`` of the whole log.

    Args:
        battles: The battles the model was fitted on.
        category: ``(n,)`` category of each battle.
        model: The fitted model.
        voter: ``(L,)`` user index (into ``battles.users``) of each cell.
        cell_category: ``(L,)`` category of each cell.

    Returns:
        ``(L, K)`` strengths (logits, centered).
    """
    k, n_categories = battles.n_models, model.gamma.shape[0]
    users, which = np.unique(voter, return_inverse=True)
    total = win_matrix(battles.a, battles.b, battles.outcome, k)
    mine = _user_wins(battles, users, k)
    beta = np.nan_to_num(bt_from_wins(total[None] - mine, "mle").logits)  # (users, K)
    if n_categories == 1:
        strengths = beta[which]
    else:
        strengths = beta[which] + _category_without(
            battles, category, n_categories, model, users, which, cell_category, beta
        )
    return strengths - strengths.mean(axis=1, keepdims=True)


def _user_wins(battles: Battles, users: np.ndarray, k: int) -> np.ndarray:
    """``(len(users), K, K)`` win matrices of the given users."""
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[users] = np.arange(users.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    return win_matrices(
        battles.a[rows], battles.b[rows], battles.outcome[rows], slot[battles.user[rows]],
        users.size, k,
    )


def _category_without(
    battles: Battles,
    category: np.ndarray,
    n_categories: int,
    model: VoteModel,
    users: np.ndarray,
    which: np.ndarray,
    cell_category: np.ndarray,
    beta: np.ndarray,
) -> np.ndarray:
    """``(L, K)`` each cell's category effect refitted without its voter, at ``beta[which]``
    (the voter's leave-one-out global strengths), each cell a group of its own."""
    k = battles.n_models
    everyone = battle_cells(
        battles.a, battles.b, battles.outcome, category,
        np.zeros(battles.n, dtype=np.int64), n_categories, k,
    )
    pooled_wins = np.zeros((n_categories, everyone.wins.shape[1]))
    pooled_total = np.zeros_like(pooled_wins)
    pooled_wins[everyone.group] = everyone.wins
    pooled_total[everyone.group] = everyone.total
    mine = _voter_cells(battles, category, users)  # groups: users; offsets: categories
    own_wins = np.zeros((users.size, n_categories, pooled_wins.shape[1]))
    own_total = np.zeros_like(own_wins)
    own_wins[mine.group, mine.offset] = mine.wins
    own_total[mine.group, mine.offset] = mine.total
    n_cells = which.size
    cells = Cells(
        group=np.arange(n_cells),
        offset=which,  # the voter's leave-one-out beta is the cell's offset
        wins=pooled_wins[cell_category] - own_wins[which, cell_category],
        total=pooled_total[cell_category] - own_total[which, cell_category],
        n_groups=n_cells,
        n_models=k,
    )
    return fit_groups(cells, beta, tau=model.tau_category).delta


__all__ = [
    "VoteModel",
    "among_models",
    "fit_vote_model",
    "leave_one_out_strengths",
    "top_models",
]
