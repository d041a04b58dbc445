"""Sparse preference profiles P_{p,i} = {(θ_j, v_j, w_j) : θ_j ∈ F(i)}, sampled explicitly.

For a persona p and a task i, `sample_profile` draws, from ``stream(seed, "preferences",
persona id, task id)``:

1. **k** uniformly in ``[k_min, k_max]`` (default 3-5): the profile is sparse by construction.
2. **F(i)**: k distinct attributes, drawn one at a time with probability proportional to
   ``relevance(θ, domain of i)^γ * exp(Σ_t salience_t(θ) z_t(p))`` (γ = ``relevance_power``,
   default 3, concentrates F(i) on what matters for the domain), at most ``max_per_family``
   per family (so a profile spans several families). Attributes irrelevant to the domain
   (relevance 0) are never drawn.
3. **values consistent with the traits**: ordinal attributes take the level of a latent
   ``Σ_t loading_t z_t(p) + ε`` (ε ~ N(0, value_noise²)) cut at equal-probability quantiles of
   its distribution, so a high-expertise persona tends toward advanced background levels and a
   fast-paced one toward short answers; categorical attributes draw a category with
   probability ``∝ prior_c exp(Σ_t loading_{c,t} z_t(p))``.
4. **weights** w ~ Dirichlet(α 1_k) (default α = 1); Σw = 1 is checked (to 1e-9) on creation
   and on load, and every w > 0.

The z_t(p) are `prefduel.prefdisco.dataset.personas.trait_vector`. Nothing here is written
by an LLM: the reference implementation let the LLM invent attribute names and weights; here
every attribute id and value is checked against the taxonomy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.prefdisco.config import SparsityConfig
from prefduel.prefdisco.dataset.personas import Persona, PersonaSpace, trait_vector
from prefduel.prefdisco.dataset.tasks import Task
from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy
from prefduel.prefdisco.errors import DatasetError, TaxonomyError
from prefduel.prefdisco.store import read_keyed_jsonl, write_jsonl

WEIGHT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Preference:
    """One (θ_j, v_j, w_j): attribute id, value id, weight."""

    attribute: str
    value: str
    weight: float


@dataclass(frozen=True)
class PreferenceProfile:
    """The hidden preferences of one persona for one task.

    Attributes:
        persona_id: The persona.
        task_id: The task.
        items: The preferences, by decreasing weight.
        seed: The root seed the profile was drawn with.
        taxonomy_version: Version of the taxonomy the ids refer to.

    Raises:
        ValueError: Duplicate attributes, a non-positive weight, or weights not summing to 1.
    """

    persona_id: str
    task_id: str
    items: tuple[Preference, ...]
    seed: int = 0
    taxonomy_version: str = ""

    def __post_init__(self) -> None:
        check_weights([p.weight for p in self.items], where=f"profile {self.key}")
        attributes = [p.attribute for p in self.items]
        if len(set(attributes)) != len(attributes):
            raise ValueError(f"profile {self.key}: duplicate attributes {attributes}")

    @property
    def key(self) -> tuple[str, str]:
        """``(persona_id, task_id)``."""
        return (self.persona_id, self.task_id)

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attribute ids F(i), by decreasing weight."""
        return tuple(p.attribute for p in self.items)

    @property
    def weights(self) -> dict[str, float]:
        """Attribute id -> weight."""
        return {p.attribute: p.weight for p in self.items}

    @property
    def values(self) -> dict[str, str]:
        """Attribute id -> value id."""
        return {p.attribute: p.value for p in self.items}

    def __iter__(self) -> Iterator[Preference]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def check(self, taxonomy: Taxonomy) -> None:
        """Raise `TaxonomyError` unless every attribute and value is in ``taxonomy``."""
        for p in self.items:
            taxonomy.check_value(p.attribute, p.value)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (one line of ``preferences.jsonl``)."""
        return {
            "persona_id": self.persona_id,
            "task_id": self.task_id,
            "seed": self.seed,
            "taxonomy_version": self.taxonomy_version,
            "preferences": [
                {"attribute": p.attribute, "value": p.value, "weight": p.weight} for p in self.items
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "profile") -> PreferenceProfile:
        """Rebuild from `to_json` output (weights re-checked).

        Raises:
            DatasetError: Malformed, or weights not summing to 1 (names ``where``).
        """
        try:
            return cls(
                persona_id=str(data["persona_id"]),
                task_id=str(data["task_id"]),
                items=tuple(
                    Preference(str(p["attribute"]), str(p["value"]), float(p["weight"]))
                    for p in data["preferences"]
                ),
                seed=int(data.get("seed", 0)),
                taxonomy_version=str(data.get("taxonomy_version", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{where}: {exc}") from None


def check_weights(weights: Sequence[float], *, where: str = "weights") -> None:
    """Raise ValueError unless the weights are positive, finite and sum to 1 (to 1e-9)."""
    if not weights:
        raise ValueError(f"{where}: expected at least one weight")
    if any(not (math.isfinite(w) and w > 0) for w in weights):
        raise ValueError(f"{where}: weights must be finite and > 0, got {list(weights)}")
    total = math.fsum(weights)
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise ValueError(f"{where}: weights must sum to 1, got {total!r}")


def sample_profile(
    persona: Persona,
    task: Task,
    taxonomy: Taxonomy,
    *,
    seed: int,
    config: SparsityConfig | None = None,
    space: PersonaSpace | None = None,
) -> PreferenceProfile:
    """Draw the sparse preference profile of ``persona`` for ``task`` (see the module doc).

    Args:
        persona: The persona.
        task: The task (its domain drives relevance).
        taxonomy: The attribute taxonomy Θ.
        seed: Root seed; the draw uses ``stream(seed, "preferences", persona.id, task.id)``.
        config: Sparsity settings.
        space: Persona space (for standardizing traits; default: the shipped one).

    Returns:
        The profile; Σw = 1.

    Raises:
        TaxonomyError: The task's domain is not in the taxonomy, or fewer than ``k_max``
            attributes are relevant to it under the family cap.
    """
    config = config or SparsityConfig()
    if task.domain not in taxonomy.domains:
        raise TaxonomyError(
            f"task {task.id}: domain {task.domain!r} is not one of the taxonomy's domains "
            f"{list(taxonomy.domains)}"
        )
    relevant = [a for a in taxonomy if a.relevance_for(task.domain) > 0]
    families: dict[str, int] = {}
    for a in relevant:
        families[a.family] = families.get(a.family, 0) + 1
    capacity = sum(min(n, config.max_per_family) for n in families.values())
    if capacity < config.k_max:
        raise TaxonomyError(
            f"domain {task.domain!r}: only {capacity} attributes can be drawn under "
            f"max_per_family={config.max_per_family}; k_max={config.k_max} is too large"
        )
    traits = trait_vector(persona, task.domain, space)
    rng = stream(seed, "preferences", persona.id, task.id)
    return _sample(
        persona.id, task.id, task.domain, relevant, traits, rng, config, seed, taxonomy.version
    )


def _sample(
    persona_id: str,
    task_id: str,
    domain: str,
    relevant: list[Attribute],
    traits: Mapping[str, float],
    rng: np.random.Generator,
    config: SparsityConfig,
    seed: int,
    version: str,
) -> PreferenceProfile:
    k = int(rng.integers(config.k_min, config.k_max + 1))
    available = np.array(
        [
            a.relevance_for(domain) ** config.relevance_power * math.exp(_dot(a.salience, traits))
            for a in relevant
        ]
    )
    chosen: list[Attribute] = []
    per_family: dict[str, int] = {}
    for _ in range(k):
        for i, a in enumerate(relevant):
            if per_family.get(a.family, 0) >= config.max_per_family:
                available[i] = 0.0
        index = int(rng.choice(len(relevant), p=available / available.sum()))
        chosen.append(relevant[index])
        per_family[relevant[index].family] = per_family.get(relevant[index].family, 0) + 1
        available[index] = 0.0
    values = [_value(a, traits, rng, config.value_noise) for a in chosen]
    weights = rng.dirichlet(np.full(k, float(config.dirichlet_alpha)))
    weights = np.maximum(weights, 1e-6)  # a Dirichlet draw can underflow to 0 for tiny alpha
    items = _normalized(
        [Preference(a.id, v, float(w)) for a, v, w in zip(chosen, values, weights, strict=True)]
    )
    items.sort(key=lambda p: (-p.weight, p.attribute))
    return PreferenceProfile(persona_id, task_id, tuple(items), seed, version)


def _normalized(items: list[Preference]) -> list[Preference]:
    """Make the weights sum to 1 exactly in floating point (the largest absorbs the rest)."""
    total = math.fsum(p.weight for p in items)
    items = [Preference(p.attribute, p.value, p.weight / total) for p in items]
    largest = max(range(len(items)), key=lambda i: items[i].weight)
    rest = math.fsum(p.weight for i, p in enumerate(items) if i != largest)
    items[largest] = Preference(items[largest].attribute, items[largest].value, 1.0 - rest)
    return items


def _dot(loadings: Mapping[str, float], traits: Mapping[str, float]) -> float:
    return sum(slope * traits.get(name, 0.0) for name, slope in loadings.items())


def _value(
    attribute: Attribute, traits: Mapping[str, float], rng: np.random.Generator, noise: float
) -> str:
    if attribute.ordinal:
        latent = _dot(attribute.loadings, traits) + noise * rng.standard_normal()
        scale = math.sqrt(sum(s * s for s in attribute.loadings.values()) + noise * noise)
        n = len(attribute.values)
        cuts = [scale * NormalDist().inv_cdf(j / n) for j in range(1, n)]
        return attribute.values[sum(latent > c for c in cuts)].value
    logits = np.array(
        [math.log(v.prior) + _dot(v.loadings, traits) for v in attribute.values], dtype=float
    )
    p = np.exp(logits - logits.max())
    return attribute.values[int(rng.choice(len(p), p=p / p.sum()))].value


def sample_profiles(
    pairs: Sequence[tuple[Persona, Task]],
    taxonomy: Taxonomy,
    *,
    seed: int,
    config: SparsityConfig | None = None,
    space: PersonaSpace | None = None,
) -> list[PreferenceProfile]:
    """`sample_profile` for each (persona, task) pair, in order."""
    return [sample_profile(p, t, taxonomy, seed=seed, config=config, space=space) for p, t in pairs]


def save_profiles(path: str | Path, profiles: Sequence[PreferenceProfile]) -> int:
    """Write profiles as JSONL; return the count."""
    return write_jsonl(path, (p.to_json() for p in profiles))


def load_profiles(path: str | Path, taxonomy: Taxonomy) -> list[PreferenceProfile]:
    """Read profiles, re-checking Σw = 1 and every id against ``taxonomy``.

    A line repeating an earlier profile exactly is counted once (with a warning).

    Raises:
        DatasetError: Malformed line, unknown attribute or value, or two profiles of one
            (persona, task) with other content (names file and both lines).
    """
    profiles = []
    keyed = read_keyed_jsonl(path, ("persona_id", "task_id"), what="preference file")
    for number, row in keyed:
        where = f"{path}, line {number}"
        profile = PreferenceProfile.from_json(row, where=where)
        try:
            profile.check(taxonomy)
        except TaxonomyError as exc:
            raise DatasetError(f"{where}: {exc}") from None
        profiles.append(profile)
    return profiles
