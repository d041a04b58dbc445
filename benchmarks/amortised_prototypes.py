"""Amortised inference for CODuel: the belief features, the recorder and the corrected policy.

``amortised_inference.py`` says what the method is, trains the model and prints the figures.
Nothing here is registered. The model is persona-equivariant: one small network maps each
persona's features (CODuel's belief about that persona's utility on the current question, the
no-transfer learner's, the rater's score, and session-level context) to a correction of its
utility; no persona or profile identity is an input, so it cannot memorise ``dev``'s profiles.
"""

from __future__ import annotations

import math

import numpy as np

from prefduel.core.btl import top_two
from prefduel.policies.base import CLICK_BETA
from prefduel.policies.coduel.pair_rule import lookahead_pair
from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.coduel.recal import apply_recalibration

#: Names of the per-persona features of `persona_features`, in column order.
FEATURES = (
    "mix_mean",  # CODuel's mixture-mean utility, centred over personas (logits)
    "mix_gap",  # best persona's mixture mean minus this one's
    "mix_sd",  # mixture s.d. of this persona's utility
    "mix_sd_within",  # s.d. inside the most responsible component
    "solo_mean",  # no-transfer posterior mean, centred
    "solo_gap",
    "solo_sd",
    "g",  # rater score as the learner sees it (after A), centred
    "g_raw",  # raw rater score, centred
    "round",  # t / S
    "users",  # log(1 + completed users)
    "entropy",  # entropy of the component weights
    "active",  # 1 when the population learner selects (gate open)
    "prior_mean",  # utility under the population's prior mean (before this user's clicks)
    "won",  # clicks this persona won in this session, per round played
    "lost",  # clicks it lost, per round played
)


