"""CODuel's population model: a mixture of Gaussians over users' preference vectors.

Fitted after every session by EM over the completed users' Gaussian likelihood summaries
(extreme deconvolution in information form; Bovy, Hogg & Roweis, 2011): user i contributes
``exp(h_i . theta - theta^T Lambda_i theta / 2)``, never its raw clicks. An isotropic
component ``N(0, prior_var I)`` is kept fixed with weight at least ``alpha / (alpha + n)``, as the
"new table" of a Dirichlet process; a component is born when a completed session is better
explained by the isotropic prior than by every learned component, and removed when its
expected membership falls below ``death`` after ``grace`` sessions.

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
    """

    d: int
    k: int
    prior_var: float = 1.0
    alpha: float = 20.0
    max_components: int = 16
    death: float = 1.5
    grace: int = 5
    mu: np.ndarray = field(init=False)
    cov: np.ndarray = field(init=False)
    counts: np.ndarray = field(init=False)
    born: list[int] = field(init=False)
    n_sessions: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.u = unidentified_direction(self.d, self.k)
        self.mu = np.zeros((1, self.d))
        self.cov = self.prior_var * np.eye(self.d)[None]
        self.counts = np.zeros(1)
        self.born = [0]

    @property
    def n_learned(self) -> int:
        """Number of learned components (excluding the isotropic one)."""
        return self.mu.shape[0] - 1

    def weights(self) -> np.ndarray:
        """Prior weights of the components ``(C,)``; index 0 is the isotropic component."""
        n = self.n_sessions
        iso_floor = self.alpha / (self.alpha + n)
        learned = self.counts[1:]
        if learned.size == 0 or learned.sum() <= 0:
            return np.ones(1) if learned.size == 0 else np.r_[1.0, np.zeros(learned.size)]
        iso = max(iso_floor, self.counts[0] / max(n, 1))
        return np.r_[iso, (1.0 - iso) * learned / learned.sum()]

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
        born = False
        m, post_cov, loglik = component_posteriors(lam[None], h[None], self.mu, self.cov)
        if self.n_learned < self.max_components and loglik[0, 0] >= loglik[0, 1:].max(
            initial=-np.inf
        ):
            mu_new, cov_new = self._project(m[0, 0], post_cov[0, 0])
            self.mu = np.vstack([self.mu, mu_new[None]])
            self.cov = np.concatenate([self.cov, cov_new[None]])
            self.counts = np.r_[self.counts, 1.0]
            self.born.append(self.n_sessions)
            born = True
        self.fit(all_lam, all_h, em_iters)
        return born

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
        d = self.d
        chol_inv = _triangular_inverse(chol)  # L^-1, (n, C', d, d)
        m = np.einsum("ncji,ncj->nci", chol_inv, v)  # posterior means L^-T v
        weight = resp.sum(axis=0)  # (C',)
        ok = weight >= 1e-8
        mean = np.einsum("nc,nci->ci", resp, m) / np.where(ok, weight, 1.0)[:, None]
        root_w = np.sqrt(resp)
        dev = (root_w[..., None] * (m - mean)).transpose(1, 0, 2)  # (C', n, d)
        # sum_n r_n post_cov_n = sum_n r_n L_n^-T L_n^-1 as one product per component
        root = (root_w[..., None, None] * chol_inv).transpose(1, 0, 2, 3).reshape(
            resp.shape[1], -1, d
        )
        scatter = dev.transpose(0, 2, 1) @ dev + root.transpose(0, 2, 1) @ root  # (C', d, d)
        for c in np.flatnonzero(ok):
            cov = scatter[c] / weight[c] + 1e-6 * np.eye(d)
            self.mu[c + 1], self.cov[c + 1] = self._project(mean[c], 0.5 * (cov + cov.T))

    def _deaths(self) -> bool:
        """Remove weakly supported learned components; True if any was removed."""
        keep = [0] + [
            c
            for c in range(1, self.mu.shape[0])
            if self.counts[c] >= self.death or self.n_sessions - self.born[c] < self.grace
        ]
        if len(keep) < self.mu.shape[0]:
            self.mu, self.cov, self.counts = self.mu[keep], self.cov[keep], self.counts[keep]
            self.born = [self.born[c] for c in keep]
            return True
        return False
