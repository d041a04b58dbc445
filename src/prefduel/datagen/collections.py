"""The collections of a datagen config, read with TutorSim's catalogue formats.

``style``, ``personas``, ``kinds``, ``cues``, ``topics``, ``quirks`` and ``students`` each take
the entries of TutorSim's YAML formats (`prefduel.worlds.tutorsim_catalogue`), given as

* ``builtin`` (or ``{builtin: dev}`` / ``{builtin: heldout}`` for topics and students): the
  packaged files (`prefduel.worlds.tutorsim_data.PACKAGED_FILES`),
* an inline list of entries,
* ``{file: path.yaml}``: a file in TutorSim's format (top-level ``dims:``, ``personas:``,
  ``kinds:``, ``cues:``, ``topics:``, ``quirks:`` or ``profiles:``), relative to the config,

each optionally with ``take: N`` (the first N) or ``take: [id, ...]`` (these, in this order).
Students may also be TutorSim's template students: ``students: {template: 20, quirks: 2}``
(`template_students`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefduel.core.rng import stream
from prefduel.core.schema import Integer, validate
from prefduel.core.yamlfile import read_yaml
from prefduel.datagen.errors import DatagenConfigError
from prefduel.llm.config import PathText
from prefduel.worlds.tutorsim_catalogue import (
    Cue,
    Kind,
    Persona,
    ProfileEntry,
    QuirkEntry,
    References,
    StyleDim,
    Topic,
    parse_entries,
)
from prefduel.worlds.tutorsim_data import PACKAGED_FILES, load_tutorsim_data, read_data_file
from prefduel.worlds.tutorsim_template import draw_template_students

T = TypeVar("T")

#: Collection -> its entry type.
ENTRY_TYPES: dict[str, type] = {
    "style": StyleDim,
    "personas": Persona,
    "kinds": Kind,
    "cues": Cue,
    "topics": Topic,
    "quirks": QuirkEntry,
    "students": ProfileEntry,
}


@dataclass(frozen=True)
class Where:
    """Where a config's messages point and where its input files are.

    Attributes:
        source: The config file ("config" for configs built in code).
        base: Folder that relative input files are found in.
    """

    source: str
    base: Path

    def error(self, path: str, message: str) -> DatagenConfigError:
        """``SOURCE: PATH: message``."""
        return DatagenConfigError(f"{self.source}: {path}: {message}")


@dataclass(frozen=True)
class Collections:
    """The entries a config uses (see `prefduel.datagen.config.DatagenConfig`)."""

    style: tuple[StyleDim, ...]
    personas: tuple[Persona, ...]
    kinds: tuple[Kind, ...]
    cues: tuple[Cue, ...]
    topics: tuple[Topic, ...]
    quirks: tuple[QuirkEntry, ...]
    students: tuple[ProfileEntry, ...]


class _Reference(BaseModel):
    """``{builtin: NAME}`` or ``{file: PATH}``, optionally with ``take``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    builtin: Any = None
    file: PathText | None = None
    take: Any = None

    @model_validator(mode="after")
    def _one_origin(self) -> _Reference:
        if (self.builtin is None) == (self.file is None):
            raise ValueError("expected exactly one of 'builtin' and 'file'")
        return self


