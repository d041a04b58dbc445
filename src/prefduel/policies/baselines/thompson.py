"""Thompson-sampling baselines on Laplace posteriors: dueling TS per user (``dts-laplace``),
Meta-TS over the users' shared prior mean (``meta-ts``) and hierarchical TS (``hier-ts``).

The two population learners share one Gaussian model of the roster: each user's theta is
``N(mean, prior_var I)`` and the shared ``mean`` has the prior ``N(0, meta_var I)``. A user's
clicks enter the population's posterior through their Gaussian (Laplace) likelihood summary
with theta integrated out (`marginal_summary`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np

from prefduel.policies.base import Count, Policy, Positive
from prefduel.policies.baselines._common import (
    UserLaplacePolicy,
    gaussian_sample,
    marginal_summary,
)
from prefduel.policies.laplace import LaplaceBelief, cholesky_jitter
from prefduel.policies.linear import top_pair
from prefduel.policies.loading import POLICIES

RULES = ("ts", "dts", "greedy")
_JITTER = 1e-9  # a vanishing random jitter breaks exact ties (e.g. the all-zero prior mean)


def dueling_ts_pair(
    Phi: np.ndarray, draw: Callable[[], np.ndarray], jitter: np.ndarray, draws: int
) -> tuple[int, int]:
    """Double/self-sparring Thompson pair: the best persona under each of two posterior draws.

    Args:
        Phi: Features ``(K, d)``.
        draw: Returns one posterior draw of theta ``(d,)`` per call.
        jitter: ``(K,)`` tie-breaking noise added to every draw's utilities.
        draws: Maximum draws for the second persona; while a draw's best persona equals the
            first one, draw again; after ``draws`` draws, take the best *other* persona under
            the last draw.

    Returns:
        ``(i, j)``, two distinct indices.
    """
    i = int((Phi.dot(draw()) + jitter).argmax())
    for _ in range(draws):
        util = Phi.dot(draw()) + jitter
        j = int(util.argmax())
        if j != i:
            return i, j
    util[i] = -np.inf
    return i, int(util.argmax())


def _rule_pair(
    rule: str,
    Phi: np.ndarray,
    mean: Callable[[], np.ndarray],
    draw: Callable[[], np.ndarray],
    jitter: np.ndarray,
    draws: int,
) -> tuple[int, int]:
    if rule == "greedy":
        return top_pair(Phi.dot(mean()) + jitter)
    if rule == "ts":
        return top_pair(Phi.dot(draw()) + jitter)
    return dueling_ts_pair(Phi, draw, jitter, draws)


@POLICIES.register("dts-laplace")
class DuelingTSLaplace(UserLaplacePolicy):
    """Dueling Thompson sampling on a per-user Laplace posterior, self-sparring style (Sui,
    Zhuang, Burdick & Yue, "Multi-dueling Bandits with Dependent Arms", UAI 2017; Wu & Liu,
    "Double Thompson Sampling for Dueling Bandits", NeurIPS 2016; logistic Laplace posterior as
    in Chapelle & Li, NeurIPS 2011).

    Selection: two independent draws ``theta_1, theta_2 ~ N(mu, scale^2 Sigma)``; the first
    persona is ``argmax_k phi_k.theta_1``, the second ``argmax_k phi_k.theta_2``; while the two
    coincide, ``theta_2`` is redrawn (at most ``draws`` draws, then the best other persona
    under the last draw).

    Update: one Laplace step on ``z = phi_i - phi_j``; the prior ``N(0, prior_var I)``
    restarts for every user (no transfer).

    Args:
        scale: Posterior inflation of the draws (default 0.1, tuned on ``dev``).
        draws: Maximum draws for the second persona (default 10).
        prior_var: Prior variance of theta (default 1.0).
    """

    name = "dts-laplace"
    SETTINGS: ClassVar[dict[str, Any]] = {"scale": Positive, "draws": Count}

    def __init__(self, scale: float = 0.1, draws: int = 10, prior_var: float = 1.0) -> None:
        super().__init__(prior_var)
        self.configure(scale=scale, draws=draws)

    def _choose(self, Phi: np.ndarray) -> tuple[int, int]:
        mu, sigma = self.belief.mu, self.belief.sigma
        chol = np.linalg.cholesky(sigma + cholesky_jitter(self.d))
        rng, scale = self.rng, self.scale

        def draw() -> np.ndarray:
            return mu + scale * chol.dot(rng.standard_normal(mu.size))

        return dueling_ts_pair(Phi, draw, _JITTER * rng.random(self.K), self.draws)


class _SharedMeanPolicy(UserLaplacePolicy):
    """State shared by ``meta-ts`` and ``hier-ts``: the posterior of the users' shared mean,
    in information form (precision ``(d, d)``, information ``(d,)``), built from completed
    users' marginal likelihood summaries. Each user's belief starts at ``N(m, Sigma0)``
    (``Sigma0 = prior_var I``) with ``m`` from `_user_prior_mean`; clicks update it as in the
    per-user baselines."""

    name = "shared-mean"
    SETTINGS: ClassVar[dict[str, Any]] = {
        "meta_var": Positive,
        "rule": Literal[RULES],
        "draws": Count,
    }

    def __init__(
        self,
        prior_var: float = 1.0,
        meta_var: float = 1.0,
        rule: str = "ts",
        draws: int = 10,
    ) -> None:
        super().__init__(prior_var)
        self.configure(meta_var=meta_var, rule=rule, draws=draws)

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        # the first user's belief is built in start_student, once the shared mean is drawn
        Policy.reset(self, rng, context)
        eye = np.eye(self.d)
        self.prior_cov = self.prior_var * eye  # Sigma0 (hier-ts-eb re-estimates it)
        self.prior_prec = eye / self.prior_var  # Sigma0^{-1}
        self.meta_prec = eye / self.meta_var  # posterior precision of the shared mean
        self.meta_info = np.zeros(self.d)  # posterior information of the shared mean
        self.n_users = 0
        self._last: np.ndarray | None = None

    def meta_posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Posterior ``(mean (d,), cov (d, d))`` of the shared mean given completed users."""
        cov = np.linalg.inv(self.meta_prec)
        return cov @ self.meta_info, cov

    def _user_likelihood(self) -> tuple[np.ndarray, np.ndarray]:
        """The current user's clicks as a Gaussian likelihood of their theta, in information
        form ``(lam (d, d), h (d,))``: the Laplace posterior's minus the prior's."""
        post_prec = np.linalg.inv(self.belief.sigma)
        lam = post_prec - self.prior_prec
        h = post_prec.dot(self.belief.mu) - self.prior_prec.dot(self.user_prior_mean)
        return lam, h

    def _user_summary(self) -> tuple[np.ndarray, np.ndarray]:
        """Marginal summary ``(P, p)`` of the current user's clicks about the shared mean."""
        lam, h = self._user_likelihood()
        return marginal_summary(lam, h, self.prior_prec, self.belief.sigma)

    def _fresh_belief(self) -> LaplaceBelief:
        self.user_prior_mean = self._user_prior_mean()
        return LaplaceBelief(self.user_prior_mean, self.prior_cov.copy())

    def _user_prior_mean(self) -> np.ndarray:
        raise NotImplementedError

    def end_student(self) -> None:
        prec, info = self._user_summary()
        self.meta_prec = self.meta_prec + prec
        self.meta_info = self.meta_info + info
        self.n_users += 1


