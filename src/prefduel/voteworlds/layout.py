"""Which voter arrives when, and which of their votes each round replays.

Arrivals are the kept voters: each once in a seeded random order, a seeded sample of them when
fewer arrivals are asked for, or each several times (in balanced random order: every voter
``floor(N / V)`` or one more times) when more are. Each arrival's ``S`` rounds are ``S`` of
its voter's own votes among the world's models, in a seeded random order; a voter with fewer
than ``S`` votes goes through them again in a new order, so every arrival has the same ``S``.
A round's question is the vote's prompt and category.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prefduel.core.rng import stream
from prefduel.ranking.battles import Battles

#: Arrivals of a world when none are asked for: every kept voter once, at most this many.
DEFAULT_MAX_ARRIVALS = 2000
#: Rounds per arrival when none are asked for (fewer when the median kept voter has fewer).
DEFAULT_ROUNDS = 24


@dataclass(frozen=True)
class Layout:
    """The arrivals of a world (``N`` arrivals, ``S`` rounds).

    Attributes:
        voter: ``(N,)`` the voter of each arrival (position in the kept voters).
        rows: ``(N, S)`` the battle each round replays (index into the battles).
    """

    voter: np.ndarray
    rows: np.ndarray


def default_rounds(votes: np.ndarray) -> int:
    """`DEFAULT_ROUNDS`, or the median number of votes of the kept voters when it is fewer."""
    return int(min(DEFAULT_ROUNDS, max(1, int(np.median(votes)))))


def default_arrivals(n_voters: int) -> int:
    """Every kept voter once, at most `DEFAULT_MAX_ARRIVALS`."""
    return min(n_voters, DEFAULT_MAX_ARRIVALS)


def arrival_layout(
    battles: Battles, voters: np.ndarray, *, arrivals: int, rounds: int, seed: int
) -> Layout:
    """Lay out the arrivals and their rounds (see the module docstring).

    Args:
        battles: The battles among the world's models.
        voters: ``(V,)`` the kept voters (indices into ``battles.users``), each with a vote.
        arrivals: ``N``.
        rounds: ``S``.
        seed: Seed of ``stream(seed, "votes-world", "layout")``.
    """
    rng = stream(seed, "votes-world", "layout")
    n_voters = voters.size
    if arrivals <= n_voters:
        voter = rng.choice(n_voters, arrivals, replace=False)
    else:
        extra = rng.choice(n_voters, arrivals % n_voters, replace=False)
        every = np.repeat(np.arange(n_voters), arrivals // n_voters)
        voter = rng.permutation(np.concatenate([every, extra]))
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[voters] = np.arange(n_voters)
    mine = np.flatnonzero(slot[battles.user] >= 0)
    order = mine[np.argsort(slot[battles.user[mine]], kind="stable")]
    starts = np.searchsorted(slot[battles.user[order]], np.arange(n_voters + 1))
    rows = np.empty((arrivals, rounds), dtype=np.int64)
    for n, v in enumerate(voter.tolist()):
        own = order[starts[v] : starts[v + 1]]
        passes = -(-rounds // own.size)
        picks = np.concatenate([rng.permutation(own.size) for _ in range(passes)])
        rows[n] = own[picks[:rounds]]
    return Layout(voter=voter.astype(np.int64), rows=rows)


__all__ = [
    "DEFAULT_MAX_ARRIVALS",
    "DEFAULT_ROUNDS",
    "Layout",
    "arrival_layout",
    "default_arrivals",
    "default_rounds",
]
