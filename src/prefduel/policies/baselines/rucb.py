"""RUCB: Relative Upper Confidence Bound, a non-contextual dueling bandit pooled over users."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from prefduel.policies.base import Policy, Positive
from prefduel.policies.loading import POLICIES


def rucb_ucb(wins: np.ndarray, t: int, alpha: float) -> np.ndarray:
    """RUCB's optimistic preference matrix (pure function).

    Args:
        wins: ``(K, K)`` win counts, ``wins[i, j]`` = times i beat j.
        t: Time step (1-based count of comparisons including the current one).
        alpha: Exploration parameter (the paper's alpha > 1/2).

    Returns:
        ``(K, K)`` matrix ``U = W / (W + W^T) + sqrt(alpha ln t / (W + W^T))`` with ``x / 0 := 1``
        for unplayed pairs and ``U_ii = 1/2``.
    """
    n = wins + wins.T
    with np.errstate(divide="ignore", invalid="ignore"):
        u = wins / n + np.sqrt(alpha * math.log(max(t, 1)) / n)
    u[n == 0] = 1.0
    u.flat[:: u.shape[0] + 1] = 0.5  # the diagonal
    return u


@POLICIES.register("rucb")
class RUCB(Policy):
    """RUCB (Zoghi, Whiteson, Munos & de Rijke, "Relative Upper Confidence Bound for the K-Armed
    Dueling Bandit Problem", ICML 2014), non-contextual and pooled over all users.

    The features ``Phi`` are ignored; one win matrix ``W`` (K x K) is shared by every user and
    never reset between arrivals, so RUCB learns the roster's pooled Condorcet winner.

    Selection at comparison t (counted over all users): ``U = rucb_ucb(W, t, alpha)``; the
    candidate set ``C = {c : U[c, j] >= 1/2 for all j}``; if C is empty, c is uniform over all
    personas; the hypothesized best set ``B <- B & C`` (``B <- C`` when ``|C| = 1``); c is drawn
    from C with probability 1/2 on B's member and the rest spread evenly over ``C \\ B``; the
    challenger is ``d = argmax_{j != c} U[j, c]`` (ties at random). The paper lets ``d = c``
    when c beats everyone optimistically; the protocol needs two distinct personas, so d is the
    strongest other persona.

    Update: ``W[winner, loser] += 1``.

    Args:
        alpha: Exploration parameter (default 0.1, tuned on ``dev``; the paper used 0.51).
    """

    name = "rucb"
    SETTINGS: ClassVar[dict[str, Any]] = {"alpha": Positive}

    def __init__(self, alpha: float = 0.1) -> None:
        self.configure(alpha=alpha)

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        self.wins = np.zeros((self.K, self.K))
        self.best: set[int] = set()
        self.t = 0
        self._last: tuple[int, int] | None = None

    def ucb_matrix(self) -> np.ndarray:
        """The current optimistic preference matrix ``(K, K)`` (for the next comparison)."""
        return rucb_ucb(self.wins, self.t + 1, self.alpha)

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        k = self.K
        u = self.ucb_matrix()
        cands = np.flatnonzero((u >= 0.5).all(axis=1)).tolist()  # ascending, as Python ints
        if not cands:
            c = int(self.rng.integers(k))
        else:
            self.best &= set(cands)
            if len(cands) == 1:
                self.best = {cands[0]}
                c = cands[0]
            else:
                probs = np.empty(len(cands))
                n_best = len(self.best)
                rest = len(cands) - n_best
                for a, cand in enumerate(cands):
                    if cand in self.best:
                        probs[a] = 0.5
                    else:
                        probs[a] = 1.0 / (2.0**n_best * rest)
                c = cands[int(self.rng.choice(len(cands), p=probs / probs.sum()))]
        col = u[:, c] + 1e-12 * self.rng.random(k)  # random tie-breaking
        col[c] = -np.inf
        d = int(col.argmax())
        self._last = (c, d)
        return c, d

    def update(self, outcome: int) -> None:
        if self._last is None:
            raise RuntimeError("rucb: update() called before select()")
        c, d = self._last
        if int(outcome) == 1:
            self.wins[c, d] += 1
        else:
            self.wins[d, c] += 1
        self.t += 1
        self._last = None
