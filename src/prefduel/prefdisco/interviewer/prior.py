"""A structured prior over sparse preferences, learned offline from simulated users.

The Bayesian interviewer (`prefduel.prefdisco.interviewer.strategy`) needs to know, before it asks
anything, which attributes a user of a task's domain is likely to care about, which values
they tend to hold, and how answers about one attribute move the others. `learn_prior` learns
that from profiles sampled exactly as the study samples them (`sample_profile`), but for a
*training* persona library drawn with its own seed, never the evaluation personas:

* **a mixture of persona types per domain**: each profile is a vector of attribute *states*
  (``absent`` or one of the attribute's values); a latent-class model with ``classes`` types
  (each type: independent categoricals per attribute) is fitted by EM (seeded, smoothed). One
  class is the independent per-attribute prior; more classes capture co-occurrence (an
  answer about one attribute shifts the posterior over types and so every other attribute);
* **structure**: the distribution of the number of attributes per profile (sparsity) and the
  most attributes of one family seen in a profile; the belief uses both as constraints;
* **weights**: each attribute's mean weight when present (per domain), and the coarse
  importance levels (``minor`` / ``moderate`` / ``major``, cut where the simulated user cuts
  them, `prefduel.prefdisco.episode.user.LEVEL_CUTS`) with their shares and mean weights, for
  importance questions.

Disjointness is checkable: the prior records its seed and a fingerprint of every training
persona (the persona's content without its id, which restarts at ``p0000`` for every seed);
`check_disjoint` refuses evaluation personas that share one. The prior is saved as JSON
(`save_prior`, `load_prior`) with the taxonomy digest it was learned for.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.prefdisco.dataset.personas import (
    Persona,
    PersonaSpace,
    load_persona_space,
    sample_personas,
)
from prefduel.prefdisco.dataset.preferences import PreferenceProfile, SparsityConfig, sample_profile
from prefduel.prefdisco.dataset.tasks import Task
from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.episode.user import IMPORTANCE_LEVELS, LEVEL_CUTS
from prefduel.prefdisco.errors import DatasetError, TaxonomyError
from prefduel.prefdisco.interview_config import PriorConfig
from prefduel.prefdisco.store import read_json, write_json

PRIOR_FORMAT = "prefduel/prefdisco-interview-prior/1"
#: Coarse importance levels, lowest first (what an importance question's reply says).
LEVELS = IMPORTANCE_LEVELS
#: State index of "the attribute is not in the profile" (values follow at 1, 2, ...).
ABSENT = 0


@dataclass(frozen=True)
class DomainPrior:
    """The mixture of persona types for one task domain.

    Attributes:
        domain: The domain.
        mixture: Type probabilities, shape ``(K,)``, largest first.
        theta: ``theta[k, a, s]``: probability of state ``s`` of attribute ``a`` in type
            ``k`` (state 0 = absent, then the values in taxonomy order; padding states 0).
        mean_weight: Mean weight of each attribute when present, shape ``(A,)`` (the overall
            mean where it never was).
        profiles: Training profiles of the domain.
        log_likelihood: Final EM log-likelihood per profile.
    """

    domain: str
    mixture: np.ndarray
    theta: np.ndarray
    mean_weight: np.ndarray
    profiles: int
    log_likelihood: float

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return {
            "domain": self.domain,
            "mixture": self.mixture.tolist(),
            "theta": self.theta.tolist(),
            "mean_weight": self.mean_weight.tolist(),
            "profiles": self.profiles,
            "log_likelihood": self.log_likelihood,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DomainPrior:
        """Rebuild from `to_json` output."""
        return cls(
            domain=str(data["domain"]),
            mixture=np.asarray(data["mixture"], dtype=float),
            theta=np.asarray(data["theta"], dtype=float),
            mean_weight=np.asarray(data["mean_weight"], dtype=float),
            profiles=int(data["profiles"]),
            log_likelihood=float(data["log_likelihood"]),
        )


@dataclass(frozen=True)
class TrainingRecord:
    """Which simulated users the prior was learned from (for the disjointness check).

    Attributes:
        seed: Root seed of the training personas and profiles.
        persona_fingerprints: `persona_fingerprint` of every training persona, sorted.
        tasks_per_domain: Synthetic tasks per domain.
        sparsity: The `SparsityConfig` the profiles were sampled with.
        config: The `PriorConfig`, as a ``dict``.
    """

    seed: int
    persona_fingerprints: tuple[str, ...]
    tasks_per_domain: int
    sparsity: Mapping[str, Any]
    config: Mapping[str, Any]


@dataclass(frozen=True)
class InterviewPrior:
    """The learned prior (see the module docstring).

    Attributes:
        taxonomy_version: Version of the taxonomy it was learned for.
        taxonomy_digest: Its content digest (checked by `check_taxonomy`).
        attributes: Attribute ids, in taxonomy order (the ``a`` axis of the arrays).
        domains: Domain -> `DomainPrior`.
        k_probs: ``k_probs[k]``: share of profiles with ``k`` attributes.
        family_cap: Most attributes of one family seen in a training profile.
        level_cuts: Weight cut points of the importance levels.
        level_probs: Share of present attributes at each level of `LEVELS`.
        level_means: Mean weight at each level.
        training: `TrainingRecord`.
    """

    taxonomy_version: str
    taxonomy_digest: str
    attributes: tuple[str, ...]
    domains: Mapping[str, DomainPrior]
    k_probs: np.ndarray
    family_cap: int
    level_cuts: tuple[float, float]
    level_probs: np.ndarray
    level_means: np.ndarray
    training: TrainingRecord

    def domain(self, name: str) -> DomainPrior:
        """The prior of one domain.

        Raises:
            TaxonomyError: The prior knows no such domain.
        """
        try:
            return self.domains[name]
        except KeyError:
            raise TaxonomyError(
                f"interview prior: unknown domain {name!r}; expected one of {sorted(self.domains)}"
            ) from None

    def check_taxonomy(self, taxonomy: Taxonomy) -> None:
        """Raise `TaxonomyError` unless the prior was learned for this taxonomy's content."""
        if taxonomy.digest != self.taxonomy_digest:
            raise TaxonomyError(
                f"interview prior: learned for taxonomy {self.taxonomy_version} (digest "
                f"{self.taxonomy_digest}), used with {taxonomy.version} (digest "
                f"{taxonomy.digest}); learn the prior again for this taxonomy"
            )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (what `save_prior` writes)."""
        return {
            "format": PRIOR_FORMAT,
            "taxonomy": {"version": self.taxonomy_version, "digest": self.taxonomy_digest},
            "attributes": list(self.attributes),
            "domains": {k: v.to_json() for k, v in sorted(self.domains.items())},
            "k_probs": self.k_probs.tolist(),
            "family_cap": self.family_cap,
            "levels": {
                "names": list(LEVELS),
                "cuts": list(self.level_cuts),
                "probs": self.level_probs.tolist(),
                "means": self.level_means.tolist(),
            },
            "training": {
                **asdict(self.training),
                "persona_fingerprints": list(self.training.persona_fingerprints),
            },
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], *, where: str = "interview prior"
    ) -> InterviewPrior:
        """Rebuild from `to_json` output.

        Raises:
            DatasetError: Wrong format or missing fields (names ``where``).
        """
        if not isinstance(data, Mapping) or data.get("format") != PRIOR_FORMAT:
            raise DatasetError(
                f"{where}: not an interview prior (expected format {PRIOR_FORMAT!r})"
            )
        try:
            levels, training = data["levels"], data["training"]
            return cls(
                taxonomy_version=str(data["taxonomy"]["version"]),
                taxonomy_digest=str(data["taxonomy"]["digest"]),
                attributes=tuple(str(a) for a in data["attributes"]),
                domains={k: DomainPrior.from_json(v) for k, v in data["domains"].items()},
                k_probs=np.asarray(data["k_probs"], dtype=float),
                family_cap=int(data["family_cap"]),
                level_cuts=(float(levels["cuts"][0]), float(levels["cuts"][1])),
                level_probs=np.asarray(levels["probs"], dtype=float),
                level_means=np.asarray(levels["means"], dtype=float),
                training=TrainingRecord(
                    **{**training, "persona_fingerprints": tuple(training["persona_fingerprints"])}
                ),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise DatasetError(f"{where}: malformed interview prior ({exc!r})") from None


def persona_fingerprint(persona: Persona) -> str:
    """SHA-256 (16 hex digits) of a persona's content without its id and backstory (ids
    restart at ``p0000`` for every seed, so they cannot tell two libraries apart)."""
    data = persona.to_json()
    for key in ("id", "backstory", "backstory_model", "backstory_error"):
        data.pop(key, None)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def check_disjoint(prior: InterviewPrior, personas: Sequence[Persona]) -> int:
    """Check that no evaluation persona was a training persona of ``prior``.

    Returns:
        The number of personas checked.

    Raises:
        DatasetError: Some personas were used for training (names them).
    """
    trained = set(prior.training.persona_fingerprints)
    shared = [p.id for p in personas if persona_fingerprint(p) in trained]
    if shared:
        raise DatasetError(
            f"interview prior (seed {prior.training.seed}) was learned from {len(shared)} of the "
            f"evaluation personas ({shared[:5]}); learn it with another seed "
            "(run.interviewer.prior.seed)"
        )
    return len(personas)


def state_index(taxonomy: Taxonomy, attribute: str, value: str | None) -> int:
    """The state index of ``value`` (None: absent) of an attribute."""
    return ABSENT if value is None else taxonomy[attribute].index(value) + 1


def training_tasks(taxonomy: Taxonomy, per_domain: int) -> list[Task]:
    """Placeholder tasks, ``per_domain`` per domain (profiles need only a domain and an id)."""
    return [
        Task(f"prior-{domain}-{j}", "interview-prior", domain, "(training item)", "-", "free")
        for domain in taxonomy.domains
        for j in range(per_domain)
    ]


def learn_prior(
    taxonomy: Taxonomy,
    config: PriorConfig | None = None,
    *,
    sparsity: SparsityConfig | None = None,
    space: PersonaSpace | None = None,
) -> InterviewPrior:
    """Learn the prior from profiles of a training persona library.

    Args:
        taxonomy: The taxonomy.
        config: Learning settings (seed, library size, types, ...).
        sparsity: How the study samples profiles (use the dataset's ``generate.sparsity``).
        space: The persona space (default: the shipped one).

    Returns:
        The prior, with the fingerprints of its training personas.
    """
    config = config or PriorConfig()
    sparsity = sparsity or SparsityConfig()
    space = space or load_persona_space()
    personas, _ = sample_personas(
        config.personas, config.seed, space=space, min_distance=config.min_distance
    )
    tasks = training_tasks(taxonomy, config.tasks_per_domain)
    profiles = [
        sample_profile(p, t, taxonomy, seed=config.seed, config=sparsity, space=space)
        for p in personas
        for t in tasks
    ]
    domain_of = {t.id: t.domain for t in tasks}
    domains = {
        domain: _fit_domain(
            taxonomy, domain, [p for p in profiles if domain_of[p.task_id] == domain], config
        )
        for domain in taxonomy.domains
    }
    k_probs, family_cap = _structure(taxonomy, profiles)
    level_probs, level_means = _levels(profiles, LEVEL_CUTS)
    return InterviewPrior(
        taxonomy_version=taxonomy.version,
        taxonomy_digest=taxonomy.digest,
        attributes=taxonomy.ids,
        domains=domains,
        k_probs=k_probs,
        family_cap=family_cap,
        level_cuts=(float(LEVEL_CUTS[0]), float(LEVEL_CUTS[1])),
        level_probs=level_probs,
        level_means=level_means,
        training=TrainingRecord(
            seed=config.seed,
            persona_fingerprints=tuple(sorted(persona_fingerprint(p) for p in personas)),
            tasks_per_domain=config.tasks_per_domain,
            sparsity=_plain(asdict(sparsity)),
            config=_plain(asdict(config)),
        ),
    )


def _plain(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` as JSON gives it back (tuples become lists), so a saved prior compares equal."""
    return dict(json.loads(json.dumps(data)))


def valid_states(taxonomy: Taxonomy) -> np.ndarray:
    """``valid[a, s]``: whether state ``s`` exists for attribute ``a`` (absent + values)."""
    width = 1 + max(len(a.values) for a in taxonomy)
    valid = np.zeros((len(taxonomy), width), dtype=bool)
    for i, a in enumerate(taxonomy):
        valid[i, : 1 + len(a.values)] = True
    return valid


def _fit_domain(
    taxonomy: Taxonomy, domain: str, profiles: list[PreferenceProfile], config: PriorConfig
) -> DomainPrior:
    index = {a: i for i, a in enumerate(taxonomy.ids)}
    states = np.zeros((len(profiles), len(taxonomy)), dtype=int)
    weight_sum = np.zeros(len(taxonomy))
    weight_n = np.zeros(len(taxonomy))
    for n, profile in enumerate(profiles):
        for p in profile:
            states[n, index[p.attribute]] = state_index(taxonomy, p.attribute, p.value)
            weight_sum[index[p.attribute]] += p.weight
            weight_n[index[p.attribute]] += 1
    overall = weight_sum.sum() / max(weight_n.sum(), 1.0)
    mean_weight = np.where(weight_n > 0, weight_sum / np.maximum(weight_n, 1.0), overall)
    rng = stream(config.seed, "interview-prior", domain)
    mixture, theta, ll = fit_mixture(
        states, valid_states(taxonomy), config.classes, config.iterations, config.smoothing, rng
    )
    return DomainPrior(domain, mixture, theta, mean_weight, len(profiles), ll / len(profiles))


def fit_mixture(
    states: np.ndarray,
    valid: np.ndarray,
    classes: int,
    iterations: int,
    smoothing: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, float]:
    """EM for a latent-class model of categorical attribute states.

    Args:
        states: ``(N, A)`` state indices.
        valid: ``(A, S)`` which states exist.
        classes: Number of types K.
        iterations: Most EM iterations (stops earlier when the log-likelihood settles).
        smoothing: Pseudo-count per valid state (keeps every state possible).
        rng: Draws the initial responsibilities.

    Returns:
        ``(mixture (K,), theta (K, A, S), log-likelihood)``, types by decreasing share.
    """
    n, a = states.shape
    onehot = np.zeros((n, a, valid.shape[1]))
    onehot[np.arange(n)[:, None], np.arange(a)[None, :], states] = 1.0
    resp = rng.dirichlet(np.ones(classes), size=n)
    previous = -math.inf
    for _ in range(iterations):
        mixture = (resp.sum(axis=0) + 1.0) / (n + classes)
        counts = np.einsum("nk,nas->kas", resp, onehot) + smoothing * valid
        theta = counts / counts.sum(axis=-1, keepdims=True)
        log_theta = np.log(np.where(valid, theta, 1.0))
        joint = np.log(mixture) + np.einsum("nas,kas->nk", onehot, log_theta)
        top = joint.max(axis=1, keepdims=True)
        resp = np.exp(joint - top)
        total = resp.sum(axis=1, keepdims=True)
        resp /= total
        ll = float((top[:, 0] + np.log(total[:, 0])).sum())
        if ll - previous < 1e-7 * abs(ll):
            break
        previous = ll
    order = np.argsort(-mixture, kind="stable")
    return mixture[order], theta[order], ll


def _structure(taxonomy: Taxonomy, profiles: list[PreferenceProfile]) -> tuple[np.ndarray, int]:
    counts = np.zeros(len(taxonomy) + 1)
    cap = 1
    for profile in profiles:
        counts[len(profile)] += 1
        families: dict[str, int] = {}
        for attribute in profile.attributes:
            family = taxonomy[attribute].family
            families[family] = families.get(family, 0) + 1
        cap = max(cap, *families.values())
    return counts / counts.sum(), cap


def _levels(
    profiles: list[PreferenceProfile], cuts: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    weights = np.array([p.weight for profile in profiles for p in profile])
    level = (weights[:, None] >= np.asarray(cuts)[None, :]).sum(axis=1)
    probs = np.array([(level == i).mean() for i in range(len(LEVELS))])
    edges = (0.0, *cuts, 1.0)
    means = np.array(
        [
            weights[level == i].mean() if (level == i).any() else (edges[i] + edges[i + 1]) / 2
            for i in range(len(LEVELS))
        ]
    )
    return probs, means


def save_prior(path: str | Path, prior: InterviewPrior) -> None:
    """Write the prior as JSON."""
    write_json(Path(path), prior.to_json())


def load_prior(path: str | Path, taxonomy: Taxonomy | None = None) -> InterviewPrior:
    """Read a prior written by `save_prior` (checked against ``taxonomy`` when given).

    Raises:
        DatasetError: Missing or malformed file.
        TaxonomyError: Learned for another taxonomy.
    """
    prior = InterviewPrior.from_json(read_json(Path(path), what="interview prior"), where=str(path))
    if taxonomy is not None:
        prior.check_taxonomy(taxonomy)
    return prior


__all__ = [
    "ABSENT",
    "LEVELS",
    "PRIOR_FORMAT",
    "DomainPrior",
    "InterviewPrior",
    "PriorConfig",
    "TrainingRecord",
    "check_disjoint",
    "fit_mixture",
    "learn_prior",
    "load_prior",
    "persona_fingerprint",
    "save_prior",
    "state_index",
    "training_tasks",
    "valid_states",
]
