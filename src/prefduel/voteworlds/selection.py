"""The models and voters a world from a vote log is made of: the ``K`` models with the most
votes, and the voters with enough votes among them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prefduel.ranking.battles import Battles
from prefduel.ranking.errors import RankingError
from prefduel.ranking.vote_log import VoteLog
from prefduel.ranking.vote_model import among_models, top_models
from prefduel.voteworlds.settings import BuildSettings

#: Fewest voters a world is built from (one voter has nobody to transfer from).
MIN_VOTERS = 2


@dataclass(frozen=True)
class Selection:
    """The models and voters a world is made of.

    Attributes:
        battles: The battles among the chosen models (models re-indexed in vote order).
        category: ``(n,)`` their categories.
        models: ``(K,)`` the chosen models (indices into the log's models).
        model_votes: ``(K,)`` battles of each in the whole log.
        voters: ``(V,)`` the kept voters (indices into ``battles.users``).
        dropped: Voters with a vote among the chosen models but fewer than ``min_votes``.
        votes: ``(V,)`` votes of each kept voter among the chosen models.
    """

    battles: Battles
    category: np.ndarray
    models: np.ndarray
    model_votes: np.ndarray
    voters: np.ndarray
    dropped: int
    votes: np.ndarray


def select(log: VoteLog, settings: BuildSettings, notes: list[str]) -> Selection:
    """The ``K`` models with the most votes and the voters with enough votes among them.

    Raises:
        RankingError: fewer than 2 models, or fewer than `MIN_VOTERS` voters kept.
    """
    full = log.battles
    models = top_models(full, settings.models)
    if models.size < settings.models:
        notes.append(
            f"the log has only {models.size} models after the row checks, so the world has "
            f"K = {models.size} personas (asked for {settings.models})"
        )
    counts = np.bincount(full.a, minlength=full.n_models) + np.bincount(
        full.b, minlength=full.n_models
    )
    battles, kept = among_models(full, models)
    votes = battles.votes_per_user()
    voters = np.flatnonzero(votes >= settings.min_votes)
    if voters.size < MIN_VOTERS:
        raise RankingError(
            f"{full.source}: {voters.size} voter(s) cast at least {settings.min_votes} votes "
            f"among the {models.size} models with the most votes; a world needs at least "
            f"{MIN_VOTERS} (the most active cast {int(votes.max(initial=0))}); lower "
            "--min-votes, or raise --models"
        )
    return Selection(
        battles=battles,
        category=log.category[kept],
        models=models,
        model_votes=counts[models],
        voters=voters,
        dropped=int(np.sum((votes > 0) & (votes < settings.min_votes))),
        votes=votes[voters],
    )


__all__ = ["MIN_VOTERS", "Selection", "select"]
