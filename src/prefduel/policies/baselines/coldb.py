"""COLDB: online clustering of linear dueling bandits (a CLUB-style graph over users)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from prefduel.core import jit
from prefduel.core.btl import sigmoid
from prefduel.policies.base import NonNegative, NonNegativeCount, Policy, Positive
from prefduel.policies.baselines._common import Radius, argmax_pair_inplace, resolve_radius
from prefduel.policies.baselines.linear_duel import maxpair_scores
from prefduel.policies.laplace import LaplaceBelief
from prefduel.policies.loading import POLICIES

_JITTER = 1e-9


def club_width(t: np.ndarray | float) -> np.ndarray:
    """CLUB's confidence radius of an estimate from ``t`` clicks,
    ``sqrt((1 + ln(1 + t)) / (1 + t))`` (Gentile, Li & Zappella, ICML 2014)."""
    t = np.asarray(t, dtype=float)
    return np.sqrt((1.0 + np.log1p(t)) / (1.0 + t))


@jit.compiled()
def fold_components(prec, info, lam_rows, h_rows, comps, subtract):  # pragma: no cover - compiled
    """Add (``subtract`` False) or subtract the components ``comps`` (in that order) of
    ``lam_rows (L, d, d)`` and ``h_rows (L, d)`` to ``prec (d, d)`` and ``info (d,)``, in place.

    Each entry takes the same additions in the same order as numpy's in-place ``prec +=
    lam_rows[c]`` one component at a time, so the sums are the same to the bit; compiled, it
    saves a pair of small-array calls per component (a cluster can hold hundreds).
    """
    d = info.shape[0]
    for c in comps:
        for i in range(d):
            for j in range(d):
                if subtract:
                    prec[i, j] -= lam_rows[c, i, j]
                else:
                    prec[i, j] += lam_rows[c, i, j]
            if subtract:
                info[i] -= h_rows[c, i]
            else:
                info[i] += h_rows[c, i]


def logistic_map(
    z: np.ndarray, y: np.ndarray, prior_var: float, start: np.ndarray, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps towards the MAP of ridge logistic regression on pooled clicks.

    Args:
        z: ``(n, d)`` click features (first minus second).
        y: ``(n,)`` outcomes (1 = first won).
        prior_var: Variance of the zero-mean isotropic prior (ridge ``1 / prior_var``).
        start: ``(d,)`` warm start.
        steps: Newton steps (0 keeps ``start``).

    Returns:
        ``(theta (d,), lam (d, d))``: the estimate and the likelihood's Hessian (Fisher
        information of the clicks, without the prior) at it.
    """
    d = z.shape[1]
    ridge = np.eye(d) / prior_var
    theta = np.array(start, dtype=float)
    for _ in range(steps + 1):
        p = sigmoid(z @ theta)
        lam = (z * (p * (1.0 - p))[:, None]).T @ z
        if _ == steps:
            break
        grad = z.T @ (y - p) - ridge @ theta
        theta = theta + np.linalg.solve(lam + ridge, grad)
    return theta, 0.5 * (lam + lam.T)