@POLICIES.register("meta-ts")
class MetaTS(_SharedMeanPolicy):
    """Meta-Thompson sampling (Kveton, Konobeev, Zaheer, Hsu, Mladenov, Boutilier &
    Szepesvari, "Meta-Thompson Sampling", ICML 2021) over the users' shared prior mean.

    Model: user theta ``~ N(mean, prior_var I)``, ``mean ~ N(0, meta_var I)``.

    Selection: at each arrival, one draw ``m ~ Q`` from the meta-posterior of the shared mean
    (given completed users only); the user's belief starts at ``N(m, prior_var I)``; every round
    the pair follows ``rule``: ``ts`` = top two under one posterior draw of theta (Thompson
    sampling, the paper's in-task learner), ``dts`` = best persona under each of two draws
    (`dueling_ts_pair`), ``greedy`` = top two under the posterior mean.

    Update: one Laplace step per click; when the user leaves, their Laplace likelihood summary
    (posterior precision and information minus the prior's) is turned into a Gaussian
    likelihood of the shared mean by integrating theta out (`marginal_summary`) and
    added to Q in information form (the paper's exact Gaussian meta-posterior update).

    Args:
        prior_var: Within-population variance of theta around the shared mean (default 1.0).
        meta_var: Prior variance of the shared mean (default 1.0).
        rule: ``ts`` | ``dts`` | ``greedy`` (default ``greedy``, tuned on ``dev``; ``ts`` is the
            paper's in-task learner).
        draws: Maximum second draws of the ``dts`` rule (default 10).
    """

    name = "meta-ts"

    def __init__(
        self, prior_var: float = 1.0, meta_var: float = 1.0, rule: str = "greedy", draws: int = 10
    ) -> None:
        super().__init__(prior_var=prior_var, meta_var=meta_var, rule=rule, draws=draws)

    def _user_prior_mean(self) -> np.ndarray:
        mean, cov = self.meta_posterior()
        return gaussian_sample(self.rng, mean, cov)

    def _choose(self, Phi: np.ndarray) -> tuple[int, int]:
        belief, rng = self.belief, self.rng
        jitter = _JITTER * rng.random(self.K)
        if self.rule == "greedy":
            return top_pair(Phi.dot(belief.mu) + jitter)
        chol = np.linalg.cholesky(belief.sigma + cholesky_jitter(self.d))

        def draw() -> np.ndarray:
            return belief.mu + chol.dot(rng.standard_normal(self.d))

        return _rule_pair(self.rule, Phi, lambda: belief.mu, draw, jitter, self.draws)


