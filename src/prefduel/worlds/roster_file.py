"""Roster files: your own TutorSim population in YAML, wherever a roster id is accepted.

A roster file names a built-in roster as its ``base`` and changes what it wants; every field it
leaves out keeps the base's value::

    base: dev                      # any roster id, or ROSTER@VERSION for an older generator
    name: night-school             # optional, for tables (default: the file's stem)
    description: evening learners  # optional, one line for `prefduel worlds`
    arrivals: 200                  # N
    topics: heldout                # topic pool: dev | heldout
    students: profiles             # profiles | composite | quirky | scrambled | isotropic
    profiles:                      # hand-written students (same schema as the packaged ones):
      file: my_students.yaml       #   {file: F, take: N | [ids]}, {builtin: dev | heldout, ...}
      take: 4                      #   or an inline list of profiles
    quirks: [...]                  # extra quirks (same schema as quirks.yaml), or {file: F}
    template:                      # template students (composite, quirky)
      shared_taste: {brevity: 0.3} #   the population's shared taste
      traits: [...]                #   traits and values, as in template.yaml
    params:                        # any TutorSimParams knob, e.g. profile_jitter (per-arrival
      profile_jitter: 0.2          #   jitter), cue_spread, rater_noise, judge_beta,
      judge_samples: 4             #   judge_samples, quirks_per_student

Files named in it are found next to it. Worlds built from a roster file use the base roster's
random streams, so a file that changes nothing (or names the base's own profiles) reproduces the
base roster's worlds bit for bit; a file based on a locked roster is locked too. Worlds and
result rows carry the file's path as their name.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prefduel.core.errors import WorldFormatError
from prefduel.core.schema import Integer, Number, Real, Text, validate
from prefduel.core.yamlfile import read_yaml
from prefduel.worlds.rosters import ROSTERS, builtin_roster, is_roster, is_roster_file
from prefduel.worlds.tutorsim_data import (
    DEFAULT_PARAMS,
    Profile,
    TutorSimData,
    TutorSimParams,
    parse_profiles,
    parse_quirks,
    parse_traits,
    style_vector,
)
from prefduel.worlds.world import MAX_ARRIVALS

STUDENT_KINDS = ("profiles", "composite", "quirky", "scrambled", "isotropic")
PROFILE_KINDS = ("dev-profiles", "heldout-profiles")
INT_PARAMS = {"judge_samples", "quirks_per_student"}
#: Knobs that may be negative (biases and a centering weight); every other knob is a scale.
SIGNED_PARAMS = {"judge_position", "judge_label", "ncenter"}
#: Largest size of a knob: every calibrated knob is of order 1, and far larger ones overflow
#: the simulator's exponentials.
MAX_KNOB = 1e3
#: Largest integer knob (judge picks per configuration, quirks per student).
MAX_COUNT = 1000
#: Smallest integer knobs other than 0: a world needs at least one judge pick.
MIN_COUNT = {"judge_samples": 1}
#: Smallest float knobs other than 0: a smaller Bradley-Terry ridge leaves the fit singular,
#: a smaller scale makes every utility equal.
MIN_KNOB = {"bt_ridge": 1e-6, "bt_scale": 1e-3}
#: Largest seed count of a roster's reporting protocol.
MAX_PROTOCOL_SEEDS = 10_000


class RosterFileError(WorldFormatError):
    """A roster file that cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    __schema_keys__ = "fields"


class _Collection(_Strict):
    """Where entries come from: a packaged pool or a YAML file, optionally a subset."""

    builtin: Literal["dev", "heldout"] | None = None
    file: Text | None = None
    take: Annotated[Integer, Field(ge=1)] | list[Text] | None = None


class _Template(_Strict):
    shared_taste: dict[str, Real] | None = None
    traits: list[dict[str, Any]] | Text | None = None


class _RosterFileModel(_Strict):
    base: Text
    name: Text | None = None
    description: Text | None = None
    arrivals: Annotated[Integer, Field(ge=1, le=MAX_ARRIVALS)] | None = None
    topics: Literal["dev", "heldout"] | None = None
    students: Literal["profiles", "composite", "quirky", "scrambled", "isotropic"] | None = None
    seeds: Annotated[Integer, Field(ge=1, le=MAX_PROTOCOL_SEEDS)] | None = None
    profiles: Any = None  # a list of entries or a _Collection mapping (checked by _collection)
    quirks: Any = None
    template: _Template | None = None
    params: dict[str, Number] | None = None


