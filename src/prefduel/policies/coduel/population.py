"""CODuel's population model: a mixture of Gaussians over users' preference vectors.

Fitted after every session by EM over the completed users' Gaussian likelihood summaries
(extreme deconvolution in information form; Bovy, Hogg & Roweis, 2011): user i contributes
``exp(h_i . theta - theta^T Lambda_i theta / 2)``, never its raw clicks. An isotropic
component ``N(0, prior_var I)`` is kept fixed with weight at least ``alpha / (alpha + n)``, as the
"new table" of a Dirichlet process; a component is born when a completed session is better
explained by the isotropic prior than by every learned component, and removed when its
expected membership falls below ``death`` after ``grace`` sessions.

Two departures from the seed, off by default: births within ``birth_margin`` nats of
the best learned component's evidence, and a split move every ``split_every`` sessions
(`Population.try_split`), which replaces a learned component by two when the penalized
likelihood of all completed users' summaries says it holds two groups.

The direction ``u = (1, ..., 1, 0) / sqrt(K)`` (the same constant added to every persona's
weight) cannot be identified from clicks (every click feature ``phi_i - phi_j`` is orthogonal
to it); every component keeps the isotropic prior in that direction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def unidentified_direction(d: int, k: int) -> np.ndarray:
    """Unit vector of the direction clicks cannot identify, ``(d,)`` (zeros if d != k + 1)."""
    u = np.zeros(d)
    if d == k + 1:
        u[:k] = 1.0 / np.sqrt(k)
    return u


def mixture_weights(counts: np.ndarray, n_sessions: int, alpha: float) -> np.ndarray:
    """Prior weights ``(C,)`` of a population with expected memberships ``counts`` (index 0
    the isotropic component) after ``n_sessions``: the isotropic weight is at least
    ``alpha / (alpha + n_sessions)``, the learned components share the rest by membership."""
    iso_floor = alpha / (alpha + n_sessions)
    learned = counts[1:]
    if learned.size == 0 or learned.sum() <= 0:
        return np.ones(1) if learned.size == 0 else np.r_[1.0, np.zeros(learned.size)]
    iso = max(iso_floor, counts[0] / max(n_sessions, 1))
    return np.r_[iso, (1.0 - iso) * learned / learned.sum()]


def component_posteriors(
    lam: np.ndarray, h: np.ndarray, mu: np.ndarray, cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per user and component: posterior mean, covariance and log evidence (up to a constant
    per user).

    Args:
        lam: ``(n, d, d)`` likelihood precisions.
        h: ``(n, d)`` likelihood information vectors.
        mu: ``(C, d)`` component means.
        cov: ``(C, d, d)`` component covariances.

    Returns:
        ``(m, C_post, loglik)`` with shapes ``(n, C, d)``, ``(n, C, d, d)``, ``(n, C)``.
    """
    prec = np.linalg.inv(cov)  # (C, d, d)
    prior_info = np.einsum("cij,cj->ci", prec, mu)  # (C, d)
    post_prec = prec[None] + lam[:, None]  # (n, C, d, d)
    b = prior_info[None] + h[:, None]  # (n, C, d)
    chol = np.linalg.cholesky(post_prec)
    post_cov = np.linalg.inv(post_prec)
    m = np.einsum("ncij,ncj->nci", post_cov, b)
    logdet_post = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    logdet_prior = np.linalg.slogdet(cov)[1]
    quad_prior = np.einsum("ci,ci->c", mu, prior_info)
    loglik = 0.5 * np.einsum("nci,nci->nc", b, m) - 0.5 * quad_prior - 0.5 * logdet_prior
    loglik = loglik - 0.5 * logdet_post
    return m, post_cov, loglik


