"""Empirical-Bayes hierarchical Thompson sampling (``hier-ts-eb``): ``hier-ts`` that also learns
the within-population prior covariance ``Sigma0`` from completed users.

``hier-ts`` and ``meta-ts`` learn only the shared prior *mean*; ``Sigma0`` stays at
``prior_var I``, as wide as ``notransfer``'s prior, so a re-centred prior can never be much more
confident than learning each user alone. ``hier-ts-eb`` lets the roster make the prior narrow
(or wide, or tilted), which is what a population model that shrinks users confidently towards
the others does; comparing it with ``hier-ts`` and ``notransfer`` tests whether confident
shrinkage is what makes sharing hurt on a roster.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from prefduel.policies.base import Positive
from prefduel.policies.baselines.thompson import HierTS
from prefduel.policies.loading import POLICIES


def batch_marginal_summary(
    lams: np.ndarray,
    hs: np.ndarray,
    prior_prec: np.ndarray,
    post_cov: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sum over users of `marginal_summary`: what ``n`` users' clicks say about the shared mean.

    Args:
        lams: ``(n, d, d)`` each user's likelihood precision.
        hs: ``(n, d)`` each user's likelihood information.
        prior_prec: ``Sigma0^{-1}`` ``(d, d)``.
        post_cov: ``(n, d, d)`` ``(Sigma0^{-1} + lam_u)^{-1}`` if already known.

    Returns:
        ``(P (d, d), p (d,))``: summed precision and information about the shared mean.
    """
    if lams.shape[0] == 0:
        return np.zeros_like(prior_prec), np.zeros(prior_prec.shape[0])
    if post_cov is None:
        post_cov = np.linalg.inv(prior_prec[None] + lams)
    lam_cov = lams @ post_cov
    prec = (lams - lam_cov @ lams).sum(axis=0)
    info = (hs - np.einsum("nde,ne->nd", lam_cov, hs)).sum(axis=0)
    return 0.5 * (prec + prec.T), info


def eb_covariance(
    lams: np.ndarray,
    hs: np.ndarray,
    prior_prec: np.ndarray,
    mean: np.ndarray,
    prior_var: float,
    users: float,
    floor: float,
    post_cov: np.ndarray | None = None,
) -> np.ndarray:
    """One empirical-Bayes estimate of the within-population covariance ``Sigma0``.

    Each completed user u's posterior under the current prior ``N(mean, Sigma0)`` is
    ``Sigma_u = (Sigma0^{-1} + lam_u)^{-1}``, ``mu_u = Sigma_u (Sigma0^{-1} mean + h_u)``. By
    the law of total variance the population covariance is the covariance of the posterior
    means plus the mean posterior covariance:

        ``S = (1/n) sum_u (mu_u - mu_bar)(mu_u - mu_bar)^T + (1/n) sum_u Sigma_u``

    (one EM step for ``Sigma0`` in the Gaussian hierarchical model, with ``mu_bar`` the average
    posterior mean). It is shrunk towards ``prior_var I`` as if ``users`` pseudo-users had
    that covariance, ``(n S + users prior_var I) / (n + users)``, and every eigenvalue is
    raised to at least ``floor * prior_var``, so the estimate stays positive definite.

    Args:
        lams: ``(n, d, d)`` each user's likelihood precision (``n >= 1``).
        hs: ``(n, d)`` each user's likelihood information.
        prior_prec: Current ``Sigma0^{-1}`` ``(d, d)``.
        mean: Current estimate of the shared mean ``(d,)``.
        prior_var: Variance of the isotropic target of the shrinkage.
        users: Pseudo-users of the shrinkage (> 0).
        floor: Smallest eigenvalue as a fraction of ``prior_var`` (> 0).
        post_cov: ``(n, d, d)`` the users' ``Sigma_u`` under the current prior, if known.

    Returns:
        The new ``Sigma0`` ``(d, d)``, symmetric positive definite.
    """
    n, d = hs.shape
    if post_cov is None:
        post_cov = np.linalg.inv(prior_prec[None] + lams)
    mus = np.einsum("nde,ne->nd", post_cov, prior_prec @ mean + hs)
    centred = mus - mus.mean(axis=0)
    moment = centred.T @ centred / n + post_cov.mean(axis=0)
    shrunk = (n * moment + users * prior_var * np.eye(d)) / (n + users)
    values, vectors = np.linalg.eigh(0.5 * (shrunk + shrunk.T))
    values = np.maximum(values, floor * prior_var)
    return (vectors * values) @ vectors.T