def roster_file_label(name: str) -> str:
    """The name worlds and rows carry for a roster file: its normalized path."""
    return os.path.normpath(name.strip())


def _collection(value: Any, where: str) -> list[dict[str, Any]] | _Collection:
    """A ``profiles``/``quirks`` value: an inline list, or ``{builtin|file, take}``."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return validate(_Collection, value, error=RosterFileError, source=where)
    raise RosterFileError(
        f"{where}: expected a list of entries or a mapping with builtin/file/take, got {value!r}"
    )


def _entries(doc: Any, key: str, where: str) -> list[dict[str, Any]]:
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise RosterFileError(f"{where}: expected a top-level list {key!r}")
    items = doc[key]
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "id" not in item:
            raise RosterFileError(f"{where}: entry {i} of {key!r} must be a mapping with an id")
    return items


def _take(items: tuple[Any, ...], take: int | list[str] | None, where: str) -> tuple[Any, ...]:
    if take is None:
        return items
    if isinstance(take, int):
        if take > len(items):
            raise RosterFileError(f"{where}: take {take} but only {len(items)} entries")
        return items[:take]
    by_id = {item.id: item for item in items}
    missing = [i for i in take if i not in by_id]
    if missing:
        raise RosterFileError(f"{where}: take names unknown ids {missing}; known: {list(by_id)}")
    return tuple(by_id[i] for i in take)


class _Loader:
    """Applies one validated roster file to its base roster's data and knobs."""

    def __init__(self, path: Path, spec: _RosterFileModel, data: TutorSimData) -> None:
        self.path, self.spec, self.data = path, spec, data

    def where(self, field: str) -> str:
        return f"roster file {self.path}: {field}"

    def read(self, file: str, key: str, field: str) -> list[dict[str, Any]]:
        target = self.path.parent / file
        doc = read_yaml(target, f"{self.where(field)}: file", RosterFileError)
        return _entries(doc, key, f"{self.where(field)}: {target}")

    def quirks(self) -> TutorSimData:
        if self.spec.quirks is None:
            return self.data
        spec = _collection(self.spec.quirks, self.where("quirks"))
        if isinstance(spec, _Collection) and (spec.builtin or not spec.file):
            raise RosterFileError(f"{self.where('quirks')}: give a list or {{file: F}}")
        entries = spec if isinstance(spec, list) else self.read(spec.file, "quirks", "quirks")
        added = parse_quirks(entries, self.data.dims, self.where("quirks"))
        if isinstance(spec, _Collection):
            added = _take(added, spec.take, self.where("quirks"))
        ids = {q.id for q in added}
        kept = tuple(q for q in self.data.quirks if q.id not in ids)
        return dataclasses.replace(self.data, quirks=kept + added)

    def profiles(self) -> tuple[Profile, ...] | None:
        if self.spec.profiles is None:
            return None
        spec = _collection(self.spec.profiles, self.where("profiles"))
        quirk_ids = {q.id for q in self.data.quirks}
        if isinstance(spec, list):
            items = parse_profiles(spec, self.data.dims, quirk_ids, self.where("profiles"))
        elif spec.builtin and not spec.file:
            items = self.data.profiles[spec.builtin]
        elif spec.file and not spec.builtin:
            entries = self.read(spec.file, "profiles", "profiles")
            items = parse_profiles(entries, self.data.dims, quirk_ids, self.where("profiles"))
        else:
            raise RosterFileError(f"{self.where('profiles')}: give exactly one of builtin, file")
        if not isinstance(spec, list):
            items = _take(items, spec.take, self.where("profiles"))
        if not items:
            raise RosterFileError(f"{self.where('profiles')}: no profiles")
        return items

    def template(self) -> TutorSimData:
        spec = self.spec.template
        if spec is None:
            return self.data
        data = self.data
        if spec.shared_taste is not None:
            shared = style_vector(spec.shared_taste, data.dims, self.where("template.shared_taste"))
            data = dataclasses.replace(data, shared_taste=shared)
        if spec.traits is not None:
            entries = (
                self.read(spec.traits, "traits", "template.traits")
                if isinstance(spec.traits, str)
                else spec.traits
            )
            traits = parse_traits(entries, data.dims, self.where("template.traits"))
            data = dataclasses.replace(data, traits=traits)
        return data

    def params(self) -> TutorSimParams:
        knobs = dict(self.spec.params or {})
        fields = [f.name for f in dataclasses.fields(TutorSimParams)]
        unknown = sorted(set(knobs) - set(fields))
        if unknown:
            raise RosterFileError(
                f"{self.where('params')}: unknown knobs {unknown}; allowed: {', '.join(fields)}"
            )
        for key, value in knobs.items():
            where = self.where("params." + key)
            low = MIN_COUNT.get(key, 0)
            if key in INT_PARAMS and (not isinstance(value, int) or not low <= value <= MAX_COUNT):
                raise RosterFileError(f"{where}: must be an integer from {low} to {MAX_COUNT}")
            if not math.isfinite(value) or abs(value) > MAX_KNOB:
                raise RosterFileError(
                    f"{where}: {value!r} is not a finite number of at most {MAX_KNOB:g} in size"
                )
            if value < 0 and key not in SIGNED_PARAMS:
                raise RosterFileError(f"{where}: must be >= 0")
            if value < MIN_KNOB.get(key, -math.inf):
                raise RosterFileError(f"{where}: must be at least {MIN_KNOB[key]:g}")
        return dataclasses.replace(DEFAULT_PARAMS, **knobs)


