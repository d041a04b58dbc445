"""Load and validate TutorSim's data files (``worlds/data/*.yaml``).

Files: ``style.yaml`` (style dimensions), ``personas.yaml``, ``questions.yaml`` (question kinds
and the 13 cues), ``topics_dev.yaml`` / ``topics_heldout.yaml``, ``profiles_dev.yaml`` /
``profiles_heldout.yaml`` (hand-written students), ``quirks.yaml`` and ``template.yaml`` (the
7-trait template for Composite and Quirky students). Style, need and taste values are mappings
from a style-dimension id to a float in [-1, 1]; omitted dimensions are 0.

Every file is parsed with the entry types of `prefduel.worlds.tutorsim_catalogue` (one per
YAML format; datagen configs and roster files read the same formats with them).
Template students are rendered by `prefduel.worlds.tutorsim_template` (TutorSim's Composite
and Quirky rosters, and datagen's ``students: {template: N}``).

The data are versioned with the generator: version 2 (the current one) reads the files above;
version 1 reads ``v1/template.yaml`` and ``v1/profiles_heldout.yaml`` in their place, so worlds
of the first generator stay reproducible (``GENERATOR_VERSIONS``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

import numpy as np
from pydantic import ValidationError

from prefduel.core.errors import WorldFormatError
from prefduel.core.schema import Problem, field_path, first_problem, type_adapter, validate
from prefduel.core.yamlfile import parse_yaml
from prefduel.worlds.tutorsim_catalogue import (
    KINDS,
    Cue,
    Kind,
    Persona,
    ProfileEntry,
    QuirkEntry,
    References,
    StyleDim,
    Topic,
    TraitEntry,
    Vector,
    parse_entries,
)

E = TypeVar("E")
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
    #: Noise of a preference question's answer, in units of one click's (`worlds.asking`).
    answer_noise: float = 1.0


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


#: Packaged data files of each catalogue: collection -> {pool name: (file, top-level key)};
#: the first pool is the default (``builtin``).
PACKAGED_FILES: dict[str, dict[str, tuple[str, str]]] = {
    "style": {"builtin": ("style.yaml", "dims")},
    "personas": {"builtin": ("personas.yaml", "personas")},
    "kinds": {"builtin": ("questions.yaml", "kinds")},
    "cues": {"builtin": ("questions.yaml", "cues")},
    "topics": {"dev": ("topics_dev.yaml", "topics"), "heldout": ("topics_heldout.yaml", "topics")},
    "quirks": {"builtin": ("quirks.yaml", "quirks")},
    "students": {
        "dev": ("profiles_dev.yaml", "profiles"),
        "heldout": ("profiles_heldout.yaml", "profiles"),
    },
}


def read_data_file(name: str, version: int = CURRENT_VERSION) -> Any:
    """The parsed YAML of a packaged data file (``worlds/data/<name>``) of a generator version.

    Raises:
        WorldFormatError: The file is missing or not YAML.
    """
    folder = resources.files("prefduel.worlds").joinpath("data")
    if name in _VERSIONED_FILES.get(version, ()):
        folder = folder.joinpath(f"v{version}")
    try:
        text = folder.joinpath(name).read_text("utf-8")
    except FileNotFoundError as exc:
        raise WorldFormatError(f"TutorSim data file {name} is missing") from exc
    return parse_yaml(text, f"TutorSim data file {name}", WorldFormatError)


def style_vector(mapping: Any, dims: tuple[str, ...], where: str) -> np.ndarray:
    """A ``{style dim: value in [-1, 1]}`` mapping as an ``(m,)`` vector (omitted dims are 0).

    Raises:
        WorldFormatError: naming ``where`` and the dimension or value that is wrong.
    """
    context = References(dims=dims).context()
    vector = validate(Vector, mapping, error=WorldFormatError, source=where, context=context)
    return np.array(vector, dtype=float)


# -- the packaged files -----------------------------------------------------------------------


def _stack(vectors: Iterable[tuple[float, ...]]) -> np.ndarray:
    return np.array([list(v) for v in vectors], dtype=float)


def _packaged(
    file: str, key: str, entry: type[E], references: References, version: int
) -> tuple[Any, tuple[E, ...]]:
    """A packaged file's entries under ``key``: as written, and parsed."""
    doc = read_data_file(file, version)
    raw = doc.get(key) if isinstance(doc, dict) else None
    parsed = parse_entries(entry, raw, references, error=WorldFormatError, source=file, path=key)
    return raw, parsed


