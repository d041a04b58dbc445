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

from prefduel.core import jit
from prefduel.policies.coduel import kernels


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
    """Per user and component: the log evidence and the posterior's first two moments.

    User n's clicks enter as the Gaussian likelihood ``exp(h_n . theta - theta^T lam_n theta /
    2)``; under component c's prior ``N(mu_c, cov_c)`` the posterior has precision
    ``cov_c^-1 + lam_n`` (factored by Cholesky, ``L L^T``) and the evidence is Gaussian. The
    compiled kernel (`prefduel.policies.coduel.kernels.estep_terms`) computes it when
    `prefduel.core.jit.ENABLED`, numpy otherwise.

    Args:
        lam: ``(n, d, d)`` likelihood precisions.
        h: ``(n, d)`` likelihood information vectors.
        mu: ``(C, d)`` component means.
        cov: ``(C, d, d)`` component covariances.

    Returns:
        ``(loglik (n, C), mean (n, C, d), second (n, C, d, d))``: the log evidence (up to a
        constant per user), the posterior means ``m`` and second moments ``m m^T + P`` (``P``
        the posterior covariance, ``L^-T L^-1``).

    Raises:
        ValueError: the shapes do not fit.
    """
    n, d = h.shape
    if lam.shape != (n, d, d) or mu.ndim != 2 or mu.shape[1] != d:
        raise ValueError(f"lam {lam.shape}, h {h.shape} and mu {mu.shape} do not fit")
    if cov.shape != (mu.shape[0], d, d):
        raise ValueError(f"cov must have shape {(mu.shape[0], d, d)}, got {cov.shape}")
    prec = np.linalg.inv(cov)  # (C, d, d)
    prior_info = np.einsum("cij,cj->ci", prec, mu)  # (C, d)
    const = np.einsum("ci,ci->c", mu, prior_info) + np.linalg.slogdet(cov)[1]
    if jit.ENABLED:
        lam, h = np.ascontiguousarray(lam), np.ascontiguousarray(h)
        return kernels.estep_terms(lam, h, prec, prior_info, const)
    return _evidence(lam, h, prec, prior_info, const)