def load_roster_file(path: str | Path) -> dict[str, Any]:
    """Read and validate a roster file.

    Args:
        path: The ``.yaml`` file.

    Returns:
        The fields of its `Roster`: ``id`` (the base's, for the random streams), ``arrivals``,
        ``students``, ``topics``, ``seeds``, ``locked``, ``description``, ``version``, ``data``
        (`TutorSimData`), ``params`` (`TutorSimParams`) and ``source`` (the label).

    Raises:
        RosterFileError: naming the file, the field and, where there is a choice, the allowed
            values.
        UnknownIdError: an unknown base roster.
    """
    file = Path(path)
    doc = read_yaml(file, "roster file", RosterFileError)
    if not isinstance(doc, dict):
        raise RosterFileError(f"roster file {file}: expected a mapping with at least 'base'")
    spec = validate(
        _RosterFileModel, doc, error=RosterFileError, source=f"roster file {file}",
        root="(top level)",
    )
    if is_roster_file(spec.base) or not is_roster(spec.base):
        raise RosterFileError(
            f"roster file {file}: base: {spec.base!r} is not a built-in roster id; "
            f"allowed: {', '.join(ROSTERS)} (optionally ROSTER@VERSION)"
        )
    base = builtin_roster(spec.base)
    try:
        data, params, profiles = _apply(_Loader(file, spec, base.tutorsim_data()))
    except RosterFileError:
        raise
    except WorldFormatError as exc:  # from the shared parsers: same message, this file's type
        raise RosterFileError(str(exc)) from None
    students = _student_kind(spec.students, base.students, profiles is not None)
    if students == "quirky" and params.quirks_per_student > len(data.quirks):
        raise RosterFileError(
            f"roster file {file}: params.quirks_per_student is {params.quirks_per_student} "
            f"but only {len(data.quirks)} quirks exist"
        )
    return {
        "id": base.id,
        "arrivals": spec.arrivals or base.arrivals,
        "students": students,
        "topics": spec.topics or base.topics,
        "seeds": spec.seeds or base.seeds,
        "locked": base.locked,
        "description": spec.description or f"{spec.name or file.stem}: based on {base.label}",
        "version": base.version,
        "data": data,
        "params": params,
        "source": roster_file_label(str(path)),
    }


def _apply(loader: _Loader) -> tuple[TutorSimData, TutorSimParams, tuple[Profile, ...] | None]:
    """The roster file's data and knobs: the base's, changed as the file says."""
    loader.data = loader.quirks()
    profiles = loader.profiles()
    if profiles is not None:
        pools = {"dev": profiles, "heldout": profiles}
        loader.data = dataclasses.replace(loader.data, profiles=pools)
    return loader.template(), loader.params(), profiles


def _student_kind(requested: str | None, base_kind: str, has_profiles: bool) -> str:
    """The roster's internal student kind from the file's ``students`` field."""
    if requested is None:
        if has_profiles and base_kind not in (*PROFILE_KINDS, "scrambled"):
            return "heldout-profiles"
        return base_kind
    if requested == "profiles":
        return base_kind if base_kind in PROFILE_KINDS else "heldout-profiles"
    return requested