def _questions(
    refs: References, version: int
) -> tuple[np.ndarray, tuple[dict[str, Any], ...], np.ndarray]:
    """Kind needs ``(3, m)`` (rows in `KINDS` order), the cues as written and their needs."""
    _, kinds = _packaged("questions.yaml", "kinds", Kind, refs, version)
    by_id = {k.id: k for k in kinds}
    if set(by_id) != set(KINDS):
        raise WorldFormatError(f"questions.yaml: kinds must be exactly {list(KINDS)}")
    raw_cues, cues = _packaged("questions.yaml", "cues", Cue, refs, version)
    return _stack(by_id[k].need for k in KINDS), tuple(raw_cues), _stack(c.need for c in cues)


def _topics(pool: str, refs: References, version: int) -> tuple[dict[str, Any], ...]:
    """A topic pool as written; every topic has 2 chains with a question of each kind."""
    file = f"topics_{pool}.yaml"
    raw, topics = _packaged(file, "topics", Topic, refs, version)
    for topic in topics:
        complete = all(chain.example(kind) for chain in topic.chains for kind in KINDS)
        if len(topic.chains) != 2 or not complete:
            raise WorldFormatError(
                f"{file}: topic {topic.id} must have exactly 2 chains, each with a concept and "
                f"a question of each kind {list(KINDS)}"
            )
    return tuple(raw)


def _template(refs: References, version: int) -> tuple[tuple[Trait, ...], np.ndarray]:
    """The template's traits and the shared taste of its students."""
    doc = read_data_file("template.yaml", version)
    doc = doc if isinstance(doc, dict) else {}
    entries = parse_entries(
        TraitEntry,
        doc.get("traits"),
        refs,
        error=WorldFormatError,
        source="template.yaml",
        path="traits",
    )
    shared = style_vector(doc.get("shared_taste"), refs.dims, "template.yaml: shared_taste")
    return tuple(_trait(t) for t in entries), shared


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
    style = _packaged("style.yaml", "dims", StyleDim, References(), version)[1]
    refs = References(dims=tuple(d.id for d in style))
    raw_personas, personas = _packaged("personas.yaml", "personas", Persona, refs, version)
    kind_need, cues, cue_need = _questions(refs, version)
    quirk_entries = _packaged("quirks.yaml", "quirks", QuirkEntry, refs, version)[1]
    quirks = tuple(_quirk(q, refs.dims) for q in quirk_entries)
    profile_refs = References(dims=refs.dims, quirks=tuple(q.id for q in quirks))
    profiles = {
        pool: tuple(
            _profile(p) for p in _packaged(file, key, ProfileEntry, profile_refs, version)[1]
        )
        for pool, (file, key) in PACKAGED_FILES["students"].items()
    }
    traits, shared_taste = _template(refs, version)
    return TutorSimData(
        dims=refs.dims,
        dim_descriptions=tuple(d.description for d in style),
        personas=tuple(raw_personas),
        persona_style=_stack(p.style for p in personas),
        kind_need=kind_need,
        cues=cues,
        cue_need=cue_need,
        topics={pool: _topics(pool, refs, version) for pool in ("dev", "heldout")},
        profiles=profiles,
        quirks=quirks,
        traits=traits,
        shared_taste=shared_taste,
        version=version,
    )


# -- parsed entries as TutorSim's types -------------------------------------------------------


def _quirk(entry: QuirkEntry, dims: Sequence[str]) -> Quirk:
    return Quirk(
        entry.id, entry.description, list(dims).index(entry.dim), entry.sign, entry.when_kind
    )


