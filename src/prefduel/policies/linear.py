"""Linear Bayesian learners without transfer (``notransfer``) and with one shared model
(``pooled``)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np

from prefduel.core.btl import top_two
from prefduel.policies.base import Policy, Positive
from prefduel.policies.laplace import LaplaceBelief
from prefduel.policies.loading import POLICIES

RULES = ("greedy", "ts")


def top_pair(scores: np.ndarray) -> tuple[int, int]:
    """`prefduel.core.btl.top_two` of one row of float scores ``(K,)``, as Python ints: the
    index of the largest score and of the next one, ties to the lower index.

    Two argmaxes instead of a sort (a policy's pair every round); where the two could differ
    (a NaN, or no score but the largest above ``-inf``) it returns the sort's answer.
    """
    i = int(scores.argmax())
    rest = scores.copy()
    rest[i] = -np.inf
    j = int(rest.argmax())
    if j == i or scores[i] != scores[i]:
        best, second = top_two(scores)
        return int(best), int(second)
    return i, j


class _LaplaceLearner(Policy):
    """Bayesian logistic regression on clicks with a full-covariance Laplace posterior.

    Args:
        rule: ``"greedy"`` shows the top two personas under the posterior mean; ``"ts"``
            (Thompson sampling) the top two under one posterior draw per round.
        prior_var: Variance of the isotropic zero-mean prior on theta (logit units).
    """

    name = "laplace"
    resets_per_student = True
    SETTINGS: ClassVar[dict[str, Any]] = {
        "rule": Literal[RULES],
        "prior_var": Positive,
    }

    def __init__(self, rule: str = "greedy", prior_var: float = 1.0) -> None:
        self.configure(rule=rule, prior_var=prior_var)

    def reset(self, rng: np.random.Generator, context: dict) -> None:
        super().reset(rng, context)
        self.belief = LaplaceBelief.isotropic(self.d, self.prior_var)
        self._last: np.ndarray | None = None

    def start_student(self) -> None:
        if self.resets_per_student:
            self.belief = LaplaceBelief.isotropic(self.d, self.prior_var)

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        theta = self.belief.mu if self.rule == "greedy" else self.belief.sample(self.rng)
        # a vanishing random jitter breaks exact ties (e.g. the all-zero prior mean)
        # Phi.dot: Phi @ theta's BLAS call, cheaper to make (see policies.baselines._common)
        scores = Phi.dot(theta) + 1e-9 * self.rng.random(Phi.shape[0])
        i, j = top_pair(scores)
        self._last = Phi[i] - Phi[j]
        return i, j

    def update(self, outcome: int) -> None:
        if self._last is None:
            raise RuntimeError("update() called before select()")
        self.belief.observe(self._last, int(outcome))
        self._last = None


@POLICIES.register("notransfer")
class NoTransfer(_LaplaceLearner):
    """Learns each user alone: a fresh prior at every arrival, nothing shared across users.

    Settings: ``rule`` (``greedy`` | ``ts``, default ``greedy``), ``prior_var`` (default 1.0).
    """

    name = "notransfer"
    resets_per_student = True


@POLICIES.register("pooled")
class Pooled(_LaplaceLearner):
    """One shared model for all users: the posterior carries over from user to user.

    Settings: ``rule`` (``greedy`` | ``ts``, default ``greedy``), ``prior_var`` (default 1.0).
    """

    name = "pooled"
    resets_per_student = False