class _Template(BaseModel):
    """``{template: N, quirks: K}``: N template students with K quirks each."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    template: Annotated[Integer, Field(ge=1)]
    quirks: Annotated[Integer, Field(ge=0)] = 0


def _top_level(doc: Any, key: str, source: str) -> tuple[Any, str, str]:
    if not isinstance(doc, Mapping) or key not in doc:
        raise DatagenConfigError(f"{source}: {key}: expected a top-level {key!r} entry")
    return doc[key], source, key


@functools.cache
def _packaged_file(file: str) -> Any:
    """A packaged file, parsed once per process (a config reads several; the parsed entries
    are only read: they are validated into frozen entries)."""
    return read_data_file(file)


def _packaged(name: str, builtin: Any, where: Where) -> tuple[Any, str, str]:
    """Entries, their source and path, from a packaged file."""
    pools = PACKAGED_FILES[name]
    pool = next(iter(pools)) if builtin in (True, "builtin") else builtin
    if not isinstance(pool, str) or pool not in pools:
        message = f"expected one of {sorted(pools)} (or 'builtin'), got {builtin!r}"
        raise where.error(f"{name}.builtin", message)
    file, key = pools[pool]
    return _top_level(_packaged_file(file), key, f"prefduel/worlds/data/{file}")


def _from_file(name: str, file: str, where: Where) -> tuple[Any, str, str]:
    """Entries, their source and path, from the user's file in TutorSim's format."""
    path = Path(file)
    path = path if path.is_absolute() else where.base / path
    doc = read_yaml(path, "file", lambda message: where.error(f"{name}.file", message))
    key = next(iter(PACKAGED_FILES[name].values()))[1]
    return _top_level(doc, key, str(path))


def read_collection(name: str, value: Any, references: References, where: Where) -> tuple:
    """One collection, as its entry type (`ENTRY_TYPES`).

    Args:
        name: ``style``, ``personas``, ``kinds``, ``cues``, ``topics``, ``quirks`` or
            ``students``.
        value: The config's value (``builtin``, a list, ``{builtin|file: ..., take: ...}``).
        references: Style dims, kinds and quirks the entries may name.
        where: The config file and its folder.

    Raises:
        DatagenConfigError: Naming the file (the config's, or the entries') and the field.
    """
    take = None
    if isinstance(value, str) or value is True:
        value = {"builtin": value}
    if isinstance(value, list):
        entries, source, path = value, where.source, name
    elif isinstance(value, Mapping):
        ref = validate(
            _Reference, value, error=DatagenConfigError, source=where.source, prefix=name
        )
        take = ref.take
        if ref.file is None:
            entries, source, path = _packaged(name, ref.builtin, where)
        else:
            entries, source, path = _from_file(name, ref.file, where)
    else:
        kind = "null" if value is None else type(value).__name__
        message = f"expected 'builtin', a list, or a mapping with builtin/file, got {kind}"
        raise where.error(name, message)
    items = parse_entries(
        ENTRY_TYPES[name], entries, references, error=DatagenConfigError, source=source, path=path
    )
    return items if take is None else _take(items, take, f"{name}.take", where)


def _take(items: tuple[T, ...], take: Any, path: str, where: Where) -> tuple[T, ...]:
    """The first ``take`` items, or those with the ids ``take`` lists (in its order)."""
    if isinstance(take, int) and not isinstance(take, bool):
        if not 1 <= take <= len(items):
            raise where.error(path, f"expected 1..{len(items)} (entries available), got {take}")
        return items[:take]
    if not isinstance(take, list) or not take:
        raise where.error(path, f"expected a count or a non-empty list of ids, got {take!r}")
    by_id = {item.id: item for item in items}  # type: ignore[attr-defined]
    for i, wanted in enumerate(take):
        if not isinstance(wanted, str) or wanted not in by_id:
            raise where.error(f"{path}[{i}]", f"unknown id {wanted!r}; known: {sorted(by_id)}")
    if len(set(take)) != len(take):
        duplicate = next(t for i, t in enumerate(take) if t in take[:i])
        raise where.error(path, f"duplicate id {duplicate!r}")
    return tuple(by_id[wanted] for wanted in take)


def template_students(
    count: int, n_quirks: int, seed: int, quirks: Sequence[QuirkEntry], template_scale: float
) -> tuple[ProfileEntry, ...]:
    """Students rendered from TutorSim's 7-trait template (`draw_template_students`).

    Distinct trait combinations are drawn from ``stream(seed, "datagen", "template")``, then
    each student's quirks; the description joins the values' descriptions (and the quirks'),
    the taste is ``template_scale`` times the sum of the values' tastes.

    Args:
        count: Students.
        n_quirks: Quirks per student (0 for Composite-like students).
        seed: Seed.
        quirks: Quirks to draw from.
        template_scale: Taste scale of template students.

    Returns:
        ``count`` students with ids ``template-0``, ``template-1``, ...
    """
    traits = load_tutorsim_data().traits
    rng = stream(seed, "datagen", "template")
    drawn = draw_template_students(traits, count, rng, quirks=quirks, quirks_each=n_quirks)
    return tuple(
        ProfileEntry(
            id=f"template-{a}",
            name=student.profile,
            description=student.description,
            taste=tuple(float(x) for x in template_scale * student.taste_sum),
            cue_following=float(student.cue_following),
            quirks=tuple(q.id for q in student.quirks),
        )
        for a, student in enumerate(drawn)
    )


def _template(
    value: Mapping[str, Any],
    quirks: tuple[QuirkEntry, ...],
    where: Where,
    seed: int,
    template_scale: float,
) -> tuple[ProfileEntry, ...]:
    spec = validate(
        _Template, value, error=DatagenConfigError, source=where.source, prefix="students"
    )
    combinations = math.prod(len(t.values) for t in load_tutorsim_data().traits)
    if spec.template > combinations:
        message = f"expected at most {combinations} students, got {spec.template}"
        raise where.error("students.template", message)
    if spec.quirks > len(quirks):
        raise where.error("students.quirks", f"expected at most {len(quirks)}, got {spec.quirks}")
    return template_students(spec.template, spec.quirks, seed, quirks, template_scale)


def _students(
    data: Mapping[str, Any],
    references: References,
    quirks: tuple[QuirkEntry, ...],
    where: Where,
    seed: int,
    template_scale: float,
) -> tuple[ProfileEntry, ...]:
    """Hand-written or template students; each needs a description (the judge's role)."""
    if "students" not in data:
        raise where.error("students", "missing: give profiles or {builtin: dev, take: 2}")
    value = data["students"]
    if isinstance(value, Mapping) and "template" in value:
        return _template(value, quirks, where, seed, template_scale)
    students = read_collection("students", value, references, where)
    for student in students:
        if not student.description:
            message = f"{student.id!r} has no description (an LLM judge's role)"
            raise where.error("students", message)
    return students


def _quirks(value: Any, references: References, where: Where) -> tuple[QuirkEntry, ...]:
    """The quirks; the kinds they name are checked after ``take`` (unused ones may name any)."""
    unchecked = References(dims=references.dims, kinds=None)
    quirks = read_collection("quirks", value, unchecked, where)
    kinds = references.kinds or ()
    for i, quirk in enumerate(quirks):
        if quirk.when_kind is not None and quirk.when_kind not in kinds:
            message = f"unknown kind {quirk.when_kind!r}; known: {list(kinds)}"
            raise where.error(f"quirks[{i}].when_kind", message)
    return quirks


def _check_distinct(items: Sequence[Any], attr: str, path: str, where: Where, why: str) -> None:
    seen: dict[str, str] = {}
    for item in items:
        text = getattr(item, attr)
        if text in seen:
            raise where.error(path, f"{seen[text]!r} and {item.id!r} have the same {attr}; {why}")
        seen[text] = item.id


def read_collections(
    data: Mapping[str, Any], where: Where, *, seed: int, template_scale: float
) -> Collections:
    """Every collection of a config, each checked against those it refers to.

    Args:
        data: The config's top level.
        where: The config file and its folder.
        seed: The config's seed (template students).
        template_scale: Taste scale of template students.

    Raises:
        DatagenConfigError: Naming the file and the field.
    """
    style = read_collection("style", data.get("style", "builtin"), References(), where)
    refs = References(dims=tuple(d.id for d in style))
    personas = read_collection("personas", data.get("personas", "builtin"), refs, where)
    if len(personas) < 2:
        raise where.error("personas", f"expected at least 2 personas, got {len(personas)}")
    kinds = read_collection("kinds", data.get("kinds", "builtin"), refs, where)
    refs = References(dims=refs.dims, kinds=tuple(k.id for k in kinds))
    cues = read_collection("cues", data.get("cues", "builtin"), refs, where)
    if "topics" not in data:
        raise where.error("topics", "missing: give a list of topics or {builtin: dev, take: 4}")
    topics = read_collection("topics", data["topics"], refs, where)
    quirks = _quirks(data.get("quirks", "builtin"), refs, where)
    refs = References(dims=refs.dims, kinds=refs.kinds, quirks=tuple(q.id for q in quirks))
    students = _students(data, refs, quirks, where, seed, template_scale)
    _check_distinct(
        students, "description", "students", where, "the judge could not tell them apart"
    )
    _check_distinct(personas, "prompt", "personas", where, "their answers would be the same")
    return Collections(style, personas, kinds, cues, topics, quirks, students)


__all__ = [
    "ENTRY_TYPES",
    "Collections",
    "Where",
    "read_collection",
    "read_collections",
    "template_students",
]
