"""Per-user contextual linear dueling bandits with confidence widths from a Laplace posterior:
CoLSTIM-style, MaxInP and the optimistic pair rule MaxPair-UCB.

All three learn each user alone (like ``notransfer``): the belief ``N(mu, Sigma)`` over the
user's theta restarts at ``N(0, prior_var I)`` at each arrival and takes one Laplace step per
click. ``Sigma`` plays the role of the design-matrix inverse ``V^{-1}`` of the papers, so the
confidence width of a pair is ``||phi_i - phi_j||_Sigma`` (see `pair_widths`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np

from prefduel.policies.base import NonNegative
from prefduel.policies.baselines._common import (
    Radius,
    UserLaplacePolicy,
    argmax_pair_inplace,
    pair_widths,
    resolve_radius,
)
from prefduel.policies.loading import POLICIES

_JITTER = 1e-9  # a vanishing random jitter breaks exact ties (e.g. the all-zero prior mean)


# ------------------------------------------------------------------------------ pure rules


def colstim_pair(
    Phi: np.ndarray, mu: np.ndarray, sigma: np.ndarray, noise: np.ndarray, c: float
) -> tuple[int, int]:
    """CoLSTIM's pair for given perturbations (pure function).

    Args:
        Phi: Features ``(K, d)``.
        mu: Posterior mean ``(d,)``.
        sigma: Posterior covariance ``(d, d)``.
        noise: Perturbations ``(K,)`` (already scaled) added to the utilities of the first arm.
        c: Multiplier of the confidence width for the competitor.

    Returns:
        ``(i, j)`` with ``i = argmax_k phi_k.mu + noise_k`` and
        ``j = argmax_{k != i} phi_k.mu + c ||phi_k - phi_i||_Sigma``.
    """
    util = Phi.dot(mu)
    i = int((util + noise).argmax())
    z = Phi - Phi[i]
    width = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", z, sigma, z), 0.0))
    opt = util + c * width
    opt[i] = -np.inf
    return i, int(opt.argmax())


def maxinp_candidates(
    Phi: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    beta: float,
    widths: np.ndarray | None = None,
) -> np.ndarray:
    """MaxInP's candidate set: personas not confidently beaten by any other (pure function).

    ``widths`` is `pair_widths` ``(Phi, sigma)`` when the caller has it already.

    Returns:
        Boolean mask ``(K,)``: ``C[i] = all_j (phi_i - phi_j).mu + beta ||phi_i - phi_j||_Sigma
        >= 0``. The posterior-mean best persona is always a candidate.
    """
    util = Phi.dot(mu)
    if widths is None:
        widths = pair_widths(Phi, sigma)
    upper = util[:, None] - util[None, :] + beta * widths
    return (upper >= 0.0).all(axis=1)


def maxinp_pair(
    Phi: np.ndarray, mu: np.ndarray, sigma: np.ndarray, beta: float, util_jitter: np.ndarray
) -> tuple[int, int]:
    """MaxInP's pair (pure function): the most uncertain pair inside the candidate set.

    With two or more candidates, ``argmax_{i != j in C} ||phi_i - phi_j||_Sigma``; with one
    candidate i, the pair is i and the best other persona under the mean (exploitation).
    ``util_jitter`` ``(K,)`` is added to the mean utilities to break exact ties.
    """
    widths = pair_widths(Phi, sigma)
    cand = maxinp_candidates(Phi, mu, sigma, beta, widths)
    util = Phi.dot(mu) + util_jitter
    if np.count_nonzero(cand) >= 2:
        # the widths are not read again: jittered and masked in place
        widths += util_jitter[:, None]
        widths += util_jitter[None, :]
        out = ~cand
        widths[out, :] = -np.inf
        widths[:, out] = -np.inf
        return argmax_pair_inplace(widths)
    i = int(np.where(cand, util, -np.inf).argmax())
    rest = util.copy()
    rest[i] = -np.inf
    return i, int(rest.argmax())


def maxpair_scores(Phi: np.ndarray, mu: np.ndarray, sigma: np.ndarray, beta: float) -> np.ndarray:
    """Optimistic pair scores ``(K, K)``: ``u_i + u_j + beta ||phi_i - phi_j||_Sigma`` with
    ``u = Phi mu`` (the diagonal is meaningless)."""
    util = Phi.dot(mu)
    scores = util[:, None] + util[None, :]
    widths = pair_widths(Phi, sigma)
    widths *= beta
    scores += widths  # (u_i + u_j) + beta width, as written out of place
    return scores


# ------------------------------------------------------------------------------ policies


@POLICIES.register("colstim")
class CoLSTIM(UserLaplacePolicy):
    """CoLSTIM-style (Bengs, Saha & Hüllermeier, "Stochastic Contextual Dueling Bandits under
    Linear Stochastic Transitivity Models", ICML 2022), per user.

    Selection: the first persona maximizes a perturbed utility,
    ``i = argmax_k phi_k.mu + noise_k`` with ``eps_k`` i.i.d. standard Gumbel (the
    perturbation whose differences are logistic, matching the logistic link); with
    ``perturb=fixed`` (the tuned form) ``noise_k = scale * eps_k``, not truncated; with
    ``perturb=width`` (the paper's form) ``noise_k = scale * clip(eps_k, -threshold,
    threshold) * ||phi_k||_Sigma``. The second is the optimistic toughest competitor,
    ``j = argmax_{k != i} phi_k.mu + c ||phi_k - phi_i||_Sigma``. The paper's MLE and
    ``V^{-1}`` are replaced by the Laplace posterior mean and covariance.

    Update: one Laplace step on ``z = phi_i - phi_j`` (prior restarts for every user).

    Args:
        c: Width multiplier for the competitor (default 0.5, tuned on ``dev``; ``theory`` =
            ``sqrt(d ln S)``, `theory_radius` over one user's S rounds).
        scale: Scale of the Gumbel perturbation of the first arm (default 0.1, tuned on
            ``dev``; 0 = greedy).
        prior_var: Prior variance of theta (default 1.0).
        perturb: ``fixed`` (default) or ``width`` (see Selection).
        threshold: Truncation of the Gumbel draws under ``perturb=width`` (default
            ``theory``, as ``c``; unused under ``fixed``).
    """

    name = "colstim"
    SETTINGS: ClassVar[dict[str, Any]] = {
        "c": Radius,
        "scale": NonNegative,
        "perturb": Literal["fixed", "width"],
        "threshold": Radius,
    }

    def __init__(
        self,
        c: float | str = 0.5,
        scale: float = 0.1,
        prior_var: float = 1.0,
        perturb: str = "fixed",
        threshold: float | str = "theory",
    ) -> None:
        super().__init__(prior_var)
        self.configure(c=c, scale=scale, perturb=perturb, threshold=threshold)

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        horizon = int(context["S"])  # each user is a fresh problem of S rounds
        self._c = resolve_radius(self.c, self.d, horizon)
        self._threshold = resolve_radius(self.threshold, self.d, horizon)

    def _choose(self, Phi: np.ndarray) -> tuple[int, int]:
        eps = self.rng.gumbel(size=self.K)
        if self.perturb == "width":
            own = np.einsum("kd,de,ke->k", Phi, self.belief.sigma, Phi)
            eps = eps.clip(-self._threshold, self._threshold) * np.sqrt(np.maximum(own, 0.0))
        noise = self.scale * eps + _JITTER * self.rng.random(self.K)
        return colstim_pair(Phi, self.belief.mu, self.belief.sigma, noise, self._c)


@POLICIES.register("maxinp")
class MaxInP(UserLaplacePolicy):
    """MaxInP (Saha, "Optimal Algorithms for Stochastic Contextual Preference Bandits",
    NeurIPS 2021), per user.

    Selection: the candidate set keeps the personas that no other persona beats with
    confidence, ``C = {i : (phi_i - phi_j).mu + beta ||phi_i - phi_j||_Sigma >= 0 for all j}``
    (`maxinp_candidates`); the shown pair is the maximum-informative pair inside it,
    ``argmax_{i != j in C} ||phi_i - phi_j||_Sigma``. When C has one persona (the paper would
    then play it against itself) it is shown with the best other persona under the mean.

    Update: one Laplace step on ``z = phi_i - phi_j`` (prior restarts for every user).

    Args:
        beta: Confidence multiplier of the candidate set (default 0.25, tuned on ``dev``;
            ``theory`` = ``sqrt(d ln S)``, `theory_radius` over one user's S rounds).
        prior_var: Prior variance of theta (default 1.0).
    """

    name = "maxinp"
    SETTINGS: ClassVar[dict[str, Any]] = {"beta": Radius}

    def __init__(self, beta: float | str = 0.25, prior_var: float = 1.0) -> None:
        super().__init__(prior_var)
        self.configure(beta=beta)

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        self._beta = resolve_radius(self.beta, self.d, int(context["S"]))

    def candidates(self, Phi: np.ndarray) -> np.ndarray:
        """The current candidate set for features ``Phi`` (K x d), as a boolean mask ``(K,)``."""
        return maxinp_candidates(
            np.asarray(Phi, float), self.belief.mu, self.belief.sigma, self._beta
        )

    def _choose(self, Phi: np.ndarray) -> tuple[int, int]:
        jitter = _JITTER * self.rng.random(self.K)
        return maxinp_pair(Phi, self.belief.mu, self.belief.sigma, self._beta, jitter)


@POLICIES.register("maxpair-ucb")
class MaxPairUCB(UserLaplacePolicy):
    """MaxPair-UCB, the optimistic pair rule for strong regret in linear dueling bandits (as in
    Di et al., "Variance-Aware Regret Bounds for Stochastic Contextual Dueling Bandits",
    ICLR 2024, and the arm selection of COLDB, Wang et al., ICML 2025), per user.

    Selection: ``argmax_{i != j} u_i + u_j + beta ||phi_i - phi_j||_Sigma`` with ``u = Phi mu``
    (`maxpair_scores`): both shown personas should be good, and the pair's difference
    should be uncertain.

    Update: one Laplace step on ``z = phi_i - phi_j`` (prior restarts for every user).

    Args:
        beta: Width multiplier (default 0.5, tuned on ``dev``; 0 = greedy top two).
        prior_var: Prior variance of theta (default 1.0).
    """

    name = "maxpair-ucb"
    SETTINGS: ClassVar[dict[str, Any]] = {"beta": NonNegative}

    def __init__(self, beta: float = 0.5, prior_var: float = 1.0) -> None:
        super().__init__(prior_var)
        self.configure(beta=beta)

    def _choose(self, Phi: np.ndarray) -> tuple[int, int]:
        scores = maxpair_scores(Phi, self.belief.mu, self.belief.sigma, self.beta)
        jitter = _JITTER * self.rng.random(self.K)
        scores += jitter[:, None]
        scores += jitter[None, :]
        return argmax_pair_inplace(scores)
