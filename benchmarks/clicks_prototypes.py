"""The prototype policies and hindsight diagnostics of ``clicks_directions.py`` (dev only).

Each class is CODuel with one change; ``clicks_directions.py`` says what each does, runs them
and prints their figures. Nothing here is registered: a direction that pays on ``dev`` is moved
into ``prefduel.policies`` (population restarts became ``coduel-restarts``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_expit

from prefduel.core.btl import pairs_of, top_two
from prefduel.policies.coduel import restarts
from prefduel.policies.coduel.incremental import IncrementalEM
from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.coduel.population import component_evidence
from prefduel.policies.coduel.recal import apply_recalibration
from prefduel.runner import headroom


class ParticleCODuel(CODuel):
    """CODuel whose arriving user's belief is a particle set of earlier users' estimates."""

    def __init__(
        self,
        particles: str = "draw",
        pair: str = "greedy",
        max_particles: int = 512,
        blend: bool = False,
        horizon: int = 4,
        sequences: int = 4,
        **settings,
    ) -> None:
        super().__init__(**settings)
        self.particles, self.particle_pair = particles, pair
        self.max_particles, self.blend = max_particles, blend
        self.horizon, self.sequences = horizon, sequences

    def start_student(self) -> None:
        super().start_student()
        self.theta = None
        active = self.population and (self.gate_open or not self.gate)
        if active and self.n_sessions >= 2:
            self.theta = self._particles()
            self.log_w = np.zeros(len(self.theta))
            self.log_ev_particles = 0.0
            self.log_ev_mixture = 0.0

    def _particles(self) -> np.ndarray:
        n = self.n_sessions
        users = slice(max(0, n - self.max_particles), n)
        lam, h = self.lam[users], self.h[users]
        if self.particles == "iso":
            prec = lam + np.eye(self.d) / self.prior_var
            return np.linalg.solve(prec, h[..., None])[..., 0]
        loglik, m, second = component_evidence(lam, h, self.pop.mu, self.pop.cov)
        logr = loglik + np.log(np.maximum(self.pop.weights(), 1e-300))
        r = np.exp(logr - logr.max(axis=1, keepdims=True))
        r /= r.sum(axis=1, keepdims=True)
        if self.particles == "mean":
            return np.einsum("nc,ncd->nd", r, m)
        rows = np.arange(r.shape[0])
        c = (r.cumsum(axis=1) < self.rng.random((r.shape[0], 1))).sum(axis=1)
        c = np.minimum(c, r.shape[1] - 1)
        mean = m[rows, c]
        cov = second[rows, c] - mean[:, :, None] * mean[:, None, :]
        cov = 0.5 * (cov + np.swapaxes(cov, 1, 2)) + 1e-9 * np.eye(self.d)
        chol = np.linalg.cholesky(cov)
        return mean + np.einsum("nij,nj->ni", chol, self.rng.standard_normal(mean.shape))

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        pair = super().select(Phi)
        if self.theta is None or self.particle_pair == "coduel":
            return pair
        phi = apply_recalibration(Phi, self.matrix) if self.layout_ok else np.asarray(Phi)
        w = np.exp(self.log_w - self.log_w.max())
        mean_p = phi @ (self.theta.T @ (w / w.sum()))
        if self.blend:
            a = self.log_ev_particles - self.log_ev_mixture
            share = 1.0 / (1.0 + np.exp(-np.clip(a, -50, 50)))
            mean_p = share * mean_p + (1.0 - share) * (phi @ self.belief.mean())
        i, j = top_two(mean_p + 1e-9 * self.rng.random(self.K))
        i, j = int(i), int(j)
        remaining = self.S - self.t - 1
        if self.particle_pair == "lookahead" and remaining > 0 and len(self.recent) > 1:
            i, j = self._lookahead(phi, w / w.sum(), remaining, (i, j))
        self._last = (i, j, phi[i] - phi[j])
        return i, j

    def _lookahead(self, phi, w, remaining, greedy):
        """Exact lookahead over the particles, future questions drawn from the bank."""
        rounds = min(self.horizon, remaining + 1)
        bank = self._bank_buf[self._bank_start : self._bank_start + self._bank_len][:-1]
        pick = self.rng.integers(0, len(bank), (self.sequences, rounds - 1))
        feats = np.concatenate(
            [np.broadcast_to(phi, (self.sequences, 1, *phi.shape)), bank[pick]], axis=1
        )  # (L, T, K, d)
        keep = w > 1e-6 * w.max()
        theta, wk = self.theta[keep], w[keep] / w[keep].sum()
        util = np.einsum("ltkd,md->ltmk", feats, theta)
        lo = headroom.pair_likelihoods(feats[:, :-1], theta, beta=1.0)  # (L, T-1, P, M)
        values = headroom.lookahead_values(
            util, lo, np.broadcast_to(wk, (self.sequences, wk.size)).copy()
        ).mean(axis=0)
        best = int(np.argmax(values))
        pairs = pairs_of(self.K)
        i, j = int(pairs[best, 0]), int(pairs[best, 1])
        mean_now = phi @ (theta.T @ wk)
        return (j, i) if mean_now[j] > mean_now[i] else (i, j)

    def update(self, outcome: int) -> None:
        if self.theta is not None:
            z = self._last[2]
            y = int(outcome)
            logit = self.theta @ z
            ll = log_expit(logit if y == 1 else -logit)
            w = np.exp(self.log_w - self.log_w.max())
            w /= w.sum()
            self.log_ev_particles += float(np.log(max(w @ np.exp(ll), 1e-300)))
            self.log_ev_mixture += float(np.log(max(self._mixture_predictive(z, y), 1e-300)))
            self.log_w = self.log_w + ll
        super().update(outcome)

    def _mixture_predictive(self, z: np.ndarray, y: int) -> float:
        p = self.belief.predictive(z)
        return p if y == 1 else 1.0 - p


class MixtureLookaheadCODuel(ParticleCODuel):
    """CODuel whose pair comes from the exact particle lookahead on draws from its own belief
    (the mixture of Laplace posteriors after this session's clicks), redrawn every round."""

    def __init__(self, draws: int = 128, **settings) -> None:
        super().__init__(pair="lookahead", **settings)
        self.draws = draws

    def start_student(self) -> None:
        CODuel.start_student(self)
        self.theta = None

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        pair = CODuel.select(self, Phi)
        active = self.population and (self.gate_open or not self.gate)
        remaining = self.S - self.t - 1
        if not active or remaining <= 0 or len(self.recent) < 2:
            return pair
        b = self.belief
        c = self.rng.choice(len(b.weights), self.draws, p=b.weights)
        chol = np.linalg.cholesky(b.sigma + 1e-12 * np.eye(self.d))
        eps = self.rng.standard_normal((self.draws, self.d))
        self.theta = b.mu[c] + np.einsum("nij,nj->ni", chol[c], eps)
        phi = apply_recalibration(Phi, self.matrix) if self.layout_ok else np.asarray(Phi)
        w = np.full(self.draws, 1.0 / self.draws)
        i, j = self._lookahead(phi, w, remaining, pair)
        self.theta = None
        self._last = (i, j, phi[i] - phi[j])
        return i, j


class RefinedCODuel(CODuel):
    """CODuel whose users' likelihood summaries are re-linearized at their posterior mode under
    the population (the most responsible component as the prior, Newton on the exact logistic
    likelihood) instead of the one-pass Laplace filter from the isotropic prior: the new user's
    at the end of each session, every user's at each refit."""

    def __init__(self, newton: int = 8, **settings) -> None:
        super().__init__(**settings)
        self.newton = newton

    def _solo_summary(self):
        lam, h = super()._solo_summary()
        if self.n_sessions < 2:
            return lam, h
        lam2, h2 = self._refine([self.n_sessions - 1], lam[None], h[None])
        return lam2[0], h2[0]

    def _learn_population(self, recal: bool, refit: bool) -> None:
        super()._learn_population(recal, refit)
        if refit and self.n_sessions >= 2:
            n = self.n_sessions
            lam, h = self._refine(range(n), self.lam.copy(), self.h.copy())
            self._lam[:n], self._h[:n] = lam, h

    def _refine(self, users, lam, h):
        z, y = self._click_features(users)
        loglik, m, _ = component_evidence(lam, h, self.pop.mu, self.pop.cov)
        logr = loglik + np.log(np.maximum(self.pop.weights(), 1e-300))
        c = logr.argmax(axis=1)
        prec0 = np.linalg.inv(self.pop.cov)[c]
        m0 = self.pop.mu[c]
        theta = np.einsum("ncd->nd", m[np.arange(len(c)), c][:, None])
        valid = np.abs(z).sum(axis=-1) > 0
        for _ in range(self.newton):
            p = 1.0 / (1.0 + np.exp(-np.einsum("nsd,nd->ns", z, theta)))
            w = p * (1 - p) * valid
            like_h = np.einsum("ns,nsd,nse->nde", w, z, z)
            grad = np.einsum("nde,ne->nd", prec0, m0 - theta) + np.einsum(
                "ns,nsd->nd", (y - p) * valid, z
            )
            theta = theta + np.linalg.solve(prec0 + like_h, grad[..., None])[..., 0]
        p = 1.0 / (1.0 + np.exp(-np.einsum("nsd,nd->ns", z, theta)))
        w = p * (1 - p) * valid
        lam = np.einsum("ns,nsd,nse->nde", w, z, z)
        h = np.einsum("nde,ne->nd", lam, theta) + np.einsum("ns,nsd->nd", (y - p) * valid, z)
        return lam, h


class KindCODuel(CODuel):
    """CODuel on persona-by-kind features: the chains' questions come in a fixed order of
    kinds (definition, computation, why), so round t's kind is known from t mod 3; the
    features become ``[e_p x kind, g]`` (d = 3K + 1). The layout is no longer ``[e_p, g]``,
    so CODuel's recalibration is off (compare with ``coduel:recal=off``)."""

    #: Scale of the kind-specific deviations (0: separate persona effects per kind; > 0:
    #: shared persona effects plus deviations of prior s.d. ``deviation``).
    deviation = 0.0

    def reset(self, rng, context) -> None:
        k = int(context["K"])
        d = 3 * k + 1 if not self.deviation else 4 * k + 1
        super().reset(rng, dict(context, d=d))

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        k = Phi.shape[0]
        pos = self.t % 3
        rows = np.arange(k)
        if not self.deviation:
            ext = np.zeros((k, 3 * k + 1))
            ext[rows, pos * k + rows] = 1.0
        else:
            ext = np.zeros((k, 4 * k + 1))
            ext[rows, rows] = 1.0
            ext[rows, k + pos * k + rows] = self.deviation
        ext[:, -1] = Phi[:, -1]
        return super().select(ext)


class RestartCODuel(CODuel):
    """CODuel whose population is also refitted from scratch at each refit point: mixtures of
    ``sizes`` components, each started from k-means on the users' isotropic posterior means
    (``restarts`` times), soft EM, and the one of best BIC replaces the learned mixture when
    its BIC is higher (model selection and a wider search than births and splits)."""

    def __init__(
        self, sizes=(4, 6, 8, 10, 12), restarts: int = 2, iters: int = 20, growth=1.0, **kw
    ):
        super().__init__(**kw)
        # not ``restarts``: that name is CODuel's own setting (its registered restarts)
        self.sizes, self.starts, self.iters = sizes, restarts, iters
        self.adopted, self.growth, self.last_restart = 0, growth, 0

    def _learn_population(self, recal: bool, refit: bool) -> None:
        super()._learn_population(recal, refit)
        due = self.n_sessions >= 30 and self.n_sessions >= self.growth * self.last_restart
        if refit and self.population and due:
            self.last_restart = self.n_sessions
            self._restart()

    def _restart(self) -> None:
        lam, h = self.lam, self.h
        theta = restarts.isotropic_means(lam, h, self.prior_var)
        best, best_bic = None, restarts.bic(self.pop, lam, h)
        for size in self.sizes:
            for _ in range(self.starts):
                if theta.shape[0] < 2 * size:
                    continue
                cand = restarts.kmeans_start(self.pop, theta, self._partition(theta, size))
                cand.fit(lam, h, self.iters)
                bic = restarts.bic(cand, lam, h)
                if bic > best_bic:
                    best, best_bic = cand, bic
        if best is not None:
            self.adopted += 1
            self.pop.mu, self.pop.cov, self.pop.counts = best.mu, best.cov, best.counts
            self.pop.born = [0] * best.mu.shape[0]
            self.em_state = IncrementalEM(self.pop, self.em_chunk)
            self.em_state.full_pass(lam, h, 1)


    def _partition(self, theta: np.ndarray, size: int) -> np.ndarray:
        """Ten Lloyd iterations, the assignment of the last one (before its center update;
        `restarts.kmeans` returns the assignment to the final centers instead)."""
        centers = theta[self.rng.choice(theta.shape[0], size, replace=False)]
        for _ in range(10):
            assign = ((theta[:, None] - centers[None]) ** 2).sum(-1).argmin(1)
            for c in range(size):
                if (assign == c).any():
                    centers[c] = theta[assign == c].mean(0)
        return assign


class OracleLabelCODuel(CODuel):
    """Diagnostic, not a policy: CODuel whose population has one component per true profile
    (the users' labels known in hindsight), each fitted by deconvolution EM on the users' click
    summaries: what the population would give from clicks if the clustering were right."""

    labels: np.ndarray | None = None

    def _learn_population(self, recal: bool, refit: bool) -> None:
        n = self.n_sessions
        self._add_summaries(recal)
        labels = self.labels[:n]
        mus, covs, counts = [np.zeros(self.d)], [self.prior_var * np.eye(self.d)], [0.0]
        for c in np.unique(labels):
            users = np.flatnonzero(labels == c)
            mu, cov = np.zeros(self.d), self.prior_var * np.eye(self.d)
            for _ in range(5):
                _, m, second = component_evidence(
                    self.lam[users], self.h[users], mu[None], cov[None]
                )
                mu = m[:, 0].mean(axis=0)
                cov = second[:, 0].mean(axis=0) - np.outer(mu, mu) + 1e-6 * np.eye(self.d)
                mu, cov = self.pop._project(mu, cov)
            mus.append(mu)
            covs.append(cov)
            counts.append(float(users.size))
        self.pop.mu, self.pop.cov = np.stack(mus), np.stack(covs)
        self.pop.counts, self.pop.n_sessions = np.array(counts), n


class OracleMapCODuel(CODuel):
    """Diagnostic, not a policy: CODuel with the rater map fixed to the hindsight best map
    (fitted on the true utilities of every arrival), never refitted."""

    oracle_map: np.ndarray | None = None

    def reset(self, rng, context) -> None:
        super().reset(rng, context)
        self.matrix = self.oracle_map
        self.recal = False


class OracleSummaryCODuel(CODuel):
    """Diagnostic, not a policy: CODuel (recalibration off) whose population is fitted on the
    exact weights of the completed users (hindsight least squares, in logits) instead of their
    clicks' likelihood summaries."""

    exact: np.ndarray | None = None
    precision = 100.0

    def __init__(self, **settings) -> None:
        super().__init__(recal="off", **settings)

    def _solo_summary(self):
        theta = self.exact[self.n_sessions - 1]
        return self.precision * np.eye(self.d), self.precision * theta