@POLICIES.register("hier-ts")
class HierTS(_SharedMeanPolicy):
    """Hierarchical Thompson sampling (Hong, Kveton, Zaheer & Ghavamzadeh, "Hierarchical
    Bayesian Bandits", AISTATS 2022) over the users' shared mean.

    Model: user theta ``~ N(mean, prior_var I)``, ``mean ~ N(0, meta_var I)``.

    Selection: every round, sample hierarchically: first the shared mean from its
    hyper-posterior given *all* clicks so far, completed users' and the current user's
    (``m ~ N`` with precision ``Q_prec + P_u``, information ``Q_info + p_u``), then theta from
    the user's Gaussian conditional given ``m`` and the user's clicks,
    ``theta ~ N(mu_u + Sigma_u Sigma0^{-1} (m - m0), Sigma_u)``, where ``N(mu_u, Sigma_u)`` is
    the user's Laplace posterior from the prior ``N(m0, Sigma0)`` and ``m0`` is the
    hyper-posterior mean at arrival. The pair follows ``rule`` on these draws (``ts``: top two
    of one draw; ``dts``: best of each of two draws; ``greedy``: top two of the hierarchical
    posterior mean of theta).

    Update: one Laplace step per click on the user's belief; when the user leaves, their
    marginal summary joins the hyper-posterior (as in ``meta-ts``).

    Args:
        prior_var: Within-population variance of theta around the shared mean (default 1.0).
        meta_var: Prior variance of the shared mean (default 0.5, tuned on ``dev``).
        rule: ``ts`` | ``dts`` | ``greedy`` (default ``greedy``, tuned on ``dev``; ``ts`` is the
            paper's in-task learner).
        draws: Maximum second draws of the ``dts`` rule (default 10).
    """

    name = "hier-ts"

    def __init__(
        self, prior_var: float = 1.0, meta_var: float = 0.5, rule: str = "greedy", draws: int = 10
    ) -> None:
        super().__init__(prior_var=prior_var, meta_var=meta_var, rule=rule, draws=draws)

    def _user_prior_mean(self) -> np.ndarray:
        return self.meta_posterior()[0]

    def hyper_posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Posterior ``(mean (d,), cov (d, d))`` of the shared mean given all clicks so far."""
        prec, info = self._user_summary()
        cov = np.linalg.inv(self.meta_prec + prec)
        cov = 0.5 * (cov + cov.T)
        return cov.dot(self.meta_info + info), cov

    def user_posterior_mean(self) -> np.ndarray:
        """Posterior mean ``(d,)`` of the current user's theta under the hierarchical model
        (the shared mean integrated out), ``mu_u + Sigma_u Sigma0^{-1} (E[mean] - m0)``."""
        gain = self.belief.sigma.dot(self.prior_prec)
        return self.belief.mu + gain.dot(self.hyper_posterior()[0] - self.user_prior_mean)

    def _choose(self, Phi: np.ndarray) -> tuple[int, int]:
        belief, rng = self.belief, self.rng
        jitter = _JITTER * rng.random(self.K)
        if self.rule == "greedy":
            return top_pair(Phi.dot(self.user_posterior_mean()) + jitter)
        hyper_mean, hyper_cov = self.hyper_posterior()
        gain = belief.sigma.dot(self.prior_prec)  # Sigma_u Sigma0^{-1}
        offset = belief.mu - gain.dot(self.user_prior_mean)

        def mean() -> np.ndarray:
            return offset + gain.dot(hyper_mean)

        hyper_chol = np.linalg.cholesky(hyper_cov + cholesky_jitter(self.d))
        chol = np.linalg.cholesky(belief.sigma + cholesky_jitter(self.d))

        def draw() -> np.ndarray:
            m = hyper_mean + hyper_chol.dot(rng.standard_normal(self.d))
            return offset + gain.dot(m) + chol.dot(rng.standard_normal(self.d))

        return _rule_pair(self.rule, Phi, mean, draw, jitter, self.draws)