def _forward_substitution(chol: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``L v = b`` for lower-triangular ``L``, batched.

    Args:
        chol: ``(..., d, d)`` lower-triangular factors.
        b: ``(..., d)`` right-hand sides.

    Returns:
        ``(..., d)`` solutions.
    """
    v = np.empty_like(b)
    for j in range(b.shape[-1]):
        acc = np.einsum("...k,...k->...", chol[..., j, :j], v[..., :j])
        v[..., j] = (b[..., j] - acc) / chol[..., j, j]
    return v


def _triangular_inverse(chol: np.ndarray) -> np.ndarray:
    """Inverses of lower-triangular matrices ``(..., d, d)`` by forward substitution, batched
    (several times faster than ``np.linalg.inv`` on many small matrices)."""
    d = chol.shape[-1]
    inv = np.zeros_like(chol)
    for j in range(d):
        row = -np.einsum("...k,...km->...m", chol[..., j, :j], inv[..., :j, :])
        row[..., j] += 1.0
        inv[..., j, :] = row / chol[..., j, j, None]
    return inv


def component_evidence(
    lam: np.ndarray, h: np.ndarray, mu: np.ndarray, cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The log evidence of `component_posteriors` without forming posterior covariances.

    Args:
        lam: ``(n, d, d)`` likelihood precisions.
        h: ``(n, d)`` likelihood information vectors.
        mu: ``(C, d)`` component means.
        cov: ``(C, d, d)`` component covariances.

    Returns:
        ``(loglik (n, C), chol (n, C, d, d), v (n, C, d))``: the log evidence (equal to
        `component_posteriors`' up to rounding), the Cholesky factors ``L`` of the
        posterior precisions and ``v = L^-1 b``, from which posteriors are formed where they
        are needed (covariance ``L^-T L^-1``, mean ``L^-T v``).
    """
    prec = np.linalg.inv(cov)
    prior_info = np.einsum("cij,cj->ci", prec, mu)
    post_prec = prec[None] + lam[:, None]
    b = prior_info[None] + h[:, None]
    chol = np.linalg.cholesky(post_prec)
    v = _forward_substitution(chol, b)  # b^T post_cov b = |v|^2
    logdet_post = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    logdet_prior = np.linalg.slogdet(cov)[1]
    quad_prior = np.einsum("ci,ci->c", mu, prior_info)
    loglik = 0.5 * np.einsum("nci,nci->nc", v, v) - 0.5 * (quad_prior + logdet_prior)
    return loglik - 0.5 * logdet_post, chol, v


@dataclass
class Population:
    """Mixture prior over users (component 0 is the fixed isotropic component).

    Args:
        d: Dimension of theta.
        k: Number of personas (for the unidentified direction).
        prior_var: Variance of the isotropic component.
        alpha: Dirichlet-process concentration; the isotropic weight is >= alpha / (alpha + n).
        max_components: Cap on learned components.
        death: Remove a learned component whose expected membership drops below this.
        grace: Sessions a newborn component is kept regardless of its membership.
        birth_margin: A session founds a component when the isotropic prior's log evidence is
            within this many nats of every learned component's (0: the seed's rule, better
            explained by the isotropic prior).
        split_every: Try a split move (`try_split`) after every ``split_every``-th session
            (0: never, the seed's population).
    """

    d: int
    k: int
    prior_var: float = 1.0
    alpha: float = 20.0
    max_components: int = 16
    death: float = 1.5
    grace: int = 5
    birth_margin: float = 0.0
    split_every: int = 0
    mu: np.ndarray = field(init=False)
    cov: np.ndarray = field(init=False)
    counts: np.ndarray = field(init=False)
    born: list[int] = field(init=False)
    splits: list[int] = field(init=False)
    kept: list[int] = field(init=False, default_factory=list)
    n_sessions: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.u = unidentified_direction(self.d, self.k)
        self.mu = np.zeros((1, self.d))
        self.cov = self.prior_var * np.eye(self.d)[None]
        self.counts = np.zeros(1)
        self.born = [0]
        self.splits = []  # sessions after which a split move was applied

    @property
    def n_learned(self) -> int:
        """Number of learned components (excluding the isotropic one)."""
        return self.mu.shape[0] - 1

    def weights(self) -> np.ndarray:
        """Prior weights of the components ``(C,)``; index 0 is the isotropic component."""
        return mixture_weights(self.counts, self.n_sessions, self.alpha)

    def _project(self, mu: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Reset the unidentified direction to the isotropic prior."""
        if not self.u.any():
            return mu, cov
        q = np.eye(self.d) - np.outer(self.u, self.u)
        mu = mu @ q
        cov = q @ cov @ q + self.prior_var * np.outer(self.u, self.u)
        return mu, cov

    def add_session(
        self, lam: np.ndarray, h: np.ndarray, all_lam: np.ndarray, all_h: np.ndarray, em_iters: int
    ) -> bool:
        """Account for one completed session and refit.

        Args:
            lam, h: The new user's likelihood summary ``(d, d)``, ``(d,)``.
            all_lam, all_h: Summaries of all completed users, the new one included.
            em_iters: EM iterations (warm-started from the current fit).

        Returns:
            True if a component was born.
        """
        self.n_sessions += 1
        born = self.birth(lam, h)
        self.fit(all_lam, all_h, em_iters)
        if self.split_every and self.n_sessions % self.split_every == 0:
            if self.try_split(all_lam, all_h):
                self.fit(all_lam, all_h, 1)
        return born

    def birth(self, lam: np.ndarray, h: np.ndarray) -> bool:
        """Found a component from a session that just ended (``n_sessions`` already counts
        it) if the isotropic prior explains it within ``birth_margin`` nats of every learned
        component; its mean and covariance are the session's posterior under the isotropic
        prior. Returns True if a component was born."""
        m, post_cov, loglik = component_posteriors(lam[None], h[None], self.mu, self.cov)
        best_learned = loglik[0, 1:].max(initial=-np.inf)
        if self.n_learned >= self.max_components or (
            loglik[0, 0] < best_learned - self.birth_margin
        ):
            return False
        mu_new, cov_new = self._project(m[0, 0], post_cov[0, 0])
        self.mu = np.vstack([self.mu, mu_new[None]])
        self.cov = np.concatenate([self.cov, cov_new[None]])
        self.counts = np.r_[self.counts, 1.0]
        self.born.append(self.n_sessions)
        return True

    def fit(self, lam: np.ndarray, h: np.ndarray, iters: int) -> None:
        """Warm-started EM over summaries ``lam (n, d, d)``, ``h (n, d)``, with deaths after
        each iteration; ``counts`` always hold the expected memberships of the components that
        remain (they sum to n)."""
        for _ in range(iters):
            if self.n_learned == 0:
                self.counts = np.array([float(lam.shape[0])])
                return
            r, chol, v = self._responsibilities(lam, h)
            self._m_step(r[:, 1:], chol[:, 1:], v[:, 1:])
            self.counts = r.sum(axis=0)
            removed = self._deaths()
        if removed:  # the dead components' users are shared among the survivors
            self.counts = self._responsibilities(lam, h)[0].sum(axis=0)

    def _responsibilities(
        self, lam: np.ndarray, h: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """E-step: responsibilities ``(n, C)`` and the posteriors' factors (see
        `component_evidence`)."""
        loglik, chol, v = component_evidence(lam, h, self.mu, self.cov)
        logr = loglik + np.log(np.maximum(self.weights(), 1e-300))
        logr -= logr.max(axis=1, keepdims=True)
        r = np.exp(logr)
        return r / r.sum(axis=1, keepdims=True), chol, v

    def _m_step(self, resp: np.ndarray, chol: np.ndarray, v: np.ndarray) -> None:
        """Refit the learned components from responsibilities ``resp (n, C')`` and the users'
        posteriors under them (Cholesky factors ``chol (n, C', d, d)``, ``v (n, C', d)``).

        Each component gets the responsibility-weighted mean of the users' posterior means and
        the weighted scatter of those means plus the weighted posterior covariances (the
        extreme-deconvolution update).
        """
        mean, cov, ok = self._moments(resp, chol, v)
        for c in np.flatnonzero(ok):
            self.mu[c + 1], self.cov[c + 1] = mean[c], cov[c]

    def _moments(
        self, resp: np.ndarray, chol: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The extreme-deconvolution moments of `_m_step`, projected (see `_project`).

        Returns:
            ``(mean (C', d), cov (C', d, d), ok (C',))``; entries where ``ok`` is False (no
            membership) are not set.
        """
        d = self.d
        chol_inv = _triangular_inverse(chol)  # L^-1, (n, C', d, d)
        m = np.einsum("ncji,ncj->nci", chol_inv, v)  # posterior means L^-T v
        weight = resp.sum(axis=0)  # (C',)
        ok = weight >= 1e-8
        mean = np.einsum("nc,nci->ci", resp, m) / np.where(ok, weight, 1.0)[:, None]
        root_w = np.sqrt(resp)
        dev = (root_w[..., None] * (m - mean)).transpose(1, 0, 2)  # (C', n, d)
        # sum_n r_n post_cov_n = sum_n r_n L_n^-T L_n^-1 as one product per component
        root = (
            (root_w[..., None, None] * chol_inv).transpose(1, 0, 2, 3).reshape(resp.shape[1], -1, d)
        )
        scatter = dev.transpose(0, 2, 1) @ dev + root.transpose(0, 2, 1) @ root  # (C', d, d)
        out_mean, out_cov = np.zeros_like(mean), np.zeros_like(scatter)
        for c in np.flatnonzero(ok):
            cov = scatter[c] / weight[c] + 1e-6 * np.eye(d)
            out_mean[c], out_cov[c] = self._project(mean[c], 0.5 * (cov + cov.T))
        return out_mean, out_cov, ok

    def split_penalty(self, n_users: int) -> float:
        """BIC price of one more component over ``n_users`` summaries: half its free
        parameters (mean and covariance on the identifiable subspace, and a weight) times
        ``log n``."""
        d_eff = self.d - int(self.u.any())
        params = d_eff + d_eff * (d_eff + 1) / 2 + 1
        return 0.5 * params * float(np.log(max(n_users, 2)))

    def _total_loglik(self, loglik: np.ndarray, counts: np.ndarray) -> float:
        """``sum_n log sum_c w_c p(user n | c)`` (up to a constant per user) for per-component
        log evidence ``loglik (n, C)`` and weights from memberships ``counts (C,)``."""
        weights = mixture_weights(counts, self.n_sessions, self.alpha)
        a = loglik + np.log(np.maximum(weights, 1e-300))
        top = a.max(axis=1)
        return float((top + np.log(np.exp(a - top[:, None]).sum(axis=1))).sum())

    def try_split(self, lam: np.ndarray, h: np.ndarray, iters: int = 5) -> bool:
        """Split move: replace one learned component by two if that pays its BIC price.

        For every learned component, its users (weighted by responsibility) are cut in two
        along the main axis of the scatter of their posterior means, and the two children are
        refitted by ``iters`` EM iterations on the parent's share of each user (the other
        components fixed). The split that raises the mixture's log likelihood of all summaries
        the most, by more than `split_penalty`, is applied; newborn children get the grace
        period.

        Args:
            lam, h: Summaries of all completed users ``(n, d, d)``, ``(n, d)``.
            iters: EM iterations for the two children.

        Returns:
            True if a component was split.
        """
        if self.n_learned == 0 or self.n_learned >= self.max_components:
            return False
        loglik, chol, v = component_evidence(lam, h, self.mu, self.cov)
        logr = loglik + np.log(np.maximum(self.weights(), 1e-300))
        resp = np.exp(logr - logr.max(axis=1, keepdims=True))
        resp /= resp.sum(axis=1, keepdims=True)
        counts = resp.sum(axis=0)
        base = self._total_loglik(loglik, counts)
        best_gain, best = self.split_penalty(lam.shape[0]), None
        for c in range(1, self.mu.shape[0]):
            children = self._split_children(lam, h, resp[:, c], chol[:, c], v[:, c], iters)
            if children is None:
                continue
            keep = [i for i in range(self.mu.shape[0]) if i != c]
            child_loglik = component_evidence(lam, h, children[0], children[1])[0]
            gain = (
                self._total_loglik(
                    np.concatenate([loglik[:, keep], child_loglik], axis=1),
                    np.r_[counts[keep], children[2]],
                )
                - base
            )
            if gain > best_gain:
                best_gain, best = gain, (keep, children)
        if best is None:
            return False
        keep, (mu2, cov2, counts2) = best
        self.mu = np.concatenate([self.mu[keep], mu2])
        self.cov = np.concatenate([self.cov[keep], cov2])
        self.counts = np.r_[counts[keep], counts2]
        self.born = [self.born[i] for i in keep] + [self.n_sessions] * 2
        self.splits.append(self.n_sessions)
        return True

    def _split_children(
        self,
        lam: np.ndarray,
        h: np.ndarray,
        resp: np.ndarray,
        chol: np.ndarray,
        v: np.ndarray,
        iters: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Two children of one component: ``(mu (2, d), cov (2, d, d), counts (2,))``, or None
        when a child would hold fewer than ``death`` users.

        Args:
            lam, h: Summaries of all users.
            resp: ``(n,)`` the parent's responsibilities.
            chol, v: ``(n, d, d)``, ``(n, d)`` the users' posterior factors under the parent
                (see `component_evidence`).
            iters: EM iterations.
        """
        members = resp > 1e-6  # users with no share in the parent cannot move the children
        r = resp[members]
        if r.sum() < 2.0 * self.death:
            return None
        lam, h, chol, v = lam[members], h[members], chol[members], v[members]
        m = np.einsum("nji,nj->ni", _triangular_inverse(chol), v)  # posterior means
        dev = m - r @ m / r.sum()
        axis = np.linalg.eigh((r[:, None] * dev).T @ dev)[1][:, -1]
        side = dev @ axis > 0
        child_resp = r[:, None] * np.stack([side, ~side], axis=1)
        chol2, v2 = np.repeat(chol[:, None], 2, axis=1), np.repeat(v[:, None], 2, axis=1)
        for _ in range(iters):
            if child_resp.sum(axis=0).min() < self.death:
                return None
            mu2, cov2, _ = self._moments(child_resp, chol2, v2)
            loglik2, chol2, v2 = component_evidence(lam, h, mu2, cov2)
            a = loglik2 + np.log(child_resp.sum(axis=0))
            share = np.exp(a - a.max(axis=1, keepdims=True))
            child_resp = r[:, None] * share / share.sum(axis=1, keepdims=True)
        counts2 = child_resp.sum(axis=0)
        if iters == 0 or counts2.min() < self.death:
            return None
        return mu2, cov2, counts2

    def _deaths(self) -> bool:
        """Remove weakly supported learned components; True if any was removed (the indices
        of the components kept are then in ``kept``)."""
        keep = [0] + [
            c
            for c in range(1, self.mu.shape[0])
            if self.counts[c] >= self.death or self.n_sessions - self.born[c] < self.grace
        ]
        if len(keep) < self.mu.shape[0]:
            self.mu, self.cov, self.counts = self.mu[keep], self.cov[keep], self.counts[keep]
            self.born = [self.born[c] for c in keep]
            self.kept = keep
            return True
        return False
