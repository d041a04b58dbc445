"""Psychology-grounded personas: Big Five (IPIP-style), demographics, expertise, learning traits.

`sample_personas` draws a persona library from the persona space (``data/persona_space.yaml``,
`prefduel.prefdisco.dataset.persona_space`), seeded through `prefduel.core.rng.stream`:

* **Big Five** (openness, conscientiousness, extraversion, agreeableness, neuroticism): each
  factor is the mean of 10 simulated Likert items (1-5), as in the 50-item IPIP Big-Five
  markers (Goldberg 1992; ipip.ori.org): a latent level per person, item responses around it,
  rounded and clipped to 1-5. The raw items are kept (``big_five_items``).
* **Demographics**: age, gender, education, occupation, region.
* **Expertise** per task domain (1-5): general knowledge from education plus the occupation's
  typical level.
* **Learning traits**: preferred modality, pace, goal, need for cognition (correlated with
  openness).

Rejection sampling keeps the library plausible and diverse: a candidate is redrawn when its
occupation does not fit its education or age (``implausible``), or when its Big Five profile
lies within ``min_distance`` of an earlier persona (``too_similar``). The counts are returned.

`trait_vector` turns a persona into the standardized traits (z-scores and indicators)
that the preference sampler's loadings refer to. A persona's optional LLM backstory (role
``"persona"``) is written by `prefduel.prefdisco.dataset.writer.enrich_personas`. Libraries are
saved as JSONL (`save_personas`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.rng import stream
from prefduel.prefdisco.dataset.persona_space import (
    BIG_FIVE,
    PACE_Z,
    PersonaSpace,
    load_persona_space,
)
from prefduel.prefdisco.errors import DatasetError, PrefDiscoError
from prefduel.prefdisco.store import read_keyed_jsonl, write_jsonl


@dataclass(frozen=True)
class Persona:
    """One simulated user.

    Attributes:
        id: Stable id (``p0000``, ``p0001``, ...).
        big_five: Factor -> IPIP-style score (mean of the items, 1-5, one decimal).
        big_five_items: Factor -> the simulated Likert item responses.
        age: Age in years.
        gender: Gender.
        education: Education level id.
        occupation: Occupation id.
        occupation_label: Occupation in words.
        region: World region.
        expertise: Domain -> expertise level 1 (none) to 5 (professional).
        modality: Preferred learning modality (visual, verbal, examples, steps).
        pace: Preferred pace (slow, moderate, fast).
        goal: Usual goal when asking (understand, answer, teach, decide).
        need_for_cognition: Enjoyment of effortful thinking, 1-5.
        backstory: LLM-written backstory (None unless enriched).
        backstory_model: Model that wrote the backstory.
        backstory_error: Why enrichment produced no backstory, if it failed.
    """

    id: str
    big_five: Mapping[str, float]
    big_five_items: Mapping[str, tuple[int, ...]]
    age: int
    gender: str
    education: str
    occupation: str
    occupation_label: str
    region: str
    expertise: Mapping[str, int]
    modality: str
    pace: str
    goal: str
    need_for_cognition: float
    backstory: str | None = None
    backstory_model: str | None = None
    backstory_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (one line of the persona library)."""
        return {
            "id": self.id,
            "big_five": dict(self.big_five),
            "big_five_items": {k: list(v) for k, v in self.big_five_items.items()},
            "age": self.age,
            "gender": self.gender,
            "education": self.education,
            "occupation": self.occupation,
            "occupation_label": self.occupation_label,
            "region": self.region,
            "expertise": dict(self.expertise),
            "learning": {
                "modality": self.modality,
                "pace": self.pace,
                "goal": self.goal,
                "need_for_cognition": self.need_for_cognition,
            },
            "backstory": self.backstory,
            "backstory_model": self.backstory_model,
            "backstory_error": self.backstory_error,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "persona") -> Persona:
        """Rebuild a persona from `to_json` output.

        Raises:
            DatasetError: A field is missing or out of range (names ``where`` and the field).
        """
        _check_shapes(data, where)
        try:
            learning = data["learning"]
            persona = cls(
                id=str(data["id"]),
                big_five={t: float(data["big_five"][t]) for t in BIG_FIVE},
                big_five_items={
                    t: tuple(int(x) for x in data["big_five_items"][t]) for t in BIG_FIVE
                },
                age=int(data["age"]),
                gender=str(data["gender"]),
                education=str(data["education"]),
                occupation=str(data["occupation"]),
                occupation_label=str(data["occupation_label"]),
                region=str(data["region"]),
                expertise={str(k): int(v) for k, v in data["expertise"].items()},
                modality=str(learning["modality"]),
                pace=str(learning["pace"]),
                goal=str(learning["goal"]),
                need_for_cognition=float(learning["need_for_cognition"]),
                backstory=data.get("backstory"),
                backstory_model=data.get("backstory_model"),
                backstory_error=data.get("backstory_error"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(
                f"{where}: malformed persona ({type(exc).__name__}: {exc})"
            ) from None
        bad = [t for t, s in persona.big_five.items() if not 1 <= s <= 5]
        bad += [f"expertise.{d}" for d, e in persona.expertise.items() if not 1 <= e <= 5]
        bad += [] if 0 < persona.age <= MAX_AGE else ["age"]
        if bad or persona.pace not in PACE_Z or not 1 <= persona.need_for_cognition <= 5:
            raise DatasetError(f"{where}: persona {persona.id}: values out of range ({bad})")
        return persona

    def describe(self) -> str:
        """A factual one-paragraph description (the input of backstory enrichment)."""
        b5 = ", ".join(f"{t} {self.big_five[t]:.1f}/5" for t in BIG_FIVE)
        exp = ", ".join(f"{d} {e}/5" for d, e in sorted(self.expertise.items()))
        return (
            f"Age {self.age}, {self.gender}, {self.occupation_label}, from {self.region}; "
            f"education: {self.education}. Big Five (IPIP, 1-5): {b5}. Expertise by domain "
            f"(1-5): {exp}. Learns best through {self.modality}, prefers a {self.pace} pace, "
            f"usually wants to {self.goal} when asking a question; need for cognition "
            f"{self.need_for_cognition:.1f}/5."
        )


@dataclass(frozen=True)
class SamplingStats:
    """What rejection sampling did.

    Attributes:
        drawn: Candidates drawn.
        implausible: Rejected: occupation does not fit education or age.
        too_similar: Rejected: Big Five profile too close to an earlier persona.
        relaxed: Personas accepted without the diversity rule after ``max_tries``.
    """

    drawn: int = 0
    implausible: int = 0
    too_similar: int = 0
    relaxed: int = 0

    def to_json(self) -> dict[str, int]:
        """A JSON-ready ``dict``."""
        return dict(self.__dict__)


def sample_personas(
    n: int,
    seed: int,
    *,
    space: PersonaSpace | None = None,
    min_distance: float = 0.35,
    max_tries: int = 200,
) -> tuple[list[Persona], SamplingStats]:
    """Draw ``n`` personas, seeded.

    Args:
        n: Number of personas (>= 1).
        seed: Root seed; persona ``i`` uses ``stream(seed, "personas", i, attempt)``.
        space: The persona space (default: the shipped one).
        min_distance: Smallest Euclidean distance of Big Five profiles (1-5 scale) between two
            personas; 0 disables the diversity rule.
        max_tries: Candidates per persona before the diversity rule is relaxed.

    Returns:
        The personas (ids ``p0000`` ...) and the rejection counts.

    Raises:
        ValueError: Bad arguments.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    if not min_distance >= 0:
        raise ValueError(f"min_distance: expected >= 0, got {min_distance!r}")
    if isinstance(max_tries, bool) or not isinstance(max_tries, int) or max_tries < 1:
        raise ValueError(f"max_tries: expected a positive integer, got {max_tries!r}")
    return _sample(n, seed, space or load_persona_space(), min_distance, max_tries)


def _choice(rng: np.random.Generator, weights: Mapping[str, float]) -> str:
    keys = list(weights)
    p = np.array([weights[k] for k in keys], dtype=float)
    return keys[int(rng.choice(len(keys), p=p / p.sum()))]


def _sample(
    n: int, seed: int, space: PersonaSpace, min_distance: float, max_tries: int
) -> tuple[list[Persona], SamplingStats]:
    personas: list[Persona] = []
    profiles: list[np.ndarray] = []
    drawn = implausible = similar = relaxed = 0
    for i in range(n):
        fallback = None
        for attempt in range(max_tries):
            drawn += 1
            candidate = _candidate(stream(seed, "personas", i, attempt), f"p{i:04d}", space)
            if candidate is None:
                implausible += 1
                continue
            vector = np.array([candidate.big_five[t] for t in BIG_FIVE])
            if min_distance > 0 and any(
                float(np.linalg.norm(vector - p)) < min_distance for p in profiles
            ):
                similar += 1
                fallback = fallback or candidate
                continue
            break
        else:
            if fallback is None:
                raise PrefDiscoError(
                    f"persona {i}: no plausible candidate in {max_tries} tries; check the "
                    "occupation constraints of the persona space"
                )
            candidate = fallback
            relaxed += 1
        personas.append(candidate)
        profiles.append(np.array([candidate.big_five[t] for t in BIG_FIVE]))
    return personas, SamplingStats(drawn, implausible, similar, relaxed)


def _candidate(rng: np.random.Generator, persona_id: str, space: PersonaSpace) -> Persona | None:
    """One draw from the persona space (None: implausible); the draws' order is fixed."""
    big_five, items = _big_five(rng, space)
    demographics = _demographics(rng, space)
    if demographics is None:
        return None
    age, gender, education, occupation, region = demographics
    expertise = _expertise(rng, space, int(education["rank"]), occupation)
    modality = _choice(rng, space.modality)
    pace = _choice(rng, space.pace)
    goal = _choice(rng, space.goal)
    z_open = (big_five["openness"] - space.means["openness"]) / space.latent_sd
    nfc = space.nfc["mean"] + space.nfc["openness_slope"] * z_open
    nfc += space.nfc["noise"] * rng.standard_normal()
    return Persona(
        id=persona_id,
        big_five=big_five,
        big_five_items=items,
        age=age,
        gender=gender,
        education=str(education["value"]),
        occupation=str(occupation["value"]),
        occupation_label=str(occupation["label"]),
        region=region,
        expertise=expertise,
        modality=modality,
        pace=pace,
        goal=goal,
        need_for_cognition=round(float(np.clip(nfc, 1.0, 5.0)), 1),
    )


def _big_five(
    rng: np.random.Generator, space: PersonaSpace
) -> tuple[dict[str, float], dict[str, tuple[int, ...]]]:
    """Each factor: a latent level, Likert item responses around it (1-5), and their mean."""
    big_five: dict[str, float] = {}
    items: dict[str, tuple[int, ...]] = {}
    for trait in BIG_FIVE:
        latent = space.means[trait] + space.latent_sd * rng.standard_normal()
        raw = latent + space.item_noise * rng.standard_normal(space.items_per_trait)
        responses = np.clip(np.rint(raw), 1, 5).astype(int)
        items[trait] = tuple(int(x) for x in responses)
        big_five[trait] = round(float(responses.mean()), 2)
    return big_five, items


def _demographics(
    rng: np.random.Generator, space: PersonaSpace
) -> tuple[int, str, Mapping[str, Any], Mapping[str, Any], str] | None:
    """Age, gender, education, occupation and region; None when they do not fit together."""
    age = int(rng.integers(space.age[0], space.age[1] + 1))
    gender = _choice(rng, space.genders)
    weights = np.array([r["weight"] for r in space.education])
    education = space.education[
        int(rng.choice(len(space.education), p=weights / sum(r["weight"] for r in space.education)))
    ]
    occupation = space.occupations[int(rng.integers(len(space.occupations)))]
    region = space.regions[int(rng.integers(len(space.regions)))]
    if (
        age < int(education["min_age"])
        or int(education["rank"]) < space.education_rank(occupation["min_education"])
        or age < int(occupation["min_age"])
        or age > int(occupation.get("max_age", 200))
    ):
        return None
    return age, gender, education, occupation, region


def _expertise(
    rng: np.random.Generator, space: PersonaSpace, rank: int, occupation: Mapping[str, Any]
) -> dict[str, int]:
    """Expertise (1-5) per domain: general knowledge from education, or the occupation's."""
    expertise = {}
    typical = occupation.get("expertise") or {}
    for domain in space.domains:
        general = (
            1
            + 0.35 * (rank - 1)
            + space.offsets.get(domain, 0.0)
            + space.expertise_noise * rng.standard_normal()
        )
        if domain in typical:
            general = max(general, typical[domain] + 0.4 * rng.standard_normal())
        expertise[domain] = int(np.clip(round(general), 1, 5))
    return expertise


def trait_vector(
    persona: Persona, domain: str, space: PersonaSpace | None = None
) -> dict[str, float]:
    """Standardized traits of a persona for a task of ``domain``.

    Big Five, expertise (in ``domain``), education, need for cognition and age are z-scores
    (roughly mean 0, s.d. 1 in the population); pace is -1/0/1; ``modality:*`` and ``goal:*``
    are 0/1 indicators. These are the trait names the taxonomy's loadings use.
    """
    space = space or load_persona_space()
    z = {t: (persona.big_five[t] - space.means[t]) / (space.latent_sd * 0.85) for t in BIG_FIVE}
    z["expertise"] = (persona.expertise.get(domain, 2) - 2.8) / 1.1
    z["education"] = (space.education_rank(persona.education) - 2.6) / 1.2
    z["need_for_cognition"] = (persona.need_for_cognition - space.nfc["mean"]) / 0.8
    z["pace"] = PACE_Z[persona.pace]
    z["age"] = (persona.age - (space.age[0] + space.age[1]) / 2) / 17.0
    for name in space.modality:
        z[f"modality:{name}"] = 1.0 if persona.modality == name else 0.0
    for name in space.goal:
        z[f"goal:{name}"] = 1.0 if persona.goal == name else 0.0
    return z


#: No persona is older.
MAX_AGE = 120


def _check_shapes(data: Mapping[str, Any], where: str) -> None:
    """Name the field when one that holds an object or a text holds something else."""
    for name in ("big_five", "big_five_items", "expertise", "learning"):
        if not isinstance(data.get(name), Mapping):
            raise DatasetError(f"{where}: {name}: expected an object, got {data.get(name)!r:.60}")
    for name in ("backstory", "backstory_model", "backstory_error"):
        if not isinstance(data.get(name), str | None):
            raise DatasetError(f"{where}: {name}: expected text or null, got {data[name]!r:.60}")


def save_personas(path: str | Path, personas: Sequence[Persona]) -> int:
    """Write a persona library (JSONL, one persona per line); return the count."""
    return write_jsonl(path, (p.to_json() for p in personas))


def load_personas(path: str | Path) -> list[Persona]:
    """Read a persona library written by `save_personas`.

    A line repeating an earlier persona exactly is counted once (with a warning).

    Raises:
        DatasetError: Missing file, malformed line, or two personas with one id and other
            content (names file and both lines).
    """
    rows = read_keyed_jsonl(path, ("id",), what="persona library")
    return [Persona.from_json(r, where=f"{path}, line {n}") for n, r in rows]


def big_five_distance(a: Persona, b: Persona) -> float:
    """Euclidean distance of two Big Five profiles (1-5 scale)."""
    return math.sqrt(sum((a.big_five[t] - b.big_five[t]) ** 2 for t in BIG_FIVE))
