"""The persona space: the distributions PrefDisco's personas are drawn from.

``data/persona_space.yaml`` (or a user's file of the same format, ``generate.persona_space``)
gives the Big Five population means and item noise, the demographics (age, gender, education,
occupation, region), expertise domains and the learning traits with their weights.
`load_persona_space` reads and checks it; `prefduel.prefdisco.dataset.personas` samples from it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from prefduel.core.yamlfile import parse_yaml
from prefduel.prefdisco.errors import PrefDiscoError

SPACE_FORMAT = "prefduel/prefdisco-persona-space"
BIG_FIVE = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
PACE_Z = {"slow": -1.0, "moderate": 0.0, "fast": 1.0}


@dataclass(frozen=True)
class PersonaSpace:
    """The distributions personas are drawn from (the parsed ``persona_space.yaml``).

    Attributes:
        version: Version of the space file.
        items_per_trait: Likert items per Big Five factor.
        item_noise: S.d. of an item response around the latent level.
        latent_sd: S.d. of the latent level across people.
        means: Big Five factor -> population mean.
        age: (min, max) age.
        genders: Gender -> weight.
        education: Ordered ``(value, label, rank, weight, min_age)`` rows.
        regions: Region names.
        occupations: Occupation rows (value, label, min_education, min_age, max_age, expertise).
        domains: Expertise domains.
        offsets: Domain -> offset of general knowledge.
        expertise_noise: S.d. of the general-knowledge noise.
        modality: Modality -> weight.
        pace: Pace -> weight.
        goal: Goal -> weight.
        nfc: Need-for-cognition settings (mean, openness_slope, noise).
    """

    version: str
    items_per_trait: int
    item_noise: float
    latent_sd: float
    means: Mapping[str, float]
    age: tuple[int, int]
    genders: Mapping[str, float]
    education: tuple[Mapping[str, Any], ...]
    regions: tuple[str, ...]
    occupations: tuple[Mapping[str, Any], ...]
    domains: tuple[str, ...]
    offsets: Mapping[str, float]
    expertise_noise: float
    modality: Mapping[str, float]
    pace: Mapping[str, float]
    goal: Mapping[str, float]
    nfc: Mapping[str, float]

    def education_rank(self, value: str) -> int:
        """Rank (1-5) of an education level."""
        for row in self.education:
            if row["value"] == value:
                return int(row["rank"])
        raise PrefDiscoError(
            f"unknown education {value!r}; expected one of {[r['value'] for r in self.education]}"
        )


def load_persona_space(path: str | Path | None = None) -> PersonaSpace:
    """Load the persona space (default: the shipped ``data/persona_space.yaml``, read once).

    Raises:
        PrefDiscoError: The file is missing or malformed (names the file and the key).
    """
    if path is None:
        return _shipped_space()
    return _load_space(path)


@functools.cache
def _shipped_space() -> PersonaSpace:
    return _load_space(None)


def _load_space(path: str | Path | None) -> PersonaSpace:
    source, text = _space_text(path)
    try:
        space = _parse_space(parse_yaml(text, source, PrefDiscoError), source)
    except PrefDiscoError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise PrefDiscoError(
            f"{source}: malformed persona space ({type(exc).__name__}: {exc})"
        ) from None
    for occupation in space.occupations:
        space.education_rank(occupation["min_education"])  # raises on an unknown level
    if set(space.pace) != set(PACE_Z):
        raise PrefDiscoError(f"{source}: pace must weight exactly {sorted(PACE_Z)}")
    return space


def _space_text(path: str | Path | None) -> tuple[str, str]:
    """``(name for messages, text)`` of the space file (None: the shipped one)."""
    if path is None:
        try:
            text = (
                resources.files("prefduel.prefdisco")
                .joinpath("data/persona_space.yaml")
                .read_text(encoding="utf-8")
            )
        except OSError as exc:
            raise PrefDiscoError(
                "the shipped prefduel/prefdisco/data/persona_space.yaml is missing"
            ) from exc
        return "shipped persona_space.yaml", text
    try:
        return str(path), Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PrefDiscoError(f"cannot read persona space {path}: {exc}") from None


def _parse_space(data: Any, source: str) -> PersonaSpace:
    """The space from its parsed YAML (a missing key raises KeyError, named by the caller)."""
    if data.get("format") != SPACE_FORMAT:
        raise PrefDiscoError(f"{source}: format must be {SPACE_FORMAT!r}")
    b5 = data["big_five"]
    learning = data["learning"]
    expertise = data["expertise"]
    return PersonaSpace(
        version=str(data["version"]),
        items_per_trait=int(b5["items_per_trait"]),
        item_noise=float(b5["item_noise"]),
        latent_sd=float(b5["latent_sd"]),
        means={t: float(b5["means"][t]) for t in BIG_FIVE},
        age=(int(data["age"]["min"]), int(data["age"]["max"])),
        genders={str(k): float(v) for k, v in data["genders"].items()},
        education=tuple(dict(row) for row in data["education"]),
        regions=tuple(str(r) for r in data["regions"]),
        occupations=tuple(dict(row) for row in data["occupations"]),
        domains=tuple(str(d) for d in expertise["domains"]),
        offsets={str(k): float(v) for k, v in expertise["offset"].items()},
        expertise_noise=float(expertise["noise"]),
        modality={str(k): float(v) for k, v in learning["modality"].items()},
        pace={str(k): float(v) for k, v in learning["pace"].items()},
        goal={str(k): float(v) for k, v in learning["goal"].items()},
        nfc={str(k): float(v) for k, v in learning["need_for_cognition"].items()},
    )


__all__ = ["BIG_FIVE", "PACE_Z", "SPACE_FORMAT", "PersonaSpace", "load_persona_space"]
