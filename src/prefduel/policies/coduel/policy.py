"""CODuel: collaborative dueling for online personalization across users.

Puech, Salakhutdinov & Bertsimas (2026), "Online LLM Personalization from Pairwise Preferences
Across Users". A Bayesian logistic learner whose prior is itself learned from completed
sessions:

1. **Belief** (``belief.py``): per user, a mixture over the population's components with a
   full-covariance Laplace posterior in each, updated per click in O(d^2); component weights
   are reweighted by each click's predictive probability.
2. **Population** (``population.py``): after each session, warm-started EM over completed
   users' Gaussian likelihood summaries; a fixed isotropic component with weight
   >= alpha / (alpha + n); births and deaths; at most ``components`` learned components. The
   EM is incremental (``incremental.py``): the new user and a round-robin chunk of earlier
   ones per session, bounded full passes on a schedule whose gaps grow with n.
3. **Recalibration** (``recal.py``): g is replaced by ``(A g)_p`` with ``A = a I + A'`` fitted
   by logistic regression on all completed sessions' clicks (ridge on A'), first after
   ``recal_first`` sessions and refitted every ``recal_every``.
4. **Pair rule** (``pair_rule.py``): regret now plus expected greedy regret over the remaining
   rounds after observing the click, averaged over a bank of recent questions (``pair=kg``: the
   same with a pair-independent value of the best persona, a knowledge gradient on the
   decision).
5. **Gate**: a no-transfer learner runs alongside; both predict every click before it is
   revealed; the population learner selects only while its log-likelihood ratio over
   completed sessions, after at least ``nmin`` of them, exceeds ``z`` standard errors.

Every component has a setting that switches it off, so each ablation is a spec string:
``coduel:population=off``, ``coduel:recal=off``, ``coduel:pair=greedy``, ``coduel:gate=off``.
The departures from the seed found by a review are settings too: ``pair=kg`` (the default,
settled on dev; ``pair=lookahead-legacy`` is the earlier default, whose value of the best
persona carries a Jensen bias, see ``pair_rule.py``), ``recal_scale=off``,
``recal_prior=population``, ``birth_margin=...``, ``split=on`` (off by default). So is the
incremental EM: ``em=full,recal_growth=0`` is the population refit over every completed user
after each session, the earlier default. ``coduel-seed`` (``seed.py``) is CODuel with every
setting as the seed paper states it.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np

from prefduel.core.btl import top_two
from prefduel.core.schema import Real, Switch
from prefduel.policies.base import Count, NonNegative, NonNegativeCount, Policy, Positive
from prefduel.policies.coduel.belief import MixtureBelief, likelihood_summaries
from prefduel.policies.coduel.incremental import IncrementalEM, next_full_pass
from prefduel.policies.coduel.pair_rule import lookahead_pair
from prefduel.policies.coduel.population import Population, component_evidence
from prefduel.policies.coduel.recal import apply_recalibration, fit_recalibration
from prefduel.policies.coduel.restarts import FIRST, replace_population
from prefduel.policies.laplace import LaplaceBelief
from prefduel.policies.loading import POLICIES


@POLICIES.register("coduel")
class CODuel(Policy):
    """CODuel (see the module docstring). Settings, with our defaults (``coduel-seed`` has the
    paper's; the two differ in the refit schedule, the EM and the rescale of A):

    Args:
        population: ``on`` | ``off`` - learn a mixture prior from completed sessions.
        recal: ``on`` | ``off`` - recalibrate the rater feature with a learned 6x6 map.
        pair: ``kg`` | ``lookahead-legacy`` | ``greedy`` - knowledge-gradient pair rule with
            the best persona valued on the decision (the current belief's, the same for every
            pair; the default, better on dev), the legacy rule that values the best persona by
            each component's updated mean (the earlier default; biased upward by Jensen's
            inequality, kept to reproduce earlier figures; ``lookahead`` is accepted as its
            old name), or greedy pairs.
        gate: ``on`` | ``off`` - transfer only while it predicts clicks better.
        alpha: Dirichlet-process concentration (20).
        components: Maximum learned components (16).
        z: Gate threshold in standard errors (0.5).
        nmin: Completed sessions before the gate may open (8).
        bank: Recent questions averaged by the lookahead (16).
        ridge: Ridge on A' (10).
        recal_first: Sessions before the first recalibration (20).
        recal_every: Sessions between refits (10).
        prior_var: Variance of the isotropic prior component (1.0, as ``notransfer``).
        em_iters: Warm-started EM iterations after each session (1; chosen on dev: 1, 2 and 3
            are within noise, 1 is fastest).
        recal_scale: ``on`` | ``off`` - rescale A so that ``A g`` keeps the s.d. of g (on; not
            in the seed).
        recal_prior: ``isotropic`` | ``population`` - prior of the users' posterior means held
            fixed while A is fitted (isotropic, under the raw g; population: the mixture prior,
            under the current A).
        birth_margin: Births when the isotropic prior's evidence is within this many nats of
            the best learned component's (0, the seed's rule).
        split: ``on`` | ``off`` - try a split move of the population (off).
        split_every: Sessions between split attempts (10).
        em: ``incremental`` | ``full`` - after each session, incremental EM over the new user
            and ``em_chunk`` earlier ones (round robin) with bounded full passes on the refit
            schedule (`prefduel.policies.coduel.incremental`), or the full refit over every
            completed user (the earlier default: cost per session grows with n).
        em_chunk: Earlier users whose E-step is redone after each session (200).
        recal_growth: Refits (and full passes) every ``max(recal_every, ceil(recal_growth n))``
            sessions (0.1; 0: every ``recal_every``, the earlier schedule).
        recal_window: Completed users, the most recent, whose clicks A is fitted on (1000;
            0: every completed user, as in the seed).
        pass_budget: User E-steps a full pass may spend: ``min(10, pass_budget // n)`` EM
            iterations after a refit, at least one (3000; ``em=full`` always does 10).
        restarts: k-means starts per mixture size when the population is refitted from
            scratch and kept by BIC (``restarts.py``; with ``em=incremental``; 0: never).
        restart_growth: Restart at a refit point once the users have grown by this factor.
    """

    name = "coduel"
    SETTINGS: ClassVar[dict[str, Any]] = {
        "population": Switch,
        "recal": Switch,
        "pair": Literal["kg", "lookahead-legacy", "lookahead", "greedy"],
        "gate": Switch,
        "alpha": Positive,
        "components": NonNegativeCount,
        "z": Real,
        "nmin": NonNegativeCount,
        "bank": Count,
        "ridge": Positive,
        "recal_first": Count,
        "recal_every": Count,
        "prior_var": Positive,
        "em_iters": Count,
        "recal_scale": Switch,
        "recal_prior": Literal["isotropic", "population"],
        "birth_margin": NonNegative,
        "split": Switch,
        "split_every": Count,
        "em": Literal["incremental", "full"],
        "em_chunk": NonNegativeCount,
        "recal_growth": NonNegative,
        "recal_window": NonNegativeCount,
        "pass_budget": Count,
        "restarts": NonNegativeCount,
        "restart_growth": Positive,
    }

    def __init__(
        self,
        population: Any = "on",
        recal: Any = "on",
        pair: str = "kg",
        gate: Any = "on",
        alpha: float = 20.0,
        components: int = 16,
        z: float = 0.5,
        nmin: int = 8,
        bank: int = 16,
        ridge: float = 10.0,
        recal_first: int = 20,
        recal_every: int = 10,
        prior_var: float = 1.0,
        em_iters: int = 1,
        recal_scale: Any = "on",
        recal_prior: str = "isotropic",
        birth_margin: float = 0.0,
        split: Any = "off",
        split_every: int = 10,
        em: str = "incremental",
        em_chunk: int = 200,
        recal_growth: float = 0.1,
        recal_window: int = 1000,
        pass_budget: int = 3000,
        restarts: int = 0,
        restart_growth: float = 2.0,
    ) -> None:
        given = dict(locals())  # every argument is a declared setting
        self.configure(**{name: given[name] for name in CODuel.SETTINGS})
        if self.pair == "lookahead":  # the legacy rule's old name
            self.pair = "lookahead-legacy"

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self, rng: np.random.Generator, context: dict[str, Any]) -> None:
        super().reset(rng, context)
        self.S = int(context["S"])
        self.layout_ok = self.d == self.K + 1  # [e_p, g]: recalibration applies
        self.pop = Population(
            self.d,
            self.K,
            prior_var=self.prior_var,
            alpha=self.alpha,
            max_components=self.components,
            birth_margin=self.birth_margin,
            split_every=self.split_every if self.split else 0,
        )
        self.matrix: np.ndarray | None = None
        self._raw_fit: np.ndarray | None = None  # last unscaled fit, the next fit's start
        # completed sessions: raw rater scores, pairs and outcomes, padded to S rounds
        self.log_g: list[np.ndarray] = []
        self.log_z: list[np.ndarray] = []  # click features as shown (other feature layouts)
        self.log_first: list[np.ndarray] = []
        self.log_second: list[np.ndarray] = []
        self.log_y: list[np.ndarray] = []
        self._lam = np.zeros((0, self.d, self.d))  # summaries, capacity doubling
        self._h = np.zeros((0, self.d))
        self._held: list[np.ndarray] = []  # raw-feature isotropic posterior means, cached
        self.llr = []
        self.em_state = IncrementalEM(self.pop, self.em_chunk) if self.em == "incremental" else None
        self.next_refit = self.recal_first
        self.full_passes: list[int] = []  # sessions after which every user was revisited
        self.recent: list[np.ndarray] = []  # raw features of recent questions
        self._bank_buf = np.zeros((2 * self.bank, self.K, self.d))
        self._bank_start = self._bank_len = 0
        self.gate_open = False
        self.n_sessions = self.last_restart = 0
        self.transfer_rounds = 0

    def start_student(self) -> None:
        self.belief = MixtureBelief(self.pop.weights(), self.pop.mu, self.pop.cov)
        self.solo = LaplaceBelief.isotropic(self.d, self.prior_var)
        self.session_llr = 0.0
        self.s_g: list[np.ndarray] = []
        self.s_z: list[np.ndarray] = []
        self.s_first: list[int] = []
        self.s_second: list[int] = []
        self.s_y: list[int] = []
        self.t = 0
        self._last: tuple[int, int, np.ndarray] | None = None

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        phi = apply_recalibration(Phi, self.matrix) if self.layout_ok else np.asarray(Phi)
        jitter = 1e-9 * self.rng.random(self.K)  # breaks exact ties, e.g. a zero prior mean
        if self.population and (self.gate_open or not self.gate):
            self.transfer_rounds += 1
            remaining = self.S - self.t - 1
            weights = self.belief.weights
            lookahead = self.pair != "greedy" and remaining > 0 and bool(self.recent)
            if lookahead and weights.max() < 0.999:
                bank = self._bank_buf[self._bank_start : self._bank_start + self._bank_len]
                keep = weights > 1e-4
                w = weights[keep] / weights[keep].sum()
                value = "decision" if self.pair == "kg" else "updated"
                pair, _ = lookahead_pair(
                    w, self.belief.mu[keep], self.belief.sigma[keep], phi, bank, remaining, value
                )
            else:
                pair = top_two(phi @ self.belief.mean() + jitter)
        else:
            pair = top_two(phi @ self.solo.mu + jitter)
        return self._shown(int(pair[0]), int(pair[1]), phi, Phi)

    def _shown(self, i: int, j: int, phi: np.ndarray, Phi: np.ndarray) -> tuple[int, int]:
        """Log the round's pair ``(i, j)`` (features ``phi`` as the learners see them, ``Phi``
        raw) for `update`, the session's summaries and the lookahead's bank; returns it."""
        self._last = (i, j, phi[i] - phi[j])
        self.s_g.append(np.array(Phi[:, -1], dtype=float))
        if not self.layout_ok:
            self.s_z.append(self._last[2])
        self.recent.append(np.array(Phi, dtype=float))
        if len(self.recent) > self.bank:
            self.recent.pop(0)
        self._bank_append(phi)
        return i, j

    def _bank_append(self, phi: np.ndarray) -> None:
        """Keep the lookahead's bank (the last ``bank`` questions, as the learners see them)
        contiguous in a buffer twice its size, so that no round stacks it anew."""
        buf, start, size = self._bank_buf, self._bank_start, self._bank_len
        if start + size == buf.shape[0]:  # full to the end: move the window to the front
            buf[:size] = buf[start : start + size]
            start = self._bank_start = 0
        buf[start + size] = phi
        if size < self.bank:
            self._bank_len += 1
        else:
            self._bank_start += 1

    def _rebuild_bank(self) -> None:
        """The bank under the current A (after a recalibration refit)."""
        self._bank_start = 0
        self._bank_len = len(self.recent)
        if self.recent:
            self._bank_buf[: self._bank_len] = apply_recalibration(
                np.stack(self.recent), self.matrix
            )

    def update(self, outcome: int) -> None:
        if self._last is None:
            raise RuntimeError("update() called before select()")
        i, j, z = self._last
        y = int(outcome)
        p_pop = self.belief.observe(z, y)
        p_solo = self.solo.observe(z, y)
        self.session_llr += math.log(max(p_pop, 1e-300)) - math.log(max(p_solo, 1e-300))
        self.s_first.append(i)
        self.s_second.append(j)
        self.s_y.append(y)
        self.t += 1
        self._last = None

    def end_student(self) -> None:
        self.n_sessions += 1
        self._add_llr(self.session_llr)
        rounds = len(self.s_y)
        pad = self.S - rounds
        g = np.zeros((self.S, self.K))
        if rounds:
            g[:rounds] = np.stack(self.s_g[:rounds])
        self.log_g.append(g)
        if not self.layout_ok:
            z = np.zeros((self.S, self.d))
            if rounds:
                z[:rounds] = np.stack(self.s_z[:rounds])
            self.log_z.append(z)
        self.log_first.append(np.r_[self.s_first, np.zeros(max(pad, 0), int)].astype(int))
        self.log_second.append(np.r_[self.s_second, np.ones(max(pad, 0), int)].astype(int))
        self.log_y.append(np.r_[self.s_y, -np.ones(max(pad, 0), int)].astype(int))
        refit = self.n_sessions == self.next_refit
        if refit:  # the schedule's gaps grow with n: recal_every, then recal_growth x n
            self.next_refit = next_full_pass(self.n_sessions, self.recal_every, self.recal_growth)
        recal = refit and self.recal and self.layout_ok
        if recal:
            self._refit_recalibration()
            self._rebuild_bank()
        if self.population:
            self._learn_population(recal, refit)
        self.gate_open = self._gate()

    def _learn_population(self, recal: bool, refit: bool) -> None:
        """Add the session that just ended to the summaries and refit the population: by
        the full refit of `Population.add_session` (``em=full``) or incremental EM with a
        full pass at each point of the refit schedule (``em=incremental``)."""
        n = self.n_sessions
        self._add_summaries(recal)
        iters = max(self.em_iters, 10) if recal else self.em_iters
        if self.em_state is None:
            self.pop.add_session(self.lam[-1], self.h[-1], self.lam, self.h, iters)
            return
        self.em_state.add_session(self.lam, self.h)
        if refit:  # a bounded full pass: at most pass_budget user E-steps (>= 1 iteration)
            self.em_state.full_pass(self.lam, self.h, min(iters, max(1, self.pass_budget // n)))
            self.full_passes.append(n)
        if self.split and n % self.split_every == 0 and self.pop.try_split(self.lam, self.h):
            self.em_state = IncrementalEM(self.pop, self.em_chunk)  # new components
            self.em_state.full_pass(self.lam, self.h, 1)
        if refit and self.restarts and n >= max(FIRST, self.restart_growth * self.last_restart):
            self.last_restart = n
            if replace_population(self.pop, self.lam, self.h, self.rng, self.restarts):
                self.em_state = IncrementalEM(self.pop, self.em_chunk)
                self.em_state.full_pass(self.lam, self.h, 1)

    def _add_summaries(self, recal: bool) -> None:
        """Add the ended session's summary (after a refit of A, recompute every user's)."""
        n = self.n_sessions
        if recal:
            lam, h, _ = self._summaries(range(n))
            self._grow(n)
            self._lam[:n], self._h[:n] = lam, h
        else:
            # the no-transfer learner made the same Laplace pass from the same isotropic
            # prior over this session's clicks (same features: A did not change during it)
            lam, h = self._solo_summary()
            self._grow(n)
            self._lam[n - 1], self._h[n - 1] = lam, h

    @property
    def lam(self) -> np.ndarray:
        """Likelihood precisions of the completed users ``(n, d, d)`` (a view)."""
        return self._lam[: self.n_sessions]

    @property
    def h(self) -> np.ndarray:
        """Likelihood information vectors of the completed users ``(n, d)`` (a view)."""
        return self._h[: self.n_sessions]

    @property
    def llr(self) -> list[float]:
        """Per completed session, the log-likelihood ratio of the population learner's click
        predictions over the no-transfer learner's (the gate's evidence)."""
        return self._llr

    @llr.setter
    def llr(self, values: list[float]) -> None:
        self._llr = list(values)
        arr = np.asarray(self._llr, dtype=float)
        # running sums for the gate: n, sum and sum of squared deviations (Welford)
        self._llr_n = arr.size
        self._llr_mean = float(arr.mean()) if arr.size else 0.0
        self._llr_m2 = float(((arr - self._llr_mean) ** 2).sum()) if arr.size else 0.0

    def _add_llr(self, value: float) -> None:
        self._llr.append(value)
        self._llr_n += 1
        delta = value - self._llr_mean
        self._llr_mean += delta / self._llr_n
        self._llr_m2 += delta * (value - self._llr_mean)

    def _grow(self, n: int) -> None:
        """Room for ``n`` summaries (capacity doubles: appends cost O(1) amortized)."""
        cap = self._lam.shape[0]
        if n > cap:
            new = max(n, 2 * cap, 64)
            lam, h = np.zeros((new, self.d, self.d)), np.zeros((new, self.d))
            lam[:cap], h[:cap] = self._lam, self._h
            self._lam, self._h = lam, h

    # -- internals ---------------------------------------------------------------------------

    def _click_features(self, users) -> tuple[np.ndarray, np.ndarray]:
        """``z (n, S, d)`` and ``y (n, S)`` of completed users under the current map A."""
        users = list(users)
        g = np.stack([self.log_g[u] for u in users])  # (n, S, K)
        first = np.stack([self.log_first[u] for u in users])
        second = np.stack([self.log_second[u] for u in users])
        y = np.stack([self.log_y[u] for u in users])
        eye = np.eye(self.K)
        if self.layout_ok:
            gg = g if self.matrix is None else np.einsum("pq,nsq->nsp", self.matrix, g)
            gi = np.take_along_axis(gg, first[..., None], axis=2)[..., 0]
            gj = np.take_along_axis(gg, second[..., None], axis=2)[..., 0]
            z = np.concatenate([eye[first] - eye[second], (gi - gj)[..., None]], axis=-1)
        else:  # other feature layouts: no recalibration, the stored click features as shown
            z = np.stack([self.log_z[u] for u in users])
        valid = y >= 0
        z = z * valid[..., None]
        return z, np.where(valid, y, 0)

    def _solo_summary(self) -> tuple[np.ndarray, np.ndarray]:
        """Likelihood summary ``(lam (d, d), h (d,))`` of the session that just ended, read off
        the no-transfer learner's posterior (as `likelihood_summaries` would compute)."""
        prec = np.linalg.inv(self.solo.sigma)
        prec = 0.5 * (prec + prec.T)
        return prec - np.eye(self.d) / self.prior_var, prec @ self.solo.mu

    def _summaries(self, users) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        z, y = self._click_features(users)
        return likelihood_summaries(z, y, self.prior_var)

    def _refit_recalibration(self) -> None:
        """Refit A from the raw rater scores (never composed with the previous A), on the
        clicks of the last ``recal_window`` completed users.

        Users are held at their posterior means (see `_held_thetas`). Posterior means are
        shrunk toward zero, which the fit would otherwise undo by inflating A; with
        ``recal_scale`` on, A is therefore rescaled so that ``A g`` keeps the s.d. of ``g``
        over the logged questions: recalibration changes how the rater's scores are weighed
        across personas, and each user's own weight on g keeps the scale.
        """
        users = self._window()
        theta = self._held_thetas()
        g = np.concatenate([self.log_g[u] for u in users])
        first = np.concatenate([self.log_first[u] for u in users])
        second = np.concatenate([self.log_second[u] for u in users])
        y = np.concatenate([self.log_y[u] for u in users])
        th = np.repeat(theta, self.S, axis=0)
        valid = y >= 0
        matrix = fit_recalibration(
            first[valid],
            second[valid],
            y[valid],
            g[valid],
            th[valid],
            ridge=self.ridge,
            start=self._raw_fit,
        )
        self._raw_fit = matrix
        raw_sd = g[valid].std()
        new_sd = (g[valid] @ matrix.T).std()
        if self.recal_scale and raw_sd > 0 and new_sd > 0:
            matrix = matrix * (raw_sd / new_sd)
        self.matrix = matrix

    def _window(self) -> range:
        """The completed users whose clicks the recalibration is fitted on."""
        if not self.recal_window:  # every completed user
            return range(self.n_sessions)
        return range(max(0, self.n_sessions - self.recal_window), self.n_sessions)

    def _held_thetas(self) -> np.ndarray:
        """Posterior means ``(n, d)`` of the users of `_window`, held fixed while A is fitted.

        ``recal_prior=isotropic``: under the isotropic prior and the raw features, so each refit
        starts from the same footing (a user's never changes: computed once, for the users
        completed since the last refit, in one batch). ``population``: under the population's
        mixture prior and the current features (those the population was fitted under), the
        mixture of the component posteriors' means weighted by each user's responsibilities.
        """
        users = self._window()
        if self.recal_prior == "isotropic":
            done = len(self._held)
            if done < self.n_sessions:
                current, self.matrix = self.matrix, None
                _, _, theta = self._summaries(range(done, self.n_sessions))
                self.matrix = current
                self._held.extend(theta)
            return np.stack(self._held[users.start : users.stop])
        lam, h, _ = self._summaries(users)
        loglik, m, _ = component_evidence(lam, h, self.pop.mu, self.pop.cov)
        logr = loglik + np.log(np.maximum(self.pop.weights(), 1e-300))
        r = np.exp(logr - logr.max(axis=1, keepdims=True))
        r /= r.sum(axis=1, keepdims=True)
        return np.einsum("nc,ncd->nd", r, m)

    def _gate(self) -> bool:
        if not self.population:
            return False
        if not self.gate:
            return True
        n = self._llr_n
        if n < max(self.nmin, 2):
            return False
        se = math.sqrt(self._llr_m2 / (n - 1)) / math.sqrt(n)
        return bool(self._llr_mean > self.z * se)
