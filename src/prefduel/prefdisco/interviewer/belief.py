"""The interviewer's belief about one user, and the expected information gain of a question.

A `Belief` holds the evidence gathered so far (each attribute's observed *state*, ``absent``
or a value; the *hints* of a vague user, present with the value among a set; and the
importance levels heard) on top of an `InterviewPrior` for the task's domain. Its
predictive distribution of every unobserved attribute's state is:

1. **the mixture posterior**: ``P(type | evidence) ∝ π_type Π_observed θ[type, a, state]``
   (a hint contributes ``Σ_{s in hint} θ[type, a, s]``), then ``P(Z_b = s) = Σ_type
   P(type | evidence) θ[type, b, s]``, restricted to the hint for a hinted attribute;
2. **the structure of sparse profiles**: attributes of a family that already holds
   ``family_cap`` known preferences are absent; the presence probabilities of the others are
   rescaled so that they add up to the expected number of preferences still hidden,
   ``E[k - f | k >= f]`` with ``f`` found so far (``k`` from the training profiles).

The quantity the interviewer wants to learn is the rubric-weighted state of the profile:

    U(evidence) = Σ_b ω_b H(Z_b | evidence) + λ Σ_{a present, level unknown} w̄_a H(L)

where ``ω_b`` is b's mean rubric weight when present (times the remaining-weight factor once
importance levels are known: a ``major`` preference leaves less weight to find), ``H`` the
entropy in nats, ``L`` the coarse importance level and ``λ`` ``importance_weight``. A
question's expected information gain is ``U(evidence) - E_reply[U(evidence + reply)]`` with
the reply drawn from the predictive distribution; for an attribute already observed it is 0
(the reply is known). `Belief.gains` scores every candidate question at once (numpy, batched).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.interviewer.prior import (
    ABSENT,
    LEVELS,
    DomainPrior,
    InterviewPrior,
    state_index,
    valid_states,
)

KINDS = ("value", "importance")
_FLOOR = 1e-12


@dataclass(frozen=True)
class Candidate:
    """A question the interviewer may ask.

    Attributes:
        attribute: Attribute id.
        kind: ``value`` (which value the user prefers, if any) or ``importance`` (how much a
            known preference matters: a coarse level).
    """

    attribute: str
    kind: str = "value"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {list(KINDS)}, got {self.kind!r}")

    def to_json(self) -> dict[str, str]:
        """A JSON-ready ``dict``."""
        return {"attribute": self.attribute, "kind": self.kind}


@dataclass(frozen=True)
class Evidence:
    """What one reply said about one attribute.

    Attributes:
        attribute: Attribute id.
        kind: ``value``, ``importance`` or ``hint`` (a vague reply: the attribute is in the
            profile and its value is one of ``among``).
        value: The value id (``value``; None: no particular preference, i.e. absent) or the
            level name of `LEVELS` (``importance``); None for a hint.
        source: How it was read: ``template`` (the simulated user's format) or ``fallback``
            (labels found in free text).
        among: The candidate value ids of a hint.
    """

    attribute: str
    kind: str
    value: str | None
    source: str = "template"
    among: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return {
            "attribute": self.attribute,
            "kind": self.kind,
            "value": self.value,
            "among": list(self.among),
            "source": self.source,
        }


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy in nats along ``axis`` (0 log 0 = 0)."""
    p = np.clip(p, 0.0, 1.0)
    return -(np.where(p > _FLOOR, p * np.log(np.maximum(p, _FLOOR)), 0.0)).sum(axis=axis)


@dataclass(frozen=True)
class _Tables:
    """Arrays derived once from the prior, the domain and the taxonomy."""

    domain: DomainPrior
    valid: np.ndarray  # (A, S)
    family: np.ndarray  # (A, F) one-hot
    family_cap: int
    remaining: np.ndarray  # remaining[f] = E[k - f | k >= f]
    per_present: np.ndarray  # per_present[f] = E[1 / k | k >= max(f, 1)]
    level_probs: np.ndarray
    level_means: np.ndarray
    level_entropy: float


def _tables(prior: InterviewPrior, domain: str, taxonomy: Taxonomy) -> _Tables:
    prior.check_taxonomy(taxonomy)
    families = sorted({a.family for a in taxonomy})
    family = np.zeros((len(taxonomy), len(families)))
    for i, a in enumerate(taxonomy):
        family[i, families.index(a.family)] = 1.0
    ks = np.arange(len(prior.k_probs))
    remaining = np.zeros(len(taxonomy) + 1)
    per_present = np.zeros(len(taxonomy) + 1)
    for f in range(len(taxonomy) + 1):
        mass = prior.k_probs * (ks >= max(f, 1))
        if mass.sum() > 0:
            remaining[f] = float((mass * (ks - f)).sum() / mass.sum())
            per_present[f] = float((mass / np.maximum(ks, 1)).sum() / mass.sum())
    return _Tables(
        domain=prior.domain(domain),
        valid=valid_states(taxonomy),
        family=family,
        family_cap=prior.family_cap,
        remaining=remaining,
        per_present=per_present,
        level_probs=prior.level_probs,
        level_means=prior.level_means,
        level_entropy=float(entropy(prior.level_probs)),
    )


def _restrict(raw: np.ndarray, hinted: np.ndarray, hint: np.ndarray) -> np.ndarray:
    """The predictive with each hinted attribute's states restricted to its hint."""
    if not hinted.any():
        return raw
    restricted = raw * hint[None]
    restricted = restricted / np.maximum(restricted.sum(axis=-1, keepdims=True), _FLOOR)
    return np.where(hinted[..., None], restricted, raw)


def _uncertainty(
    t: _Tables,
    post: np.ndarray,
    states: np.ndarray,
    levels: np.ndarray,
    weights: tuple[float, float],
    hint: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """U and the adjusted predictive for a batch of evidence sets.

    Args:
        t: The tables.
        post: ``(B, K)`` type posteriors.
        states: ``(B, A)`` observed state per attribute, -1 when unobserved.
        levels: ``(B, A)`` observed importance level, -1 when unknown.
        weights: ``(presence_weight, importance_weight)``.
        hint: ``(A, S)`` the value states a vague reply left possible (all False: no hint);
            a hinted attribute is present, its value uncertain within the hint.

    Returns:
        ``U (B,)`` and the predictive ``(B, A, S)`` (observed attributes one-hot).
    """
    observed = states >= 0
    hinted = hint.any(axis=1)[None, :] & ~observed
    raw = _restrict(np.einsum("bk,kas->bas", post, t.domain.theta), hinted, hint)
    present = (observed & (states > ABSENT)) | hinted
    found = present.sum(axis=1)
    full = (present.astype(float) @ t.family >= t.family_cap).astype(float) @ t.family.T > 0
    p_raw = 1.0 - raw[..., ABSENT]
    p = np.where(observed | full | hinted, 0.0, p_raw)
    total = p.sum(axis=1)
    scale = np.where(total > _FLOOR, t.remaining[found] / np.maximum(total, _FLOOR), 0.0)
    p = np.clip(p * scale[:, None], 0.0, 1.0 - 1e-9)
    values = raw[..., 1:] / np.maximum(p_raw, _FLOOR)[..., None]
    h_presence = entropy(np.stack([p, 1.0 - p], axis=-1))
    presence_weight, importance_weight = weights
    h = np.where(observed, 0.0, presence_weight * h_presence + p * entropy(values))
    h = np.where(hinted, entropy(values), h)
    known_levels = present & (levels >= 0)
    n_known = known_levels.sum(axis=1)
    unit = t.per_present[found]
    heard = np.where(known_levels, t.level_means[np.maximum(levels, 0)], 0.0).sum(axis=1)
    left = np.maximum(1.0 - heard - (found - n_known) * unit, 0.05)
    expected_left = np.maximum(1.0 - found * unit, 0.05)
    mass = np.where(n_known > 0, left / expected_left, 1.0)
    weight = t.domain.mean_weight[None, :]
    u = (weight * mass[:, None] * h).sum(axis=1)
    pending = present & (levels < 0)
    u = u + importance_weight * t.level_entropy * (weight * pending).sum(axis=1)
    p = np.where(hinted, 1.0, p)
    predictive = np.concatenate([(1.0 - p)[..., None], p[..., None] * values], axis=-1)
    predictive = predictive * t.valid[None]
    rows, cols = np.nonzero(observed)
    predictive[rows, cols] = 0.0
    predictive[rows, cols, states[rows, cols]] = 1.0
    return u, predictive


@dataclass(frozen=True)
class Belief:
    """Evidence about one user on top of the prior (immutable: `update` returns a new one).

    Args:
        prior: The learned prior.
        domain: The task's domain.
        taxonomy: The taxonomy the prior was learned for.
        importance_weight: λ, the weight of importance uncertainty relative to value
            uncertainty (0: importance questions are never worth asking).
        presence_weight: Weight of the uncertainty about whether an attribute is present.
        states: Attribute id -> observed state (`state_index`).
        levels: Attribute id -> observed importance level (index into `LEVELS`).
        hints: Attribute id -> the value states a vague reply left possible.
        asked: Questions already asked.
    """

    prior: InterviewPrior
    domain: str
    taxonomy: Taxonomy
    importance_weight: float = 0.5
    presence_weight: float = 1.0
    states: Mapping[str, int] = field(default_factory=dict)
    levels: Mapping[str, int] = field(default_factory=dict)
    hints: Mapping[str, frozenset[int]] = field(default_factory=dict)
    asked: frozenset[Candidate] = frozenset()
    _t: _Tables | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._t is None:
            object.__setattr__(self, "_t", _tables(self.prior, self.domain, self.taxonomy))

    @property
    def _weights(self) -> tuple[float, float]:
        return (self.presence_weight, self.importance_weight)

    @property
    def tables(self) -> _Tables:
        """The derived arrays (built once per episode)."""
        assert self._t is not None
        return self._t

    def update(self, evidence: Evidence) -> Belief:
        """The belief with one more piece of evidence (later evidence replaces earlier; a hint
        never replaces an observed value)."""
        if evidence.kind == "hint":
            if evidence.attribute in self.states:
                return self
            among = frozenset(
                state_index(self.taxonomy, evidence.attribute, v) for v in evidence.among
            )
            if not among:
                raise ValueError(f"hint about {evidence.attribute}: no candidate values")
            return replace(self, hints={**self.hints, evidence.attribute: among})
        if evidence.kind == "importance":
            if evidence.value not in LEVELS:
                raise ValueError(
                    f"importance level: expected one of {LEVELS}, got {evidence.value}"
                )
            return replace(
                self, levels={**self.levels, evidence.attribute: LEVELS.index(evidence.value)}
            )
        state = state_index(self.taxonomy, evidence.attribute, evidence.value)
        hints = {a: h for a, h in self.hints.items() if a != evidence.attribute}
        return replace(self, states={**self.states, evidence.attribute: state}, hints=hints)

    def mark_asked(self, candidate: Candidate) -> Belief:
        """The belief with ``candidate`` excluded from later questions."""
        return replace(self, asked=self.asked | {candidate})

    def known(self) -> dict[str, str | None]:
        """Attribute id -> observed value (None: absent)."""
        return {
            a: None if s == ABSENT else self.taxonomy[a].values[s - 1].value
            for a, s in self.states.items()
        }

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Type posterior, states, levels and the hint mask ``(A, S)``."""
        t = self.tables
        ids = self.taxonomy.ids
        states = np.full(len(ids), -1)
        levels = np.full(len(ids), -1)
        hint = np.zeros(t.valid.shape, dtype=bool)
        log_post = np.log(t.domain.mixture).copy()
        for i, a in enumerate(ids):
            if a in self.states:
                states[i] = self.states[a]
                log_post += np.log(np.maximum(t.domain.theta[:, i, self.states[a]], _FLOOR))
            elif a in self.hints:
                hint[i, sorted(self.hints[a])] = True
                log_post += np.log(np.maximum(t.domain.theta[:, i, hint[i]].sum(axis=1), _FLOOR))
            if a in self.levels:
                levels[i] = self.levels[a]
        post = np.exp(log_post - log_post.max())
        return post / post.sum(), states, levels, hint

    def _evaluate(self) -> tuple[np.ndarray, np.ndarray]:
        post, states, levels, hint = self._arrays()
        return _uncertainty(
            self.tables, post[None], states[None], levels[None], self._weights, hint
        )

    def uncertainty(self) -> float:
        """U(evidence): the rubric-weighted entropy left (nats)."""
        return float(self._evaluate()[0][0])

    def predictive(self) -> np.ndarray:
        """``(A, S)`` probability of each state of each attribute (observed: one-hot)."""
        return self._evaluate()[1][0]

    def presence(self) -> dict[str, float]:
        """Attribute id -> probability that it is in the hidden profile."""
        pred = self.predictive()
        return {a: float(1.0 - pred[i, ABSENT]) for i, a in enumerate(self.taxonomy.ids)}

    def candidates(self, importance: bool = False) -> list[Candidate]:
        """Questions still worth considering: the value of every unobserved attribute and, with
        ``importance``, the level of every preference found; none asked before."""
        out = [Candidate(a) for a in self.taxonomy.ids if a not in self.states]
        if importance:
            out += [
                Candidate(a, "importance")
                for a in self.taxonomy.ids
                if self._present(a) and a not in self.levels
            ]
        return [c for c in out if c not in self.asked]

    def _present(self, attribute: str) -> bool:
        """Whether a reply said the attribute is in the profile (a value or a hint)."""
        return self.states.get(attribute, ABSENT) != ABSENT or attribute in self.hints

    def gain(self, candidate: Candidate) -> float:
        """Expected information gain of one question (0 if its answer is already known)."""
        if candidate.kind == "value" and candidate.attribute in self.states:
            return 0.0
        if candidate.kind == "importance" and (
            candidate.attribute in self.levels or not self._present(candidate.attribute)
        ):
            return 0.0
        return dict(self._gains([candidate]))[candidate]

    def gains(self, importance: bool = False) -> list[tuple[Candidate, float]]:
        """Every candidate with its expected gain, best first (ties: taxonomy order, values
        before importance)."""
        scored = self._gains(self.candidates(importance))
        order = sorted(range(len(scored)), key=lambda i: (-round(scored[i][1], 12), i))
        return [scored[i] for i in order]

    def _gains(self, candidates: list[Candidate]) -> list[tuple[Candidate, float]]:
        if not candidates:
            return []
        t = self.tables
        post, states, levels, hint = self._arrays()
        u0, pred = _uncertainty(t, post[None], states[None], levels[None], self._weights, hint)
        index = {a: i for i, a in enumerate(self.taxonomy.ids)}
        rows: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, float]] = []
        for c, candidate in enumerate(candidates):
            i = index[candidate.attribute]
            if candidate.kind == "value":
                # the posterior already holds a hint's likelihood: a value within it replaces it
                hinted = t.domain.theta[:, i, hint[i]].sum(axis=1) if hint[i].any() else 1.0
                for s in np.nonzero(t.valid[i])[0]:
                    p = post * t.domain.theta[:, i, s] / np.maximum(hinted, _FLOOR)
                    st = states.copy()
                    st[i] = s
                    rows.append((c, p / max(p.sum(), _FLOOR), st, levels, float(pred[0, i, s])))
            else:
                for level, p_level in enumerate(t.level_probs):
                    lv = levels.copy()
                    lv[i] = level
                    rows.append((c, post, states, lv, float(p_level)))
        u, _ = _uncertainty(
            t,
            np.stack([r[1] for r in rows]),
            np.stack([r[2] for r in rows]),
            np.stack([r[3] for r in rows]),
            self._weights,
            hint,
        )
        expected = np.zeros(len(candidates))
        mass = np.zeros(len(candidates))
        for (c, _, _, _, weight), value in zip(rows, u, strict=True):
            expected[c] += weight * value
            mass[c] += weight
        after = expected / np.maximum(mass, _FLOOR)
        return [(cand, float(u0[0] - after[c])) for c, cand in enumerate(candidates)]


__all__ = ["KINDS", "Belief", "Candidate", "Evidence", "entropy"]
