"""The datagen config file: typed, frozen dataclasses, validated with errors naming field and file.

A config is YAML (see ``examples/small.yaml``)::

    name: small                     # world name, a folder name (default: the file's stem)
    seed: 0                         # cue draws, arrival layout, the scripted backend's truth
    output: worlds/small            # the stored world (a directory)
    llm: {backend: scripted}        # LLMConfig keys: backend, base_url, api_key_env, ...
    cache: .prefduel/llm-cache.sqlite   # shortcuts for llm.cache / llm.call_log /
    budget: 5.0                              # llm.budget (give each in one place only)
    models:                         # per role: a model name or a mapping
      default: gpt-4o-mini
      judge: {model: gpt-4o-mini, temperature: 1.0, max_tokens: 4}
    samples: 4                      # judge samples per (pair, display order, label assignment)
    personas: builtin               # TutorSim's six personas; or a list; or {file: ..., take: ...}
    kinds: builtin                  # definition / computation / why
    cues: builtin                   # the 13 first-person cues
    topics: {builtin: dev, take: 4}
    students: {builtin: dev, take: [nursing_student, math_major]}
    questions: {cues_per_question: 1}
    world: {arrivals: 40, rounds: 24}

Collections (``personas``, ``kinds``, ``cues``, ``topics``, ``students``, ``quirks``, ``style``)
use TutorSim's YAML formats (``prefduel/worlds/data/*.yaml``) and may be given as

* ``builtin`` (or ``{builtin: dev}`` / ``{builtin: heldout}`` for topics and students),
* an inline list of entries,
* ``{file: path.yaml}``: a file in TutorSim's format (top-level ``personas:``, ``topics:``,
  ``profiles:``, ``cues:``, ``kinds:``, ``quirks:`` or ``dims:``), relative to the config file,

each optionally with ``take: N`` (the first N) or ``take: [id, ...]`` (these, in this order).
Students may also be rendered from TutorSim's 7-trait template:
``students: {template: 20, quirks: 2}``.

Style, need and taste values (``style:`` of personas, ``need:`` of kinds and cues, ``taste:``,
``cue_following`` and ``quirks`` of students) are read only by the offline scripted backend,
whose judge follows TutorSim's latent preferences; a real LLM sees only the texts.

Input files are found relative to the config file; outputs (``output``, ``cache``,
``call_log``) relative to the working directory.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import yaml

from prefduel.core.errors import PrefduelError
from prefduel.core.rng import stream
from prefduel.core.yamlfile import read_yaml
from prefduel.datagen.prompts import Templates, check_template
from prefduel.llm.config import LLMConfig
from prefduel.llm.errors import LLMConfigError
from prefduel.worlds.tutorsim_data import DEFAULT_PARAMS, TutorSimParams

T = TypeVar("T")

ROLES = ("question", "answer", "rater", "judge")
_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


class DatagenError(PrefduelError):
    """Base class of the errors datagen raises on purpose."""


class DatagenConfigError(DatagenError, ValueError):
    """A datagen config is invalid; the message names the file and the field."""


# -- typed entries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StyleDim:
    """A style dimension (scripted backend only)."""

    id: str
    description: str = ""


@dataclass(frozen=True)
class Persona:
    """A persona: its prompt is the answer model's system prompt.

    Attributes:
        id: Identifier (also the key the rater uses).
        name: Display name.
        prompt: System prompt of the answers.
        style: Style vector ``(m,)`` over the style dims (scripted backend only).
    """

    id: str
    name: str
    prompt: str
    style: tuple[float, ...]


@dataclass(frozen=True)
class Kind:
    """A question kind (``definition``, ``computation``, ``why``, ...)."""

    id: str
    description: str
    need: tuple[float, ...]


@dataclass(frozen=True)
class Cue:
    """A first-person cue that ends a question ("I need a line I can quote in an exam.")."""

    id: str
    text: str
    need: tuple[float, ...]


@dataclass(frozen=True)
class Chain:
    """A concept of a topic, with optional example questions by kind id."""

    concept: str
    examples: tuple[tuple[str, str], ...] = ()

    def example(self, kind: str) -> str | None:
        """The example question of ``kind``, if given."""
        return dict(self.examples).get(kind)


@dataclass(frozen=True)
class Topic:
    """A topic: id, display name, subject and its concept chains."""

    id: str
    name: str
    subject: str
    chains: tuple[Chain, ...]


@dataclass(frozen=True)
class Quirk:
    """A quirk: like (+1) or dislike (-1) of a style dim, optionally on one kind only."""

    id: str
    description: str
    dim: str
    sign: float
    when_kind: str | None


@dataclass(frozen=True)
class Student:
    """A student profile: the description is the judge's role; the rest drives the scripted
    judge (taste ``(m,)``, cue following, quirk ids)."""

    id: str
    name: str
    description: str
    taste: tuple[float, ...]
    cue_following: float = 1.0
    quirks: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoleModel:
    """Model and sampling settings of one role.

    Attributes:
        model: Model name as the endpoint knows it.
        temperature: Sampling temperature (None: not sent).
        max_tokens: Completion token limit (None: not sent).
        seed: API seed; sample ``s`` is sent ``seed + s`` (None: no seed).
        expected_tokens: Completion tokens a typical answer has, for dry-run estimates
            (default: ``max_tokens``, an upper bound).
        params: More request parameters sent verbatim (``top_p``, ``reasoning_effort``, ...).
    """

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    expected_tokens: int | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def request_params(self) -> dict[str, Any]:
        """The parameters sent with each request."""
        out: dict[str, Any] = dict(self.params)
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        return out

    def completion_estimate(self) -> int:
        """Completion tokens assumed by dry runs."""
        return self.expected_tokens or self.max_tokens or 256


DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_ROLE_SETTINGS: dict[str, dict[str, Any]] = {
    "question": {"temperature": 0.8, "max_tokens": 150, "expected_tokens": 50},
    "answer": {"temperature": 0.7, "max_tokens": 400, "expected_tokens": 250},
    "rater": {"temperature": 0.0, "max_tokens": 200, "expected_tokens": 80},
    "judge": {"temperature": 1.0, "max_tokens": 4, "expected_tokens": 1},
}
DEFAULT_RETRIES = {"question": 2, "answer": 2, "rater": 2, "judge": 0}

#: TutorSim knobs the scripted backend reads (the others concern TutorSim's own rosters).
SCRIPTED_PARAMS = (
    "taste_scale",
    "persona_offset",
    "cue_strength",
    "ncenter",
    "topic_noise",
    "question_noise",
    "utility_noise",
    "template_scale",
    "quirk_strength",
    "rater_dim_error",
    "rater_bias",
    "rater_noise",
    "judge_beta",
    "judge_position",
    "judge_label",
    "judge_noise",
)


@dataclass(frozen=True)
class ScriptedSettings:
    """The offline scripted backend's hidden truth and fault knobs.

    Attributes:
        params: TutorSim's knobs (only `SCRIPTED_PARAMS` are used).
        rater_gain: Rater score points per unit of ``need . style`` (on a 1-10 scale).
        judge_malformed: Chance that a judge answer is not a letter (tests the accounting).
        rater_malformed: Chance that a rater answer is not parseable.
        latency: Seconds each scripted answer takes (demos, kill-and-resume tests).
    """

    params: TutorSimParams = DEFAULT_PARAMS
    rater_gain: float = 2.0
    judge_malformed: float = 0.0
    rater_malformed: float = 0.0
    latency: float = 0.0


@dataclass(frozen=True)
class WorldLayout:
    """How the judged (student, question) cells become arrivals.

    Attributes:
        arrivals: Arrivals N. Students are assigned in a seeded, balanced random order
            (every student ``floor(N / I)`` or ``ceil(N / I)`` times).
        rounds: Rounds S per arrival: S distinct questions drawn uniformly without replacement
            from the question bank for each arrival (None: ``min(24, Q)``).
    """

    arrivals: int = 100
    rounds: int | None = None


@dataclass(frozen=True)
class DatagenConfig:
    """A validated datagen config (see the module docstring for the YAML).

    Attributes:
        name: World name (a folder name: the default output is ``worlds/<name>``).
        seed: Seed of cue draws, layout, clicks and the scripted truth.
        output: World directory.
        source: The config file ("" for configs built in code).
        style: Style dimensions ``m``.
        personas: The K personas.
        kinds: Question kinds.
        cues: Cues.
        topics: Topics.
        quirks: Quirks students may have.
        students: Student profiles (the judge's roles).
        models: Role -> model settings.
        samples: Judge samples per (pair, display order, label assignment).
        cues_per_question: Cues drawn for each (topic, chain, kind): questions =
            topics x chains x kinds x cues_per_question.
        retries: Role -> extra tries (next sample indices) for malformed answers.
        rater_scale: Lowest and highest rater score.
        bt_ridge: Ridge of the per-(student, question) Bradley-Terry fit.
        bt_scale: Logits spanning U in [0, 1].
        layout: Arrival layout.
        templates: Prompt templates.
        scripted: Scripted backend settings.
        llm: Endpoint settings (the CLI's LLM flags override them).
    """

    name: str
    seed: int
    output: str
    source: str
    style: tuple[StyleDim, ...]
    personas: tuple[Persona, ...]
    kinds: tuple[Kind, ...]
    cues: tuple[Cue, ...]
    topics: tuple[Topic, ...]
    quirks: tuple[Quirk, ...]
    students: tuple[Student, ...]
    models: Mapping[str, RoleModel]
    samples: int = 4
    cues_per_question: int = 1
    retries: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RETRIES))
    rater_scale: tuple[float, float] = (1.0, 10.0)
    bt_ridge: float = DEFAULT_PARAMS.bt_ridge
    bt_scale: float = DEFAULT_PARAMS.bt_scale
    layout: WorldLayout = field(default_factory=WorldLayout)
    templates: Templates = field(default_factory=Templates)
    scripted: ScriptedSettings = field(default_factory=ScriptedSettings)
    llm: LLMConfig = field(default_factory=LLMConfig)

    @property
    def K(self) -> int:
        """Number of personas."""
        return len(self.personas)

    @property
    def n_questions(self) -> int:
        """Questions in the bank."""
        chains = sum(len(t.chains) for t in self.topics)
        return chains * len(self.kinds) * self.cues_per_question

    @property
    def rounds(self) -> int:
        """Rounds per arrival."""
        return self.layout.rounds or min(24, self.n_questions)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (ids, models, settings; no API key, only its variable name)."""
        return {
            "name": self.name,
            "seed": self.seed,
            "source": self.source,
            "personas": [p.id for p in self.personas],
            "kinds": [k.id for k in self.kinds],
            "cues": [c.id for c in self.cues],
            "topics": [t.id for t in self.topics],
            "students": [s.id for s in self.students],
            "models": {
                role: {k: v for k, v in dataclasses.asdict(m).items() if v not in (None, ())}
                for role, m in self.models.items()
            },
            "samples": self.samples,
            "cues_per_question": self.cues_per_question,
            "retries": dict(self.retries),
            "rater_scale": list(self.rater_scale),
            "bt": {"ridge": self.bt_ridge, "scale": self.bt_scale},
            "world": {"arrivals": self.layout.arrivals, "rounds": self.rounds},
            "templates": self.templates.to_json(),
            "scripted": {
                **{k: getattr(self.scripted.params, k) for k in SCRIPTED_PARAMS},
                "rater_gain": self.scripted.rater_gain,
                "judge_malformed": self.scripted.judge_malformed,
                "rater_malformed": self.scripted.rater_malformed,
            },
            "llm": {k: v for k, v in self.llm.to_json().items()},
        }


# -- validation helpers -----------------------------------------------------------------------


class _Where:
    """Builds error messages ``FILE: FIELD: ...``."""

    def __init__(self, source: str) -> None:
        self.source = source or "config"

    def error(self, path: str, message: str) -> DatagenConfigError:
        return DatagenConfigError(f"{self.source}: {path}: {message}")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _mapping(value: Any, path: str, where: _Where) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise where.error(path, f"expected a mapping, got {_type_name(value)}")
    return value


def _keys(
    data: Mapping[str, Any],
    path: str,
    where: _Where,
    *,
    required: Sequence[str] = (),
    optional: Sequence[str] = (),
) -> None:
    allowed = set(required) | set(optional)
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise where.error(path, f"unknown keys {unknown}; expected {sorted(allowed)}")
    missing = [k for k in required if k not in data]
    if missing:
        raise where.error(path, f"missing required keys {missing}")


def _str(value: Any, path: str, where: _Where, *, empty: bool = False) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise where.error(path, f"expected a string, got {_type_name(value)}")
    if not empty and not value.strip():
        raise where.error(path, "expected a non-empty string")
    return value.strip()


def _ident(value: Any, path: str, where: _Where) -> str:
    text = _str(value, path, where)
    if not _ID.match(text):
        raise where.error(path, f"expected an id (letters, digits, _ . -), got {text!r}")
    return text


#: Characters a name that becomes a file or folder name may not contain: the path separators
#: slash and backslash, the drive separator colon, and control characters (NUL included).
_UNSAFE_NAME = re.compile(r"[/\\:\x00-\x1f\x7f]")
_FOLDER_NAME_RULE = (
    "expected a name usable as a folder name: not empty, not '.' or '..', and without '/', "
    "'\\', ':' or control characters (NUL included)"
)


def _folder_name(value: Any, path: str, where: _Where) -> str:
    """A user-given name that becomes a file or folder name (it cannot leave its folder)."""
    text = _str(value, path, where)
    if text in (".", "..") or _UNSAFE_NAME.search(text):
        raise where.error(path, f"{_FOLDER_NAME_RULE}; got {text!r}")
    return text


def _int(value: Any, path: str, where: _Where, *, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.error(path, f"expected an integer, got {value!r}")
    if low is not None and value < low:
        raise where.error(path, f"expected an integer >= {low}, got {value}")
    return int(value)


def _float(
    value: Any,
    path: str,
    where: _Where,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error(path, f"expected a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise where.error(path, f"expected a finite number, got {value!r}")
    if low is not None and (number < low or (open_low and number == low)):
        raise where.error(path, f"expected a number {'>' if open_low else '>='} {low}, got {value}")
    if high is not None and number > high:
        raise where.error(path, f"expected a number <= {high}, got {value}")
    return number


def _vector(value: Any, dims: Sequence[str], path: str, where: _Where) -> tuple[float, ...]:
    if value is None:
        return (0.0,) * len(dims)
    data = _mapping(value, path, where)
    vec = [0.0] * len(dims)
    for key, number in data.items():
        if key not in dims:
            raise where.error(path, f"unknown style dimension {key!r}; known: {list(dims)}")
        vec[list(dims).index(key)] = _float(number, f"{path}.{key}", where, low=-1.0, high=1.0)
    return tuple(vec)


# -- collections: builtin / inline list / {file: ...}, with take ---------------------------------


def _read_builtin(name: str) -> Any:
    text = resources.files("prefduel.worlds").joinpath("data", name).read_text("utf-8")
    return yaml.safe_load(text)


def _read_yaml(path: Path, where: _Where, field_path: str) -> Any:
    return read_yaml(path, "file", lambda message: where.error(field_path, message))


def _collection(
    value: Any,
    path: str,
    where: _Where,
    base: Path,
    *,
    key: str,
    builtins: Mapping[str, tuple[str, str]],
    parse: Callable[[Any, str, _Where], T],
    ids: Callable[[T], str] = lambda item: item.id,  # type: ignore[attr-defined]
) -> tuple[T, ...]:
    """Parse a collection given as builtin, list, or {file|builtin, take}.

    ``builtins`` maps a builtin name to (data file, top-level key); the name ``"builtin"`` (or
    ``{builtin: true}``) picks the first.
    """
    take: Any = None
    source = where
    if isinstance(value, str) or value is True:
        name = "builtin" if value is True else value
        value = {"builtin": name}
    if isinstance(value, Mapping):
        _keys(value, path, where, optional=("builtin", "file", "take"))
        if ("builtin" in value) == ("file" in value):
            raise where.error(path, "expected exactly one of 'builtin' and 'file'")
        take = value.get("take")
        if "builtin" in value:
            name = value["builtin"]
            name = next(iter(builtins)) if name in (True, "builtin") else name
            if name not in builtins:
                raise where.error(
                    f"{path}.builtin",
                    f"expected one of {sorted(builtins)} (or 'builtin'), got {name!r}",
                )
            file, top = builtins[name]
            raw = _read_builtin(file)
            source = _Where(f"prefduel/worlds/data/{file}")
        else:
            file_path = Path(_str(value["file"], f"{path}.file", where))
            if not file_path.is_absolute():
                file_path = base / file_path
            raw = _read_yaml(file_path, where, f"{path}.file")
            top = key
            source = _Where(str(file_path))
        if not isinstance(raw, Mapping) or top not in raw:
            raise source.error(top, f"expected a top-level {top!r} entry")
        entries = raw[top]
        entries_path = top
    elif isinstance(value, list):
        entries, entries_path = value, path
    else:
        raise where.error(
            path,
            f"expected 'builtin', a list, or a mapping with builtin/file, got {_type_name(value)}",
        )
    if isinstance(entries, Mapping) and key == "kinds":  # questions.yaml: kinds as a mapping
        entries = [{"id": k, **(v or {})} for k, v in entries.items()]
    if not isinstance(entries, list) or not entries:
        raise source.error(entries_path, f"expected a non-empty list, got {_type_name(entries)}")
    items = [parse(e, f"{entries_path}[{i}]", source) for i, e in enumerate(entries)]
    _unique_ids(items, ids, entries_path, source)
    if take is not None:
        items = _take(items, take, f"{path}.take", where, ids)
    return tuple(items)


def _unique_ids(items: Sequence[T], ids: Callable[[T], str], path: str, where: _Where) -> None:
    seen: set[str] = set()
    for item in items:
        key = ids(item)
        if key in seen:
            raise where.error(path, f"duplicate id {key!r}")
        seen.add(key)


def _take(items: list[T], take: Any, path: str, where: _Where, ids: Callable[[T], str]) -> list[T]:
    if isinstance(take, int) and not isinstance(take, bool):
        if not 1 <= take <= len(items):
            raise where.error(path, f"expected 1..{len(items)} (entries available), got {take}")
        return items[:take]
    if isinstance(take, list) and take:
        by_id = {ids(item): item for item in items}
        out = []
        for i, wanted in enumerate(take):
            if wanted not in by_id:
                raise where.error(f"{path}[{i}]", f"unknown id {wanted!r}; known: {sorted(by_id)}")
            out.append(by_id[wanted])
        _unique_ids(out, ids, path, where)
        return out
    raise where.error(path, f"expected a count or a non-empty list of ids, got {take!r}")


# -- entry parsers ----------------------------------------------------------------------------


def _parse_dim(entry: Any, path: str, where: _Where) -> StyleDim:
    if isinstance(entry, str):
        return StyleDim(_ident(entry, path, where))
    data = _mapping(entry, path, where)
    _keys(data, path, where, required=("id",), optional=("description",))
    return StyleDim(
        _ident(data["id"], f"{path}.id", where),
        _str(data.get("description", ""), f"{path}.description", where, empty=True),
    )


class _Parsers:
    """Entry parsers that need the style dims and kind ids."""

    def __init__(self, dims: Sequence[str]) -> None:
        self.dims = tuple(dims)
        self.kind_ids: tuple[str, ...] = ()
        self.quirk_ids: tuple[str, ...] = ()

    def persona(self, entry: Any, path: str, where: _Where) -> Persona:
        data = _mapping(entry, path, where)
        _keys(data, path, where, required=("id", "prompt"), optional=("name", "style"))
        pid = _ident(data["id"], f"{path}.id", where)
        return Persona(
            id=pid,
            name=_str(data.get("name", pid), f"{path}.name", where),
            prompt=_str(data["prompt"], f"{path}.prompt", where),
            style=_vector(data.get("style"), self.dims, f"{path}.style", where),
        )

    def kind(self, entry: Any, path: str, where: _Where) -> Kind:
        data = _mapping(entry, path, where)
        _keys(data, path, where, required=("id",), optional=("description", "need"))
        kid = _ident(data["id"], f"{path}.id", where)
        return Kind(
            id=kid,
            description=_str(data.get("description", kid), f"{path}.description", where),
            need=_vector(data.get("need"), self.dims, f"{path}.need", where),
        )

    def cue(self, entry: Any, path: str, where: _Where) -> Cue:
        data = _mapping(entry, path, where)
        _keys(data, path, where, required=("id", "text"), optional=("need",))
        return Cue(
            id=_ident(data["id"], f"{path}.id", where),
            text=_str(data["text"], f"{path}.text", where),
            need=_vector(data.get("need"), self.dims, f"{path}.need", where),
        )

    def topic(self, entry: Any, path: str, where: _Where) -> Topic:
        data = _mapping(entry, path, where)
        _keys(data, path, where, required=("id", "chains"), optional=("name", "subject"))
        tid = _ident(data["id"], f"{path}.id", where)
        chains_raw = data["chains"]
        if not isinstance(chains_raw, list) or not chains_raw:
            raise where.error(f"{path}.chains", "expected a non-empty list of chains")
        chains = []
        for i, c in enumerate(chains_raw):
            cpath = f"{path}.chains[{i}]"
            if isinstance(c, str):
                c = {"concept": c}
            c = _mapping(c, cpath, where)
            _keys(c, cpath, where, required=("concept",), optional=self.kind_ids)
            examples = tuple(
                (k, _str(c[k], f"{cpath}.{k}", where)) for k in self.kind_ids if k in c
            )
            chains.append(Chain(_str(c["concept"], f"{cpath}.concept", where), examples))
        return Topic(
            id=tid,
            name=_str(data.get("name", tid.replace("_", " ")), f"{path}.name", where),
            subject=_str(data.get("subject", ""), f"{path}.subject", where, empty=True),
            chains=tuple(chains),
        )

    def quirk(self, entry: Any, path: str, where: _Where) -> Quirk:
        data = _mapping(entry, path, where)
        _keys(
            data,
            path,
            where,
            required=("id", "dim"),
            optional=("description", "sign", "when_kind"),
        )
        dim = _str(data["dim"], f"{path}.dim", where)
        if dim not in self.dims:
            raise where.error(
                f"{path}.dim", f"unknown style dimension {dim!r}; known: {list(self.dims)}"
            )
        sign = _float(data.get("sign", 1), f"{path}.sign", where)
        when = data.get("when_kind")
        if when is not None:
            when = _str(when, f"{path}.when_kind", where)
        return Quirk(
            id=_ident(data["id"], f"{path}.id", where),
            description=_str(data.get("description", ""), f"{path}.description", where, empty=True),
            dim=dim,
            sign=sign,
            when_kind=when,
        )

    def student(self, entry: Any, path: str, where: _Where) -> Student:
        data = _mapping(entry, path, where)
        _keys(
            data,
            path,
            where,
            required=("id", "description"),
            optional=("name", "taste", "cue_following", "quirks"),
        )
        sid = _ident(data["id"], f"{path}.id", where)
        quirks = data.get("quirks") or []
        if not isinstance(quirks, list):
            raise where.error(f"{path}.quirks", f"expected a list of quirk ids, got {quirks!r}")
        for i, q in enumerate(quirks):
            if q not in self.quirk_ids:
                raise where.error(
                    f"{path}.quirks[{i}]", f"unknown quirk {q!r}; known: {list(self.quirk_ids)}"
                )
        return Student(
            id=sid,
            name=_str(data.get("name", sid), f"{path}.name", where),
            description=_str(data["description"], f"{path}.description", where),
            taste=_vector(data.get("taste"), self.dims, f"{path}.taste", where),
            cue_following=_float(
                data.get("cue_following", 1.0), f"{path}.cue_following", where, low=0.0
            ),
            quirks=tuple(str(q) for q in quirks),
        )


def template_students(
    count: int, n_quirks: int, seed: int, quirks: Sequence[Quirk], template_scale: float
) -> tuple[Student, ...]:
    """Students rendered from TutorSim's 7-trait template (like its Composite/Quirky rosters).

    Distinct trait combinations are drawn from ``stream(seed, "datagen", "template")``; the
    description joins the values' descriptions (and the quirks'), the taste is
    ``template_scale`` times the sum of the values' tastes.

    Args:
        count: Students.
        n_quirks: Quirks per student (0 for Composite-like students).
        seed: Seed.
        quirks: Quirks to draw from.
        template_scale: Taste scale of template students.

    Returns:
        ``count`` students with ids ``template-0``, ``template-1``, ...
    """
    from prefduel.worlds.tutorsim_data import load_tutorsim_data

    traits = load_tutorsim_data().traits
    sizes = [len(t.values) for t in traits]
    rng = stream(seed, "datagen", "template")
    flat = rng.choice(int(np.prod(sizes)), size=count, replace=False)
    combos = np.stack(np.unravel_index(flat, sizes), axis=1)
    out = []
    for a in range(count):
        values = [t.values[int(v)] for t, v in zip(traits, combos[a], strict=True)]
        taste = template_scale * sum(v.taste for v in values)
        cue = next((v.cue_following for v in values if v.cue_following is not None), 1.0)
        chosen = (
            [quirks[int(i)] for i in rng.choice(len(quirks), n_quirks, replace=False)]
            if n_quirks
            else []
        )
        description = " ".join(v.description for v in values)
        description += "".join(" " + q.description for q in chosen)
        out.append(
            Student(
                id=f"template-{a}",
                name="/".join(v.id for v in values),
                description=description,
                taste=tuple(float(x) for x in taste),
                cue_following=float(cue),
                quirks=tuple(q.id for q in chosen),
            )
        )
    return tuple(out)


# -- the whole file ---------------------------------------------------------------------------

_TOP_KEYS = (
    "name",
    "seed",
    "output",
    "llm",
    "cache",
    "call_log",
    "budget",
    "models",
    "samples",
    "retries",
    "style",
    "personas",
    "kinds",
    "cues",
    "topics",
    "quirks",
    "students",
    "questions",
    "rater",
    "bt",
    "world",
    "prompts",
    "scripted",
)


def _models(value: Any, where: _Where) -> dict[str, RoleModel]:
    data = _mapping(value if value is not None else {}, "models", where)
    _keys(data, "models", where, optional=("default", *ROLES))
    default = data.get("default", DEFAULT_MODEL)
    default = _str(default, "models.default", where)
    out = {}
    for role in ROLES:
        path = f"models.{role}"
        entry = data.get(role, default)
        if isinstance(entry, str):
            entry = {"model": entry}
        entry = _mapping(entry, path, where)
        _keys(
            entry,
            path,
            where,
            optional=("model", "temperature", "max_tokens", "seed", "expected_tokens", "params"),
        )
        settings = {**DEFAULT_ROLE_SETTINGS[role], **entry}
        params = settings.get("params") or {}
        params = _mapping(params, f"{path}.params", where)
        for reserved in ("model", "messages", "seed", "stream", "n", "temperature", "max_tokens"):
            if reserved in params:
                raise where.error(
                    f"{path}.params",
                    f"{reserved!r} cannot be set here (use the role's own key or the sample count)",
                )
        temperature = settings.get("temperature")
        max_tokens = settings.get("max_tokens")
        seed = settings.get("seed")
        expected = settings.get("expected_tokens")
        out[role] = RoleModel(
            model=_str(settings.get("model", default), f"{path}.model", where),
            temperature=None
            if temperature is None
            else _float(temperature, f"{path}.temperature", where, low=0.0),
            max_tokens=None
            if max_tokens is None
            else _int(max_tokens, f"{path}.max_tokens", where, low=1),
            seed=None if seed is None else _int(seed, f"{path}.seed", where, low=0),
            expected_tokens=None
            if expected is None
            else _int(expected, f"{path}.expected_tokens", where, low=1),
            params=tuple(sorted((str(k), v) for k, v in params.items())),
        )
    return out


def _scripted(value: Any, where: _Where) -> ScriptedSettings:
    data = _mapping(value if value is not None else {}, "scripted", where)
    extra = ("rater_gain", "judge_malformed", "rater_malformed", "latency")
    _keys(data, "scripted", where, optional=(*SCRIPTED_PARAMS, *extra))
    knobs = {
        k: _float(data[k], f"scripted.{k}", where, low=0.0) for k in SCRIPTED_PARAMS if k in data
    }
    return ScriptedSettings(
        params=dataclasses.replace(DEFAULT_PARAMS, **knobs),
        rater_gain=_float(data.get("rater_gain", 2.0), "scripted.rater_gain", where, low=0.0),
        judge_malformed=_float(
            data.get("judge_malformed", 0.0), "scripted.judge_malformed", where, low=0, high=1
        ),
        rater_malformed=_float(
            data.get("rater_malformed", 0.0), "scripted.rater_malformed", where, low=0, high=1
        ),
        latency=_float(data.get("latency", 0.0), "scripted.latency", where, low=0.0),
    )


def _templates(value: Any, where: _Where, base: Path) -> Templates:
    if value is None:
        return Templates()
    data = _mapping(value, "prompts", where)
    source = where
    if set(data) == {"file"}:
        file_path = Path(_str(data["file"], "prompts.file", where))
        file_path = file_path if file_path.is_absolute() else base / file_path
        data = _mapping(_read_yaml(file_path, where, "prompts.file"), "prompts", where)
        source = _Where(str(file_path))
    names = [f.name for f in dataclasses.fields(Templates)]
    _keys(data, "prompts", source, optional=names)
    values = {}
    for name, text in data.items():
        text = _str(text, f"prompts.{name}", source)
        try:
            check_template(name, text)
        except ValueError as exc:
            raise source.error(f"prompts.{name}", str(exc)) from None
        values[name] = text
    return Templates(**values)


def _llm(data: Mapping[str, Any], where: _Where) -> LLMConfig:
    section = dict(_mapping(data.get("llm") or {}, "llm", where))
    for key in ("cache", "call_log", "budget"):
        if key in data:
            if key in section:
                raise where.error(key, f"given both as {key!r} and as 'llm.{key}'; keep one")
            section[key] = data[key]
    try:
        return LLMConfig.from_mapping(section, source=f"{where.source}: llm")
    except LLMConfigError as exc:
        raise DatagenConfigError(str(exc)) from None


def config_from_mapping(
    data: Any, *, source: str = "", base: str | os.PathLike[str] | None = None
) -> DatagenConfig:
    """Validate a parsed YAML config.

    Args:
        data: The parsed YAML.
        source: Its file name (for error messages and the default world name).
        base: Folder that relative input files are found in (default: the source's folder,
            else the working directory).

    Returns:
        The config.

    Raises:
        DatagenConfigError: Naming the file and the field that is wrong.
    """
    where = _Where(source)
    data = _mapping(data, "(top level)", where)
    _keys(data, "(top level)", where, optional=_TOP_KEYS)
    base_dir = Path(base) if base is not None else (Path(source).parent if source else Path("."))

    name = _folder_name(
        data["name"] if "name" in data else (Path(source).stem if source else "datagen"),
        "name" if "name" in data else "name (default: the file's stem)",
        where,
    )
    seed = _int(data.get("seed", 0), "seed", where, low=0)
    if seed >= 2**32:
        raise where.error("seed", f"expected a seed below 2**32, got {seed}")
    output = _str(data.get("output", os.path.join("worlds", name)), "output", where)

    builtin_style = {"builtin": ("style.yaml", "dims")}
    style = _collection(
        data.get("style", "builtin"),
        "style",
        where,
        base_dir,
        key="dims",
        builtins=builtin_style,
        parse=_parse_dim,
    )
    parsers = _Parsers([d.id for d in style])
    personas = _collection(
        data.get("personas", "builtin"),
        "personas",
        where,
        base_dir,
        key="personas",
        builtins={"builtin": ("personas.yaml", "personas")},
        parse=parsers.persona,
    )
    if len(personas) < 2:
        raise where.error("personas", f"expected at least 2 personas, got {len(personas)}")
    kinds = _collection(
        data.get("kinds", "builtin"),
        "kinds",
        where,
        base_dir,
        key="kinds",
        builtins={"builtin": ("questions.yaml", "kinds")},
        parse=parsers.kind,
    )
    parsers.kind_ids = tuple(k.id for k in kinds)
    cues = _collection(
        data.get("cues", "builtin"),
        "cues",
        where,
        base_dir,
        key="cues",
        builtins={"builtin": ("questions.yaml", "cues")},
        parse=parsers.cue,
    )
    if "topics" not in data:
        raise where.error("topics", "missing: give a list of topics or {builtin: dev, take: 4}")
    topics = _collection(
        data["topics"],
        "topics",
        where,
        base_dir,
        key="topics",
        builtins={
            "dev": ("topics_dev.yaml", "topics"),
            "heldout": ("topics_heldout.yaml", "topics"),
        },
        parse=parsers.topic,
    )
    quirks = _collection(
        data.get("quirks", "builtin"),
        "quirks",
        where,
        base_dir,
        key="quirks",
        builtins={"builtin": ("quirks.yaml", "quirks")},
        parse=parsers.quirk,
    )
    for i, q in enumerate(quirks):
        if q.when_kind is not None and q.when_kind not in parsers.kind_ids:
            raise where.error(
                f"quirks[{i}].when_kind",
                f"unknown kind {q.when_kind!r}; known: {list(parsers.kind_ids)}",
            )
    parsers.quirk_ids = tuple(q.id for q in quirks)
    scripted = _scripted(data.get("scripted"), where)

    if "students" not in data:
        raise where.error("students", "missing: give profiles or {builtin: dev, take: 2}")
    raw_students = data["students"]
    if isinstance(raw_students, Mapping) and "template" in raw_students:
        _keys(raw_students, "students", where, required=("template",), optional=("quirks",))
        count = _int(raw_students["template"], "students.template", where, low=1)
        if count > 3072:
            raise where.error("students.template", f"expected at most 3072 students, got {count}")
        n_quirks = _int(raw_students.get("quirks", 0), "students.quirks", where, low=0)
        if n_quirks > len(quirks):
            raise where.error("students.quirks", f"expected at most {len(quirks)}, got {n_quirks}")
        students = template_students(count, n_quirks, seed, quirks, scripted.params.template_scale)
    else:
        students = _collection(
            raw_students,
            "students",
            where,
            base_dir,
            key="profiles",
            builtins={
                "dev": ("profiles_dev.yaml", "profiles"),
                "heldout": ("profiles_heldout.yaml", "profiles"),
            },
            parse=parsers.student,
        )
    _check_distinct(
        students, "description", "students", where, "the judge could not tell them apart"
    )
    _check_distinct(personas, "prompt", "personas", where, "their answers would be the same")

    models = _models(data.get("models"), where)
    samples = _int(data.get("samples", 4), "samples", where, low=1)
    retries_raw = _mapping(data.get("retries") or {}, "retries", where)
    _keys(retries_raw, "retries", where, optional=ROLES)
    retries = {
        role: _int(retries_raw.get(role, DEFAULT_RETRIES[role]), f"retries.{role}", where, low=0)
        for role in ROLES
    }

    questions = _mapping(data.get("questions") or {}, "questions", where)
    _keys(questions, "questions", where, optional=("cues_per_question",))
    cues_per_question = _int(
        questions.get("cues_per_question", 1), "questions.cues_per_question", where, low=1
    )
    if cues_per_question > len(cues):
        raise where.error(
            "questions.cues_per_question",
            f"expected at most {len(cues)} (the number of cues), got {cues_per_question}",
        )

    rater = _mapping(data.get("rater") or {}, "rater", where)
    _keys(rater, "rater", where, optional=("scale",))
    scale = rater.get("scale", [1, 10])
    if not isinstance(scale, list) or len(scale) != 2:
        raise where.error("rater.scale", f"expected [lowest, highest], got {scale!r}")
    lo = _float(scale[0], "rater.scale[0]", where)
    hi = _float(scale[1], "rater.scale[1]", where)
    if not lo < hi:
        raise where.error("rater.scale", f"expected lowest < highest, got {scale!r}")

    bt = _mapping(data.get("bt") or {}, "bt", where)
    _keys(bt, "bt", where, optional=("ridge", "scale"))
    ridge = _float(
        bt.get("ridge", DEFAULT_PARAMS.bt_ridge), "bt.ridge", where, low=0.0, open_low=True
    )
    bt_scale = _float(
        bt.get("scale", DEFAULT_PARAMS.bt_scale), "bt.scale", where, low=0.0, open_low=True
    )

    world = _mapping(data.get("world") or {}, "world", where)
    _keys(world, "world", where, optional=("arrivals", "rounds"))
    layout = WorldLayout(
        arrivals=_int(world.get("arrivals", 100), "world.arrivals", where, low=1),
        rounds=None
        if world.get("rounds") is None
        else _int(world["rounds"], "world.rounds", where, low=1),
    )

    config = DatagenConfig(
        name=name,
        seed=seed,
        output=output,
        source=source,
        style=style,
        personas=personas,
        kinds=kinds,
        cues=cues,
        topics=topics,
        quirks=quirks,
        students=students,
        models=models,
        samples=samples,
        cues_per_question=cues_per_question,
        retries=retries,
        rater_scale=(lo, hi),
        bt_ridge=ridge,
        bt_scale=bt_scale,
        layout=layout,
        templates=_templates(data.get("prompts"), where, base_dir),
        scripted=scripted,
        llm=_llm(data, where),
    )
    if config.rounds > config.n_questions:
        raise where.error(
            "world.rounds",
            f"expected at most {config.n_questions} (the questions in the bank: topics x "
            f"chains x kinds x cues_per_question), got {config.rounds}",
        )
    return config


def _check_distinct(items: Sequence[Any], attr: str, path: str, where: _Where, why: str) -> None:
    seen: dict[str, str] = {}
    for item in items:
        text = getattr(item, attr)
        if text in seen:
            raise where.error(path, f"{seen[text]!r} and {item.id!r} have the same {attr}; {why}")
        seen[text] = item.id


def load_config(path: str | os.PathLike[str]) -> DatagenConfig:
    """Read and validate a datagen config file.

    Raises:
        DatagenConfigError: The file is missing, not YAML, or invalid (the message names the
            file and the field).
    """
    data = read_yaml(path, "config file", DatagenConfigError)
    return config_from_mapping(data, source=str(path))


__all__ = [
    "DEFAULT_MODEL",
    "ROLES",
    "SCRIPTED_PARAMS",
    "Chain",
    "Cue",
    "DatagenConfig",
    "DatagenConfigError",
    "DatagenError",
    "Kind",
    "Persona",
    "Quirk",
    "RoleModel",
    "ScriptedSettings",
    "Student",
    "StyleDim",
    "Topic",
    "WorldLayout",
    "config_from_mapping",
    "load_config",
    "template_students",
]