def _profile(entry: ProfileEntry) -> Profile:
    return Profile(
        id=entry.id,
        name=entry.name,
        description=entry.description,
        taste=np.array(entry.taste, dtype=float),
        cue_following=entry.cue_following,
        quirks=entry.quirks,
    )


def _trait(entry: TraitEntry) -> Trait:
    values = tuple(
        TraitValue(v.id, v.description, np.array(v.taste, dtype=float), v.cue_following)
        for v in entry.values
    )
    return Trait(entry.id, entry.description, values)


# -- entries of roster files: messages name the entry by its id -------------------------------


def _unique_ids(items: list[dict[str, Any]], where: str) -> None:
    seen: set[str] = set()
    for item in items:
        if str(item["id"]) in seen:
            raise WorldFormatError(f"{where}: id {item['id']!r} appears twice")
        seen.add(str(item["id"]))


def _entry_message(problem: Problem, entries: list[dict[str, Any]], noun: str, where: str) -> str:
    """``WHERE: profile ID: taste: value of 'brevity' must be ...``."""
    if not problem.loc or not isinstance(problem.loc[0], int):
        return f"{where}: {problem.message}"
    index, *rest = problem.loc
    if rest and isinstance(rest[-1], str) and repr(rest[-1]) in problem.message:
        rest = rest[:-1]  # the message names the key itself ("value of 'brevity' ...")
    field = field_path(rest)
    text = problem.message
    if field and not text.startswith(f"{field} "):
        text = f"{field}: {text}"
    entry = entries[index]
    return f"{where}: {noun} {entry.get('id') if isinstance(entry, dict) else index}: {text}"


def _parse_named(
    entry: type[E], entries: list[dict[str, Any]], refs: References, noun: str, where: str
) -> tuple[E, ...]:
    _unique_ids(entries, where)
    schema = tuple[entry, ...]  # type: ignore[valid-type]
    try:
        return type_adapter(schema).validate_python(entries, context=refs.context())
    except ValidationError as exc:
        problem = first_problem(exc, schema)
        raise WorldFormatError(_entry_message(problem, entries, noun, where)) from None


def parse_quirks(
    entries: list[dict[str, Any]], dims: tuple[str, ...], where: str
) -> tuple[Quirk, ...]:
    """Quirks from their YAML entries (`QuirkEntry`: ``id``, ``description``, ``dim``, ``sign``
    +1 or -1, optional ``when_kind``), as in ``quirks.yaml``.

    Raises:
        WorldFormatError: naming ``where``, the quirk and the field that is wrong.
    """
    parsed = _parse_named(QuirkEntry, entries, References(dims=dims), "quirk", where)
    return tuple(_quirk(q, dims) for q in parsed)


def parse_profiles(
    entries: list[dict[str, Any]], dims: tuple[str, ...], quirk_ids: set[str], where: str
) -> tuple[Profile, ...]:
    """Hand-written student profiles from their YAML entries (`ProfileEntry`), as in
    ``profiles_*.yaml``.

    Raises:
        WorldFormatError: naming ``where``, the profile and the field that is wrong.
    """
    parsed = _parse_named(ProfileEntry, entries, References(dims=dims), "profile", where)
    for profile in parsed:
        unknown = [q for q in profile.quirks if q not in quirk_ids]
        if unknown:
            raise WorldFormatError(
                f"{where}: profile {profile.id}: unknown quirks {unknown}; "
                f"known: {sorted(quirk_ids)}"
            )
    return tuple(_profile(p) for p in parsed)


def parse_traits(
    entries: list[dict[str, Any]], dims: tuple[str, ...], where: str
) -> tuple[Trait, ...]:
    """Template traits and their values from YAML entries (`TraitEntry`), as in
    ``template.yaml``.

    Raises:
        WorldFormatError: naming ``where``, the trait or value and the field that is wrong.
    """
    parsed = _parse_named(TraitEntry, entries, References(dims=dims), "trait", where)
    return tuple(_trait(t) for t in parsed)