def persona_features(policy: CODuel, phi: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    """``(K, len(FEATURES))`` features of the current question for a CODuel at select time."""
    b = policy.belief
    w = b.weights
    u = b.mu @ phi.T  # (C, K)
    m = w @ u
    quad = np.einsum("kd,cde,ke->ck", phi, b.sigma, phi)
    sd = np.sqrt(np.maximum(w @ (quad + u * u) - m * m, 0.0))
    top = int(np.argmax(w))
    ms = phi @ policy.solo.mu
    ss = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", phi, policy.solo.sigma, phi), 0.0))
    g, g_raw = phi[:, -1], np.asarray(Phi[:, -1], float)
    entropy = float(-(w * np.log(np.maximum(w, 1e-300))).sum())
    active = float(policy.population and (policy.gate_open or not policy.gate))
    k = phi.shape[0]
    m0 = phi @ policy.prior_theta
    t = len(policy.s_y)
    won = np.zeros(k)
    lost = np.zeros(k)
    if t:
        y = np.asarray(policy.s_y, bool)
        first, second = np.asarray(policy.s_first), np.asarray(policy.s_second)
        won = np.bincount(np.where(y, first, second), minlength=k) / t
        lost = np.bincount(np.where(y, second, first), minlength=k) / t
    out = np.empty((k, len(FEATURES)))
    out[:, 0] = m - m.mean()
    out[:, 1] = m.max() - m
    out[:, 2] = sd
    out[:, 3] = np.sqrt(np.maximum(quad[top], 0.0))
    out[:, 4] = ms - ms.mean()
    out[:, 5] = ms.max() - ms
    out[:, 6] = ss
    out[:, 7] = g - g.mean()
    out[:, 8] = g_raw - g_raw.mean()
    out[:, 9] = policy.t / policy.S
    out[:, 10] = math.log1p(policy.n_sessions)
    out[:, 11] = entropy
    out[:, 12] = active
    out[:, 13] = m0 - m0.mean()
    out[:, 14] = won
    out[:, 15] = lost
    return out


class _Prior:
    """Keeps the population's prior mean at the start of each session (a feature)."""

    def start_student(self) -> None:
        super().start_student()
        self.prior_theta = self.belief.mean().copy()


class RecordingCODuel(_Prior, CODuel):
    """CODuel (any settings) that records, at every round, the features of `persona_features`
    and the target: the user's true utilities of the question in logits, centred over personas,
    minus CODuel's centred mixture mean (the belief's error). ``utilities`` is the world's
    ``U`` (simulation only: this is how training data is made, never how a policy plays)."""

    utilities: np.ndarray | None = None

    def reset(self, rng, context) -> None:
        super().reset(rng, context)
        self.rows_x: list[np.ndarray] = []
        self.rows_y: list[np.ndarray] = []

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        phi = apply_recalibration(Phi, self.matrix) if self.layout_ok else np.asarray(Phi)
        x = persona_features(self, phi, Phi)
        u = CLICK_BETA * self.utilities[self.n_sessions, self.t]
        self.rows_x.append(x)
        self.rows_y.append(u - u.mean() - x[:, 0])
        return super().select(Phi)


class Network:
    """A small tanh MLP in numpy (weights from scikit-learn's ``MLPRegressor``), with the
    feature standardisation folded in: cheap enough to run at every round."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.mean, self.scale = arrays["x_mean"], arrays["x_scale"]
        n = sum(1 for key in arrays if key.startswith("W"))
        self.layers = [(arrays[f"W{i}"], arrays[f"b{i}"]) for i in range(n)]
        self.y_scale = float(arrays["y_scale"])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        h = (x - self.mean) / self.scale
        for w, b in self.layers[:-1]:
            h = np.tanh(h @ w + b)
        w, b = self.layers[-1]
        return (h @ w + b)[..., 0] * self.y_scale


class AmortisedCODuel(_Prior, CODuel):
    """CODuel whose immediate regret is taken from the amortised belief.

    CODuel's ``kg`` value of a pair is the regret now under its belief plus the expected
    regret over the remaining rounds; the regret now differs between pairs only by the two
    personas' mixture-mean utilities. Here those are replaced (scaled by ``strength``) by the
    corrected utilities ``m + network(features)``; the future term is CODuel's. Where CODuel
    plays greedy (no-transfer learner, or one component), the pair is the top two of the
    corrected utilities of the learner that selects.
    """

    network: Network | None = None

    def __init__(self, strength: float = 1.0, future: float = 1.0, **settings) -> None:
        super().__init__(**settings)
        self.strength, self.future = strength, future

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        phi = apply_recalibration(Phi, self.matrix) if self.layout_ok else np.asarray(Phi)
        i, j = self._pair(phi, Phi)
        self._last = (i, j, phi[i] - phi[j])
        self.s_g.append(np.array(Phi[:, -1], dtype=float))
        if not self.layout_ok:
            self.s_z.append(self._last[2])
        self.recent.append(np.array(Phi, dtype=float))
        if len(self.recent) > self.bank:
            self.recent.pop(0)
        self._bank_append(phi)
        return i, j

    def _pair(self, phi: np.ndarray, Phi: np.ndarray) -> tuple[int, int]:
        x = persona_features(self, phi, Phi)
        delta = self.strength * self.network(x)
        jitter = 1e-9 * self.rng.random(self.K)
        if not (self.population and (self.gate_open or not self.gate)):
            ms = phi @ self.solo.mu
            return tuple(int(v) for v in top_two(ms - ms.mean() + delta + jitter))
        self.transfer_rounds += 1
        remaining = self.S - self.t - 1
        weights = self.belief.weights
        corrected = x[:, 0] + delta
        if self.pair == "greedy" or remaining <= 0 or not self.recent or weights.max() >= 0.999:
            return tuple(int(v) for v in top_two(corrected + jitter))
        bank = self._bank_buf[self._bank_start : self._bank_start + self._bank_len]
        keep = weights > 1e-4
        w = weights[keep] / weights[keep].sum()
        (i, j), values = lookahead_pair(
            w, self.belief.mu[keep], self.belief.sigma[keep], phi, bank, remaining, "decision"
        )
        pairs = np.triu_indices(self.K, 1)
        # CODuel's value less its regret now (which differs between pairs by -(m_i + m_j))
        # is the future term: scaled by ``future``, plus the corrected regret now
        now = x[pairs[0], 0] + x[pairs[1], 0]
        values = self.future * (values + now) - (corrected[pairs[0]] + corrected[pairs[1]])
        best = int(np.argmin(values))
        i, j = int(pairs[0][best]), int(pairs[1][best])
        return (j, i) if corrected[j] > corrected[i] else (i, j)
