"""Load and validate TutorSim's data files (``worlds/data/*.yaml``).

Files: ``style.yaml`` (style dimensions), ``personas.yaml``, ``questions.yaml`` (question kinds
and the 13 cues), ``topics_dev.yaml`` / ``topics_heldout.yaml``, ``profiles_dev.yaml`` /
``profiles_heldout.yaml`` (hand-written students), ``quirks.yaml`` and ``template.yaml`` (the
7-trait template for Composite and Quirky students). Style, need and taste values are mappings
from a style-dimension id to a float in [-1, 1]; omitted dimensions are 0.

The data are versioned with the generator: version 2 (the current one) reads the files above;
version 1 reads ``v1/template.yaml`` and ``v1/profiles_heldout.yaml`` in their place, so worlds
of the first generator stay reproducible (``GENERATOR_VERSIONS``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import yaml

from prefduel.core.errors import WorldFormatError

KINDS = ("definition", "computation", "why")
#: Generator versions whose data ship with the package; the last is the default.
GENERATOR_VERSIONS = (1, 2)
CURRENT_VERSION = GENERATOR_VERSIONS[-1]
#: Files that differ between versions: version v reads ``v{v}/<file>`` where that exists.
_VERSIONED_FILES = {1: ("template.yaml", "profiles_heldout.yaml")}


@dataclass(frozen=True)
class TutorSimParams:
    """Knobs of the generative model, calibrated on the ``dev`` roster only.

    How they were chosen, and on what: ``docs/tutorsim.md``, section Calibration.
    """

    taste_scale: float = 1.25
    profile_jitter: float = 0.35
    persona_offset: float = 0.25
    cue_strength: float = 0.75
    cue_spread: float = 0.8
    ncenter: float = 0.5
    topic_noise: float = 0.3
    question_noise: float = 0.2
    utility_noise: float = 0.85
    template_scale: float = 0.8
    quirk_strength: float = 1.0
    quirks_per_student: int = 2
    iso_scale: float = 1.0
    rater_dim_error: float = 0.3
    rater_bias: float = 0.1
    rater_noise: float = 0.3
    judge_beta: float = 0.8
    judge_position: float = 0.4
    judge_label: float = 0.15
    judge_noise: float = 0.3
    judge_samples: int = 4
    bt_ridge: float = 0.01
    bt_scale: float = 8.0


DEFAULT_PARAMS = TutorSimParams()


@dataclass(frozen=True)
class Profile:
    """A hand-written student profile: text for LLM judges, traits for the simulator."""

    id: str
    name: str
    description: str
    taste: np.ndarray  # (m,)
    cue_following: float
    quirks: tuple[str, ...]


@dataclass(frozen=True)
class Quirk:
    """A quirk: like (+1) or dislike (-1) of one style dimension, optionally on one kind only."""

    id: str
    description: str
    dim: int
    sign: float
    when_kind: str | None


@dataclass(frozen=True)
class TraitValue:
    """One value of a template trait."""

    id: str
    description: str
    taste: np.ndarray  # (m,)
    cue_following: float | None


@dataclass(frozen=True)
class Trait:
    """A template trait and its values."""

    id: str
    description: str
    values: tuple[TraitValue, ...]


@dataclass(frozen=True)
class TutorSimData:
    """Everything TutorSim reads from its data files."""

    dims: tuple[str, ...]
    dim_descriptions: tuple[str, ...]
    personas: tuple[dict[str, Any], ...]
    persona_style: np.ndarray  # (K, m)
    kind_need: np.ndarray  # (3, m), rows in KINDS order
    cues: tuple[dict[str, Any], ...]
    cue_need: np.ndarray  # (13, m)
    topics: dict[str, tuple[dict[str, Any], ...]]  # pool id -> topics
    profiles: dict[str, tuple[Profile, ...]]  # "dev" / "heldout" -> profiles
    quirks: tuple[Quirk, ...]
    traits: tuple[Trait, ...]
    shared_taste: np.ndarray  # (m,) added to every template student's trait sum
    version: int = CURRENT_VERSION

    @property
    def m(self) -> int:
        """Number of style dimensions."""
        return len(self.dims)

    def quirk(self, quirk_id: str) -> Quirk:
        """Look up a quirk by id."""
        for q in self.quirks:
            if q.id == quirk_id:
                return q
        raise WorldFormatError(f"unknown quirk {quirk_id!r}; known: {[q.id for q in self.quirks]}")


def _read(name: str, version: int = CURRENT_VERSION) -> Any:
    folder = resources.files("prefduel.worlds").joinpath("data")
    if name in _VERSIONED_FILES.get(version, ()):
        folder = folder.joinpath(f"v{version}")
    try:
        text = folder.joinpath(name).read_text("utf-8")
        return yaml.safe_load(text)
    except FileNotFoundError as exc:
        raise WorldFormatError(f"TutorSim data file {name} is missing") from exc
    except yaml.YAMLError as exc:
        raise WorldFormatError(f"TutorSim data file {name} is not valid YAML: {exc}") from exc


def style_vector(mapping: Any, dims: tuple[str, ...], where: str) -> np.ndarray:
    """A ``{style dim: value in [-1, 1]}`` mapping as an ``(m,)`` vector (omitted dims are 0).

    Raises:
        WorldFormatError: naming ``where`` and the dimension or value that is wrong.
    """
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, dict):
        raise WorldFormatError(f"{where}: expected a mapping of style dims to numbers")
    vec = np.zeros(len(dims))
    for key, value in mapping.items():
        if key not in dims:
            raise WorldFormatError(f"{where}: unknown style dimension {key!r}; known: {list(dims)}")
        if not isinstance(value, int | float) or not -1.0 <= float(value) <= 1.0:
            raise WorldFormatError(f"{where}: value of {key!r} must be a number in [-1, 1]")
        vec[dims.index(key)] = float(value)
    return vec


def _entries(doc: Any, key: str, file: str) -> list[dict[str, Any]]:
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise WorldFormatError(f"{file}: expected a top-level list {key!r}")
    for i, item in enumerate(doc[key]):
        if not isinstance(item, dict) or "id" not in item:
            raise WorldFormatError(f"{file}: entry {i} of {key!r} must be a mapping with an id")
    return doc[key]


@functools.cache
def load_tutorsim_data(version: int = CURRENT_VERSION) -> TutorSimData:
    """Read and validate all data files of one generator version (cached).

    Args:
        version: Generator version, one of ``GENERATOR_VERSIONS``.

    Raises:
        WorldFormatError: naming the file and entry that is wrong, or an unknown version.
    """
    if version not in GENERATOR_VERSIONS:
        raise WorldFormatError(
            f"unknown TutorSim generator version {version!r}; known: {list(GENERATOR_VERSIONS)}"
        )
    dims_raw = _entries(_read("style.yaml"), "dims", "style.yaml")
    dims = tuple(str(d["id"]) for d in dims_raw)
    personas = _entries(_read("personas.yaml"), "personas", "personas.yaml")
    style = np.stack(
        [style_vector(p.get("style"), dims, f"personas.yaml: {p['id']}") for p in personas]
    )

    qdoc = _read("questions.yaml")
    kinds = qdoc.get("kinds", {}) if isinstance(qdoc, dict) else {}
    if set(kinds) != set(KINDS):
        raise WorldFormatError(f"questions.yaml: kinds must be exactly {list(KINDS)}")
    kind_need = np.stack(
        [style_vector(kinds[k].get("need"), dims, f"questions.yaml: kind {k}") for k in KINDS]
    )
    cues = _entries(qdoc, "cues", "questions.yaml")
    cue_need = np.stack(
        [style_vector(c.get("need"), dims, f"questions.yaml: cue {c['id']}") for c in cues]
    )

    topics = {}
    for pool in ("dev", "heldout"):
        file = f"topics_{pool}.yaml"
        items = _entries(_read(file), "topics", file)
        for t in items:
            chains = t.get("chains")
            if not isinstance(chains, list) or len(chains) != 2:
                raise WorldFormatError(f"{file}: topic {t['id']} must have exactly 2 chains")
            for c in chains:
                missing = [k for k in ("concept", *KINDS) if not isinstance(c.get(k), str)]
                if missing:
                    raise WorldFormatError(f"{file}: topic {t['id']} chain lacks {missing}")
        topics[pool] = tuple(items)

    quirk_entries = _entries(_read("quirks.yaml"), "quirks", "quirks.yaml")
    quirks = parse_quirks(quirk_entries, dims, "quirks.yaml")
    profiles = {}
    for pool in ("dev", "heldout"):
        file = f"profiles_{pool}.yaml"
        entries = _entries(_read(file, version), "profiles", file)
        profiles[pool] = parse_profiles(entries, dims, {q.id for q in quirks}, file)
    template = _read("template.yaml", version)
    traits = parse_traits(_entries(template, "traits", "template.yaml"), dims, "template.yaml")

    return TutorSimData(
        dims=dims,
        dim_descriptions=tuple(str(d.get("description", "")) for d in dims_raw),
        personas=tuple(personas),
        persona_style=style,
        kind_need=kind_need,
        cues=tuple(cues),
        cue_need=cue_need,
        topics=topics,
        profiles=profiles,
        quirks=quirks,
        traits=traits,
        shared_taste=style_vector(
            template.get("shared_taste"), dims, "template.yaml: shared_taste"
        ),
        version=version,
    )


def _unique_ids(items: list[dict[str, Any]], where: str) -> None:
    seen: set[str] = set()
    for item in items:
        if str(item["id"]) in seen:
            raise WorldFormatError(f"{where}: id {item['id']!r} appears twice")
        seen.add(str(item["id"]))


def _number(value: Any, where: str, *, low: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorldFormatError(f"{where}: expected a number, got {value!r}")
    if low is not None and value < low:
        raise WorldFormatError(f"{where}: must be >= {low:g}, got {value!r}")
    return float(value)


def parse_quirks(
    entries: list[dict[str, Any]], dims: tuple[str, ...], where: str
) -> tuple[Quirk, ...]:
    """Quirks from their YAML entries (``id``, ``description``, ``dim``, ``sign`` +1 or -1,
    optional ``when_kind``), as in ``quirks.yaml``.

    Raises:
        WorldFormatError: naming ``where``, the quirk and the field that is wrong.
    """
    _unique_ids(entries, where)
    quirks = []
    for q in entries:
        at = f"{where}: quirk {q['id']}"
        if q.get("dim") not in dims:
            raise WorldFormatError(f"{at}: dim must be one of {list(dims)}, got {q.get('dim')!r}")
        sign = q.get("sign", 1)
        if sign not in (1, -1):
            raise WorldFormatError(f"{at}: sign must be 1 or -1, got {sign!r}")
        when = q.get("when_kind")
        if when is not None and when not in KINDS:
            raise WorldFormatError(f"{at}: when_kind must be one of {list(KINDS)}, got {when!r}")
        quirks.append(
            Quirk(str(q["id"]), str(q.get("description", "")), dims.index(q["dim"]), sign, when)
        )
    return tuple(quirks)


def parse_profiles(
    entries: list[dict[str, Any]], dims: tuple[str, ...], quirk_ids: set[str], where: str
) -> tuple[Profile, ...]:
    """Hand-written student profiles from their YAML entries, as in ``profiles_*.yaml``.

    Raises:
        WorldFormatError: naming ``where``, the profile and the field that is wrong.
    """
    _unique_ids(entries, where)
    profiles = []
    for p in entries:
        at = f"{where}: profile {p['id']}"
        qs = p.get("quirks") or []
        if not isinstance(qs, list):
            raise WorldFormatError(f"{at}: quirks must be a list of quirk ids")
        unknown = [q for q in qs if q not in quirk_ids]
        if unknown:
            raise WorldFormatError(f"{at}: unknown quirks {unknown}; known: {sorted(quirk_ids)}")
        profiles.append(
            Profile(
                id=str(p["id"]),
                name=str(p.get("name", p["id"])),
                description=str(p.get("description", "")),
                taste=style_vector(p.get("taste"), dims, f"{at}: taste"),
                cue_following=_number(p.get("cue_following", 1.0), f"{at}: cue_following", low=0),
                quirks=tuple(str(q) for q in qs),
            )
        )
    return tuple(profiles)


def parse_traits(
    entries: list[dict[str, Any]], dims: tuple[str, ...], where: str
) -> tuple[Trait, ...]:
    """Template traits and their values from YAML entries, as in ``template.yaml``.

    Raises:
        WorldFormatError: naming ``where``, the trait or value and the field that is wrong.
    """
    _unique_ids(entries, where)
    traits = []
    for t in entries:
        values = t.get("values")
        if not isinstance(values, list) or not values:
            raise WorldFormatError(f"{where}: trait {t['id']}: values must be a non-empty list")
        for i, v in enumerate(values):
            if not isinstance(v, dict) or "id" not in v:
                raise WorldFormatError(f"{where}: trait {t['id']}: value {i} needs an id")
        _unique_ids(values, f"{where}: trait {t['id']}")
        parsed = tuple(
            TraitValue(
                id=str(v["id"]),
                description=str(v.get("description", "")),
                taste=style_vector(v.get("taste"), dims, f"{where}: {t['id']}.{v['id']}: taste"),
                cue_following=None
                if v.get("cue_following") is None
                else _number(v["cue_following"], f"{where}: {t['id']}.{v['id']}", low=0),
            )
            for v in values
        )
        traits.append(Trait(str(t["id"]), str(t.get("description", "")), parsed))
    return tuple(traits)
