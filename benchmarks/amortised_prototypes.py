"""Amortised inference for CODuel: the belief features, the recorder and the corrected policy.

``amortised_inference.py`` says what the method is, trains the model and prints the figures.
Nothing here is registered. The model is persona-equivariant: one small network maps each
persona's features (CODuel's belief about that persona's utility on the current question, the
no-transfer learner's, the rater's score, and session-level context) to a correction of its
utility. No persona or profile identity is an input, yet trained on ``dev`` worlds it learns
``dev``'s profiles (the transfer probe in ``amortised_inference.py``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from prefduel.core import jit
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


def persona_features(policy: AmortisedCODuel, phi: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    """``(K, len(FEATURES))`` features of the current question at select time."""
    if jit.ENABLED:
        b, out = policy.belief, policy._features_buf
        _features_kernel(
            b.weights, b.mu, b.sigma, policy.solo.mu, policy.solo.sigma, policy.prior_theta,
            phi, np.ascontiguousarray(Phi[:, -1], dtype=float), policy._won_lost,
            policy.t / policy.S, math.log1p(policy.n_sessions), max(policy.t, 1),
            float(policy.population and (policy.gate_open or not policy.gate)), out,
        )
        return out.copy()
    return _features_numpy(policy, phi, Phi)


@jit.compiled()
def _features_kernel(w, mu, sigma, solo_mu, solo_sigma, prior, phi, g_raw, won_lost, rnd,
                     users, played, active, out):  # fmt: skip
    """`persona_features` compiled: the same columns, in loops."""
    n_comp, d = mu.shape
    k = phi.shape[0]
    top, entropy = 0, 0.0
    for c in range(n_comp):
        if w[c] > w[top]:
            top = c
        if w[c] > 0.0:
            entropy -= w[c] * np.log(w[c])
    m, ms, m0, g, gr = np.zeros(k), np.zeros(k), np.zeros(k), phi[:, d - 1], g_raw
    for p in range(k):
        second, within, s_solo = 0.0, 0.0, 0.0
        for c in range(n_comp):
            u = 0.0
            q = 0.0
            for a in range(d):
                u += mu[c, a] * phi[p, a]
                row = 0.0
                for e in range(d):
                    row += sigma[c, a, e] * phi[p, e]
                q += phi[p, a] * row
            m[p] += w[c] * u
            second += w[c] * (q + u * u)
            if c == top:
                within = q
        for a in range(d):
            ms[p] += solo_mu[a] * phi[p, a]
            m0[p] += prior[a] * phi[p, a]
            row = 0.0
            for e in range(d):
                row += solo_sigma[a, e] * phi[p, e]
            s_solo += phi[p, a] * row
        out[p, 2] = second
        out[p, 3] = np.sqrt(max(within, 0.0))
        out[p, 6] = np.sqrt(max(s_solo, 0.0))
    for p in range(k):
        out[p, 2] = np.sqrt(max(out[p, 2] - m[p] * m[p], 0.0))
        out[p, 0] = m[p] - m.mean()
        out[p, 1] = m.max() - m[p]
        out[p, 4] = ms[p] - ms.mean()
        out[p, 5] = ms.max() - ms[p]
        out[p, 7] = g[p] - g.mean()
        out[p, 8] = gr[p] - gr.mean()
        out[p, 9] = rnd
        out[p, 10] = users
        out[p, 11] = entropy
        out[p, 12] = active
        out[p, 13] = m0[p] - m0.mean()
        out[p, 14] = won_lost[p, 0] / played
        out[p, 15] = won_lost[p, 1] / played


def _features_numpy(policy: AmortisedCODuel, phi: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    """`persona_features` in numpy (without numba)."""
    b = policy.belief
    w = b.weights
    u = b.mu @ phi.T  # (C, K)
    m = w @ u
    quad = ((b.sigma @ phi.T) * phi.T).sum(axis=1)  # (C, K): phi_k' Sigma_c phi_k
    top = int(np.argmax(w))
    ms = phi @ policy.solo.mu
    ss = ((policy.solo.sigma @ phi.T) * phi.T).sum(axis=0)
    m0 = phi @ policy.prior_theta
    out = policy._features_buf
    k = phi.shape[0]
    out[:, 0] = m - m.sum() / k
    out[:, 1] = m.max() - m
    out[:, 2] = w @ (quad + u * u) - m * m
    out[:, 3] = quad[top]
    out[:, 4] = ms - ms.sum() / k
    out[:, 5] = ms.max() - ms
    out[:, 6] = ss
    out[:, 2:4] = np.sqrt(np.maximum(out[:, 2:4], 0.0))
    out[:, 6] = np.sqrt(np.maximum(ss, 0.0))
    out[:, 7] = phi[:, -1] - phi[:, -1].sum() / k
    out[:, 8] = Phi[:, -1] - Phi[:, -1].sum() / k
    out[:, 9] = policy.t / policy.S
    out[:, 10] = math.log1p(policy.n_sessions)
    out[:, 11] = -(w * np.log(np.maximum(w, 1e-300))).sum()
    out[:, 12] = float(policy.population and (policy.gate_open or not policy.gate))
    out[:, 13] = m0 - m0.sum() / k
    out[:, 14:16] = policy._won_lost / max(policy.t, 1)
    return out.copy()


class Network:
    """A small tanh MLP in numpy (weights from scikit-learn's ``MLPRegressor``), with the
    feature standardisation folded in: cheap enough to run at every round."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.mean, self.scale = arrays["x_mean"], arrays["x_scale"]
        self.columns = arrays.get("columns", np.arange(len(FEATURES)))
        n = sum(1 for key in arrays if key.startswith("W"))
        self.layers = [(arrays[f"W{i}"], arrays[f"b{i}"]) for i in range(n)]
        self.y_scale = float(arrays["y_scale"])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        h = (x[:, self.columns] - self.mean) / self.scale
        for w, b in self.layers[:-1]:
            h = np.tanh(h @ w + b)
        w, b = self.layers[-1]
        return (h @ w + b)[..., 0] * self.y_scale


class AmortisedCODuel(CODuel):
    """CODuel whose immediate regret is taken from the amortised belief.

    CODuel's ``kg`` value of a pair is the regret now under its belief plus the expected
    regret over the remaining rounds; the regret now differs between pairs only by the two
    personas' mixture-mean utilities ``m``. Here those are replaced by the corrected utilities
    ``m + strength * network(features)`` and the future term is scaled by ``future`` (the
    correction shrinks ``m``, whose spread the future term shares). Where CODuel plays greedy
    (no-transfer learner while the gate is closed, or one component left), the pair is the top
    two of the corrected utilities. Without a network (``network = None``) it plays CODuel's
    pairs. With ``record`` a list and ``utilities`` the world's ``U`` (simulation only: how
    training data are made, never how a policy plays), each round appends its features and
    target: the true utilities in logits, centred over personas, minus ``m`` centred.
    """

    network: Network | None = None

    def __init__(self, strength: float = 1.0, future: float = 1.0, **settings) -> None:
        super().__init__(**settings)
        self.strength, self.future = strength, future
        self.record: list[tuple[np.ndarray, np.ndarray]] | None = None
        self.utilities: np.ndarray | None = None

    def reset(self, rng, context) -> None:
        super().reset(rng, context)
        self._features_buf = np.empty((self.K, len(FEATURES)))

    def start_student(self) -> None:
        super().start_student()
        self.prior_theta = self.belief.mean().copy()
        self._won_lost = np.zeros((self.K, 2))

    def update(self, outcome: int) -> None:
        i, j, _ = self._last
        winner, loser = (i, j) if int(outcome) == 1 else (j, i)
        self._won_lost[winner, 0] += 1.0
        self._won_lost[loser, 1] += 1.0
        super().update(outcome)

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        phi = apply_recalibration(Phi, self.matrix) if self.layout_ok else np.asarray(Phi)
        x = persona_features(self, phi, Phi)
        if self.record is not None:
            u = CLICK_BETA * self.utilities[self.n_sessions, self.t]
            self.record.append((x, u - u.mean() - x[:, 0]))
        delta = 0.0 if self.network is None else self.strength * self.network(x)
        i, j = self._pair(phi, x[:, 0] + delta, self.network is None)
        return self._shown(i, j, phi, Phi)

    def _pair(self, phi: np.ndarray, corrected: np.ndarray, plain: bool) -> tuple[int, int]:
        """CODuel's pair rule on the corrected utilities (``plain``: CODuel's own pair)."""
        jitter = 1e-9 * self.rng.random(self.K)
        if not (self.population and (self.gate_open or not self.gate)):
            solo = phi @ self.solo.mu if plain else corrected
            return tuple(int(v) for v in top_two(solo + jitter))
        self.transfer_rounds += 1
        remaining = self.S - self.t - 1
        weights = self.belief.weights
        if self.pair == "greedy" or remaining <= 0 or not self.recent or weights.max() >= 0.999:
            return tuple(int(v) for v in top_two(corrected + jitter))
        bank = self._bank_buf[self._bank_start : self._bank_start + self._bank_len]
        keep = weights > 1e-4
        w = weights[keep] / weights[keep].sum()
        pair, values = lookahead_pair(
            w, self.belief.mu[keep], self.belief.sigma[keep], phi, bank, remaining, "decision"
        )
        if plain:
            return int(pair[0]), int(pair[1])
        first, second = _pairs(self.K)
        # CODuel's value plus (m_i + m_j) is its future term (plus a constant): scaled by
        # ``future``, with the regret now from the corrected utilities
        m = self._features_buf[:, 0]
        future = self.future * (values + m[first] + m[second])
        values = future - corrected[first] - corrected[second]
        best = int(np.argmin(values))
        i, j = int(first[best]), int(second[best])
        return (j, i) if corrected[j] > corrected[i] else (i, j)


@functools.cache
def _pairs(k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(k, 1)