def _evidence(
    lam: np.ndarray, h: np.ndarray, prec: np.ndarray, prior_info: np.ndarray, const: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`component_evidence` in numpy, from the components' precisions ``prec (C, d, d)``,
    ``prior_info = prec_c mu_c (C, d)`` and ``const = mu_c . prec_c mu_c + log det cov_c
    (C,)``."""
    post_prec = prec[None] + lam[:, None]  # (n, C, d, d)
    b = prior_info[None] + h[:, None]  # (n, C, d)
    chol = np.linalg.cholesky(post_prec)
    v = _forward_substitution(chol, b)  # b^T post_cov b = |v|^2
    logdet_post = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    loglik = 0.5 * np.einsum("nci,nci->nc", v, v) - 0.5 * const - 0.5 * logdet_post
    chol_inv = _triangular_inverse(chol)  # L^-1
    inv_t = np.swapaxes(chol_inv, -1, -2)
    m = (inv_t @ v[..., None])[..., 0]  # posterior means L^-T v
    second = m[..., :, None] * m[..., None, :] + inv_t @ chol_inv  # m m^T + L^-T L^-1
    return loglik, m, second


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
        loglik, m, second = component_evidence(lam[None], h[None], self.mu, self.cov)
        best_learned = loglik[0, 1:].max(initial=-np.inf)
        if self.n_learned >= self.max_components or (
            loglik[0, 0] < best_learned - self.birth_margin
        ):
            return False
        post_cov = second[0, 0] - np.outer(m[0, 0], m[0, 0])
        mu_new, cov_new = self._project(m[0, 0], post_cov)
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
            r, m, second = self._responsibilities(lam, h)
            self._m_step(r[:, 1:], m[:, 1:], second[:, 1:])
            self.counts = r.sum(axis=0)
            removed = self._deaths()
        if removed:  # the dead components' users are shared among the survivors
            self.counts = self._responsibilities(lam, h)[0].sum(axis=0)

    def _responsibilities(
        self, lam: np.ndarray, h: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """E-step: responsibilities ``(n, C)`` and the posterior moments of
        `component_evidence`."""
        loglik, m, second = component_evidence(lam, h, self.mu, self.cov)
        logr = loglik + np.log(np.maximum(self.weights(), 1e-300))
        logr -= logr.max(axis=1, keepdims=True)
        r = np.exp(logr)
        return r / r.sum(axis=1, keepdims=True), m, second

    def _m_step(self, resp: np.ndarray, m: np.ndarray, second: np.ndarray) -> None:
        """Refit the learned components from responsibilities ``resp (n, C')`` and the users'
        posterior moments under them (``m (n, C', d)``, ``second (n, C', d, d)``)."""
        mean, cov, ok = self._moments(resp, m, second)
        for c in np.flatnonzero(ok):
            self.mu[c + 1], self.cov[c + 1] = mean[c], cov[c]

    def _moments(
        self, resp: np.ndarray, m: np.ndarray, second: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The M-step's components from responsibilities and posterior moments (see
        `component_moments`).

        Returns:
            ``(mean (C', d), cov (C', d, d), ok (C',))``; entries where ``ok`` is False (no
            membership) are zeros.
        """
        weight = resp.sum(axis=0)  # (C',)
        ok = weight >= 1e-8
        s1 = np.einsum("nc,nci->ci", resp, m)
        s2 = np.einsum("nc,ncij->cij", resp, second)
        mean, cov = np.zeros_like(s1), np.zeros_like(s2)
        if ok.any():
            mean[ok], cov[ok] = self.component_moments(weight[ok], s1[ok], s2[ok])
        return mean, cov, ok

    def component_moments(
        self, weight: np.ndarray, s1: np.ndarray, s2: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The extreme-deconvolution M-step from the E-step's sums over users.

        Each component gets the responsibility-weighted mean of the users' posterior means and
        the weighted mean of their second moments less its outer square (the weighted scatter
        of the means plus the weighted posterior covariances), a 1e-6 ridge, and the isotropic
        prior in the unidentified direction (`_project`).

        Args:
            weight: ``(C',)`` summed responsibilities ``W_c`` (all > 0).
            s1: ``(C', d)`` ``sum_n r_nc m_nc``.
            s2: ``(C', d, d)`` ``sum_n r_nc (m_nc m_nc^T + P_nc)``.

        Returns:
            ``(mean (C', d), cov (C', d, d))``.
        """
        mean = s1 / weight[:, None]
        cov = s2 / weight[:, None, None] - mean[:, :, None] * mean[:, None, :]
        cov = 0.5 * (cov + np.swapaxes(cov, 1, 2)) + 1e-6 * np.eye(self.d)
        if self.u.any():  # the unidentified direction keeps the isotropic prior (`_project`)
            q = np.eye(self.d) - np.outer(self.u, self.u)
            mean = mean @ q
            cov = q @ cov @ q + self.prior_var * np.outer(self.u, self.u)
        return mean, cov

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
        loglik, m, second = component_evidence(lam, h, self.mu, self.cov)
        logr = loglik + np.log(np.maximum(self.weights(), 1e-300))
        resp = np.exp(logr - logr.max(axis=1, keepdims=True))
        resp /= resp.sum(axis=1, keepdims=True)
        counts = resp.sum(axis=0)
        base = self._total_loglik(loglik, counts)
        best_gain, best = self.split_penalty(lam.shape[0]), None
        for c in range(1, self.mu.shape[0]):
            children = self._split_children(lam, h, resp[:, c], m[:, c], second[:, c], iters)
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
        m: np.ndarray,
        second: np.ndarray,
        iters: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Two children of one component: ``(mu (2, d), cov (2, d, d), counts (2,))``, or None
        when a child would hold fewer than ``death`` users.

        Args:
            lam, h: Summaries of all users.
            resp: ``(n,)`` the parent's responsibilities.
            m, second: ``(n, d)``, ``(n, d, d)`` the users' posterior moments under the
                parent (see `component_evidence`).
            iters: EM iterations.
        """
        members = resp > 1e-6  # users with no share in the parent cannot move the children
        r = resp[members]
        if r.sum() < 2.0 * self.death:
            return None
        lam, h, m, second = lam[members], h[members], m[members], second[members]
        dev = m - r @ m / r.sum()
        axis = np.linalg.eigh((r[:, None] * dev).T @ dev)[1][:, -1]
        side = dev @ axis > 0
        child_resp = r[:, None] * np.stack([side, ~side], axis=1)
        m2, second2 = np.repeat(m[:, None], 2, axis=1), np.repeat(second[:, None], 2, axis=1)
        for _ in range(iters):
            if child_resp.sum(axis=0).min() < self.death:
                return None
            mu2, cov2, _ = self._moments(child_resp, m2, second2)
            loglik2, m2, second2 = component_evidence(lam, h, mu2, cov2)
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