@POLICIES.register("coldb")
class COLDB(Policy):
    """COLDB-style online clustering of linear dueling bandits (Wang, Sun, Kong, Xie, Hu, Lui &
    Dai, "Online Clustering of Dueling Bandits", ICML 2025), with the CLUB graph of Gentile,
    Li & Zappella (ICML 2014) over users (every arrival is a node).

    State: each user's own estimate ``theta_u`` (Laplace posterior mean of their own clicks
    under ``N(0, prior_var I)``) and click count ``T_u``; an undirected graph over users, with
    each new user joined to every earlier user; the connected components of the completed
    users, each with a pooled logistic estimate in Gaussian form (likelihood precision and
    information; a ridge-logistic MAP on all its users' clicks, warm-started from the sum of
    its members' Laplace summaries and refined by ``refit`` Newton steps at ``end_student``).

    Edges: after every click of user u, the edge (u, v) to an earlier user is cut when
    ``||theta_u - theta_v|| > threshold * (f(T_u) + f(T_v))`` with the CLUB radius
    ``f(T) = sqrt((1 + ln(1 + T)) / (1 + T))``. Cut edges stay cut.

    Cluster estimate: the user's cluster is u plus every component still joined to u by an
    edge; its belief starts (at arrival) from the sum of those components' summaries and the
    prior, takes a Laplace step per click of u, and loses a component's summary (exactly, in
    information form) when u's last edge into it is cut.

    Selection (COLDB's arm rule): ``argmax_{i != j} u_i + u_j + beta ||phi_i - phi_j||_Sigma``
    with ``u = Phi mu`` under the cluster belief ``N(mu, Sigma)``.

    Cost per round O(n d + d^2) for n earlier users; per arrival O(n d^2) plus ``refit``
    Newton steps on the merged component's clicks.

    Args:
        threshold: Multiplier of the CLUB radius in the edge test (default 0.5, tuned on
            ``dev``; on ``dev``
            larger values join almost every user into one component, smaller ones almost none).
        beta: Width multiplier of the pair rule (default 0.5, tuned on ``dev``; ``theory`` =
            ``sqrt(d ln(N S))``, `theory_radius` over all the run's rounds, since a cluster's
            estimate pools users).
        prior_var: Prior variance of theta (default 1.0).
        refit: Newton steps of the pooled logistic fit per arrival (default 2; 0 = sum of
            the members' Laplace summaries only).
    """

    name = "coldb"
    SETTINGS: ClassVar[dict[str, Any]] = {
        "threshold": NonNegative,
        "beta": Radius,
        "prior_var": Positive,
        "refit": NonNegativeCount,
    }

    def __init__(
        self,
        threshold: float = 0.5,
        beta: float | str = 0.5,
        prior_var: float = 1.0,
        refit: int = 2,
    ) -> None:
        self.configure(threshold=threshold, beta=beta, prior_var=prior_var, refit=refit)

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        n, s, d = max(int(context["N"]), 1), max(int(context["S"]), 1), self.d
        self._beta = resolve_radius(self.beta, d, n * s)
        self.ridge = np.eye(d) / self.prior_var
        # completed users (grown on demand if more arrive than context["N"] announced)
        self.theta = np.zeros((n, d))  # own estimates
        self.count = np.zeros(n)  # clicks per user
        self.radius = np.zeros(n)  # CLUB radius f(count) per user
        self.z = np.zeros((n, s, d))  # clicks, padded with zero rows (no-ops in the fit)
        self.y = np.zeros((n, s))
        self.label = np.zeros(n, dtype=np.int64)  # component of each completed user
        # each component's likelihood precision and information, by label (one per arrival)
        self._lam_rows = np.zeros((n, d, d))
        self._h_rows = np.zeros((n, d))
        self.comp_lam: dict[int, np.ndarray] = {}  # live component -> its row of _lam_rows
        self.comp_h: dict[int, np.ndarray] = {}  # live component -> its row of _h_rows
        self.n_done = 0
        self._next_label = 0
        self._last: np.ndarray | None = None

    def start_student(self) -> None:
        n = self.n_done
        self.own = LaplaceBelief.isotropic(self.d, self.prior_var)
        self.linked = np.ones(n, dtype=bool)  # CLUB: a new node is joined to everyone
        self.linked_comps = set(self.comp_lam)  # the live components
        self.link_count = np.bincount(self.label[:n], minlength=self._next_label)
        prec, info = self.ridge.copy(), np.zeros(self.d)
        self._fold(prec, info, self.linked_comps, subtract=False)
        cov = np.linalg.inv(prec)
        self.cluster = LaplaceBelief(cov @ info, 0.5 * (cov + cov.T))
        self.s_z: list[np.ndarray] = []
        self.s_y: list[int] = []
        self._last = None
        self._cut_edges()

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        phi = np.asarray(Phi, dtype=float)
        scores = maxpair_scores(phi, self.cluster.mu, self.cluster.sigma, self._beta)
        jitter = _JITTER * self.rng.random(self.K)
        scores += jitter[:, None]  # (scores + jitter_i) + jitter_j, in place
        scores += jitter[None, :]
        i, j = argmax_pair_inplace(scores)
        self._last = phi[i] - phi[j]
        return i, j

    def update(self, outcome: int) -> None:
        if self._last is None:
            raise RuntimeError("coldb: update() called before select()")
        z, y = self._last, int(outcome)
        self.own.observe(z, y)
        self.cluster.observe(z, y)
        self.s_z.append(z)
        self.s_y.append(y)
        self._last = None
        self._cut_edges()

    def end_student(self) -> None:
        u = self.n_done
        self._grow(u + 1, len(self.s_z))
        t = len(self.s_z)
        self.theta[u] = self.own.mu
        self.count[u] = t
        self.radius[u] = club_width(t)
        if t:
            self.z[u, :t] = np.asarray(self.s_z)
            self.y[u, :t] = self.s_y
        # the user's own Laplace likelihood summary (own prior: zero mean, ridge I / prior_var)
        own_prec = np.linalg.inv(self.own.sigma)
        lam = own_prec - self.ridge
        h = own_prec @ self.own.mu
        # merge u with every component it is still joined to
        for c in self.linked_comps:
            lam = lam + self.comp_lam.pop(c)
            h = h + self.comp_h.pop(c)
        new = self._next_label
        self._next_label += 1
        members = np.zeros(u + 1, dtype=bool)
        members[u] = True
        if self.linked_comps:
            members[:u] = np.isin(self.label[:u], list(self.linked_comps))
        self.label[: u + 1][members] = new
        if self.refit:
            start = np.linalg.solve(self.ridge + lam, h)
            zz = self.z[: u + 1][members].reshape(-1, self.d)
            yy = self.y[: u + 1][members].reshape(-1)
            theta, lam = logistic_map(zz, yy, self.prior_var, start, self.refit)
            h = (lam + self.ridge) @ theta
        self._lam_rows[new] = 0.5 * (lam + lam.T)
        self._h_rows[new] = h
        self.comp_lam[new] = self._lam_rows[new]
        self.comp_h[new] = self._h_rows[new]
        self.n_done = u + 1

    # -- inspection --------------------------------------------------------------------------

    def clusters(self) -> np.ndarray:
        """Component of each completed user ``(n,)``, numbered 0, 1, ... by first member."""
        raw = self.label[: self.n_done]
        _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
        order = np.argsort(np.argsort(first))
        return order[inverse]

    # -- internals ---------------------------------------------------------------------------

    def _cut_edges(self) -> None:
        """Cut the current user's edges whose estimates differ beyond the CLUB threshold, and
        drop from the cluster belief every component that lost its last edge."""
        if not self.linked_comps:  # no edge left (linked_comps: components with a linked user)
            return
        n = self.n_done
        diff = self.theta[:n] - self.own.mu
        dist = np.sqrt(np.einsum("nd,nd->n", diff, diff))
        t_u = len(self.s_z)
        own_radius = math.sqrt((1.0 + math.log1p(t_u)) / (1.0 + t_u))  # club_width(t_u)
        cut = self.linked & (dist > self.threshold * (own_radius + self.radius[:n]))
        if not cut.any():
            return
        self.linked &= ~cut
        lost = np.bincount(self.label[:n][cut], minlength=self.link_count.size)
        self.link_count -= lost
        gone = np.flatnonzero((lost > 0) & (self.link_count == 0)).tolist()
        if not gone:
            return
        prec = np.linalg.inv(self.cluster.sigma)
        info = prec.dot(self.cluster.mu)
        self._fold(prec, info, gone, subtract=True)
        cov = np.linalg.inv(0.5 * (prec + prec.T))
        self.cluster = LaplaceBelief(cov.dot(info), 0.5 * (cov + cov.T))
        self.linked_comps.difference_update(gone)

    def _fold(
        self, prec: np.ndarray, info: np.ndarray, comps: list[int] | set[int], subtract: bool
    ) -> None:
        """Add (or subtract) the components ``comps``' summaries to ``prec`` and ``info`` in
        place, one component at a time in the order ``comps`` iterates."""
        if jit.ENABLED:
            index = np.fromiter(comps, dtype=np.int64, count=len(comps))
            fold_components(prec, info, self._lam_rows, self._h_rows, index, subtract)
            return
        for c in comps:
            if subtract:
                prec -= self.comp_lam[c]
                info -= self.comp_h[c]
            else:
                prec += self.comp_lam[c]
                info += self.comp_h[c]

    def _grow(self, n: int, t: int) -> None:
        """Make room for ``n`` users with ``t`` clicks each (beyond what context announced)."""
        if n > self.theta.shape[0]:
            extra = max(n, 2 * self.theta.shape[0]) - self.theta.shape[0]
            self.theta = np.concatenate([self.theta, np.zeros((extra, self.d))])
            self.count = np.concatenate([self.count, np.zeros(extra)])
            self.radius = np.concatenate([self.radius, np.zeros(extra)])
            self.label = np.concatenate([self.label, np.zeros(extra, dtype=np.int64)])
            self._lam_rows = np.concatenate([self._lam_rows, np.zeros((extra, self.d, self.d))])
            self._h_rows = np.concatenate([self._h_rows, np.zeros((extra, self.d))])
            self.z = np.concatenate([self.z, np.zeros((extra, *self.z.shape[1:]))])
            self.y = np.concatenate([self.y, np.zeros((extra, self.y.shape[1]))])
        if t > self.z.shape[1]:
            extra = t - self.z.shape[1]
            self.z = np.concatenate([self.z, np.zeros((self.z.shape[0], extra, self.d))], axis=1)
            self.y = np.concatenate([self.y, np.zeros((self.y.shape[0], extra))], axis=1)