@POLICIES.register("hier-ts-eb")
class HierTSEB(HierTS):
    """``hier-ts`` with an empirical-Bayes prior covariance (our extension of Hong, Kveton,
    Zaheer & Ghavamzadeh, "Hierarchical Bayesian Bandits", AISTATS 2022, whose model takes
    ``Sigma0`` as known).

    Model, selection and per-click update as ``hier-ts``, with the within-population covariance
    ``Sigma0`` in place of ``prior_var I``. ``Sigma0`` starts at ``prior_var I`` and changes only
    between users: when a user leaves, their Laplace likelihood summary ``(lam_u, h_u)`` is
    kept; ``Sigma0`` is re-estimated from all completed users by `eb_covariance` (the
    covariance of their posterior means plus their mean posterior covariance, shrunk towards
    ``prior_var I`` by ``eb_users`` pseudo-users, eigenvalues floored at
    ``eb_floor * prior_var``), centring the users' posteriors on the shared mean's current
    posterior mean; then the shared mean's posterior is rebuilt from every completed user's
    marginal summary under the new ``Sigma0`` (`batch_marginal_summary`). Each arrival is one
    EM step warm-started from the last, so the estimate follows the roster as it grows. The
    users' summaries are those of the online Laplace learner, which understates strong
    preferences (a logistic likelihood flattens once clicks are nearly certain), so on a widely
    spread roster the estimate stays below the true spread; on a tight one it narrows.

    Cost per arrival O(n d^3) for n completed users (batched 7 x 7 inversions); per round as
    ``hier-ts``.

    Args:
        prior_var: Starting within-population variance, and the shrinkage target (default 1.0).
        meta_var: Prior variance of the shared mean (default 0.5, as the tuned ``hier-ts``).
        rule: ``ts`` | ``dts`` | ``greedy`` (default ``greedy``, as the tuned ``hier-ts``;
            ``ts`` is the paper's in-task learner).
        draws: Maximum second draws of the ``dts`` rule (default 10).
        eb_users: Pseudo-users of the shrinkage towards ``prior_var I`` (default 10; not tuned).
        eb_floor: Smallest eigenvalue of ``Sigma0`` as a fraction of ``prior_var`` (default
            0.01, i.e. a prior s.d. of at least 0.1 of ``notransfer``'s; not tuned).
    """

    name = "hier-ts-eb"
    SETTINGS: ClassVar[dict[str, Any]] = {"eb_users": Positive, "eb_floor": Positive}

    def __init__(
        self,
        prior_var: float = 1.0,
        meta_var: float = 0.5,
        rule: str = "greedy",
        draws: int = 10,
        eb_users: float = 10.0,
        eb_floor: float = 0.01,
    ) -> None:
        super().__init__(prior_var=prior_var, meta_var=meta_var, rule=rule, draws=draws)
        self.configure(eb_users=eb_users, eb_floor=eb_floor)

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        n, d = max(int(context["N"]), 1), self.d
        # completed users' likelihood summaries (grown on demand past context["N"])
        self._lams = np.zeros((n, d, d))
        self._hs = np.zeros((n, d))
        self._done = 0
        # (Sigma0^{-1} + lam_u)^{-1} of the first users, and the Sigma0^{-1} it was made under
        self._post_covs: tuple[np.ndarray, np.ndarray] | None = None

    def likelihoods(self) -> tuple[np.ndarray, np.ndarray]:
        """The completed users' likelihood summaries ``(lams (n, d, d), hs (n, d))``."""
        return self._lams[: self._done], self._hs[: self._done]

    def end_student(self) -> None:
        lam, h = self._user_likelihood()
        if self._done == self._lams.shape[0]:
            self._lams = np.concatenate([self._lams, np.zeros_like(self._lams)])
            self._hs = np.concatenate([self._hs, np.zeros_like(self._hs)])
        self._lams[self._done], self._hs[self._done] = lam, h
        self._done += 1
        super().end_student()
        self._refit_prior()

    def _refit_prior(self) -> None:
        """Re-estimate ``Sigma0`` and rebuild the shared mean's posterior under it."""
        lams, hs = self.likelihoods()
        mean = self.meta_posterior()[0]
        cov = eb_covariance(
            lams,
            hs,
            self.prior_prec,
            mean,
            self.prior_var,
            self.eb_users,
            self.eb_floor,
            post_cov=self._posterior_covariances(lams),
        )
        self.prior_cov = cov
        self.prior_prec = np.linalg.inv(cov)
        self.prior_prec = 0.5 * (self.prior_prec + self.prior_prec.T)
        post_cov = np.linalg.inv(self.prior_prec[None] + lams)
        self._post_covs = (self.prior_prec, post_cov)
        prec, info = batch_marginal_summary(lams, hs, self.prior_prec, post_cov)
        self.meta_prec = np.eye(self.d) / self.meta_var + prec
        self.meta_info = info

    def _posterior_covariances(self, lams: np.ndarray) -> np.ndarray:
        """``(Sigma0^{-1} + lam_u)^{-1}`` of every user of ``lams`` under the current
        ``Sigma0``: the last refit inverted all but the newest under this same ``Sigma0``, so
        only the newest is inverted here (`numpy.linalg.inv` inverts each matrix of a stack
        on its own: the same bits as inverting the whole stack again)."""
        if self._post_covs is None or self._post_covs[0] is not self.prior_prec:
            return np.linalg.inv(self.prior_prec[None] + lams)
        kept = self._post_covs[1]
        new = np.linalg.inv(self.prior_prec[None] + lams[kept.shape[0] :])
        return np.concatenate([kept, new])
