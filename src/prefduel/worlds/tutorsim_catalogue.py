"""TutorSim's catalogue formats: one typed entry per YAML format of ``worlds/data/*.yaml``.

Each entry is a frozen pydantic dataclass that refuses unknown keys:

========================  =======================  ==========================================
entry                      file, top-level key      keys
========================  =======================  ==========================================
`StyleDim`                 ``style.yaml: dims``     id, description (or just the id)
`Persona`                  ``personas.yaml``        id, name, prompt, style
`Kind`                     ``questions.yaml``       id, description, need (a list, or a
                                                    mapping id -> entry)
`Cue`                      ``questions.yaml``       id, text, need
`Topic` (`Chain`)          ``topics_*.yaml``        id, name, subject, chains (a concept, or
                                                    concept + an example question per kind)
`QuirkEntry`               ``quirks.yaml``          id, description, dim, sign, when_kind
`ProfileEntry`             ``profiles_*.yaml``      id, name, description, taste,
                                                    cue_following, quirks
`TraitEntry`               ``template.yaml``        id, description, values (id, description,
                                                    taste, cue_following)
========================  =======================  ==========================================

Style, need and taste values are mappings from a style-dimension id to a number in [-1, 1]
(omitted dimensions are 0), stored as tuples in the order of the style dims. The entries are
validated against `References`: the style dims, kind ids and quirk ids they may name.
TutorSim's loader (`prefduel.worlds.tutorsim_data`), roster files and datagen configs all parse
these formats with `parse_entries` (or directly with `validate`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, model_validator
from pydantic_core import ArgsKwargs

from prefduel.core.errors import WorldFormatError
from prefduel.core.schema import (
    BlankText,
    Real,
    Text,
    error_at,
    frozen_dataclass,
    validate,
)

E = TypeVar("E")

#: TutorSim's question kinds (a datagen config may name others).
KINDS = ("definition", "computation", "why")
_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class References:
    """What entries may refer to (the validation context of `parse_entries`).

    Attributes:
        dims: Style-dimension ids, in vector order.
        kinds: Question-kind ids (for chains' example questions and ``when_kind``; None:
            ``when_kind`` is not checked here).
        quirks: Quirk ids students may name (None: not checked here).
    """

    dims: tuple[str, ...] = ()
    kinds: tuple[str, ...] | None = KINDS
    quirks: tuple[str, ...] | None = None

    def context(self) -> dict[str, Any]:
        """The pydantic validation context carrying these references."""
        return {"references": self}


def _references(info: ValidationInfo) -> References:
    return (info.context or {}).get("references") or References()


def _ident(text: str) -> str:
    if not _ID.match(text):
        raise ValueError(f"expected an id (letters, digits, _ . -), got {text!r}")
    return text


#: An id: letters, digits, ``_``, ``.`` and ``-``.
Ident = Annotated[Text, AfterValidator(_ident)]


def _vector(value: Any, info: ValidationInfo) -> Any:
    """``{dim: number in [-1, 1]}`` -> a tuple in the order of the style dims."""
    dims = _references(info).dims
    if value is None:
        return (0.0,) * len(dims)
    if isinstance(value, tuple):
        return value  # made in code
    if not isinstance(value, Mapping):
        kind = type(value).__name__
        raise ValueError(f"expected a mapping of style dims to numbers, got {kind}")
    vec = [0.0] * len(dims)
    for key, number in value.items():
        if key not in dims:
            message = f"unknown style dimension {key!r}; known: {list(dims)}"
            raise error_at((str(key),), message, value)
        is_number = isinstance(number, int | float) and not isinstance(number, bool)
        if not is_number or not -1.0 <= number <= 1.0:
            message = f"value of {key!r} must be a number >= -1.0 and <= 1.0, got {number!r}"
            raise error_at((str(key),), message, value)
        vec[dims.index(key)] = float(number)
    return tuple(vec)


#: A style, need or taste vector, given as ``{dim: number in [-1, 1]}``.
Vector = Annotated[tuple[float, ...], BeforeValidator(_vector)]


def _with_defaults(data: Any, **defaults: Callable[[Mapping[str, Any]], Any]) -> Any:
    """A YAML mapping with its omitted keys filled in (values computed from the mapping)."""
    if isinstance(data, ArgsKwargs) or not isinstance(data, Mapping):
        return data
    return {**{k: make(data) for k, make in defaults.items() if k not in data}, **data}


def _none(data: Mapping[str, Any]) -> None:
    return None


def _the_id(data: Mapping[str, Any]) -> Any:
    return data.get("id")


@frozen_dataclass(error=WorldFormatError)
class StyleDim:
    """A style dimension (``brevity``, ``rigor``, ...)."""

    id: Ident
    description: BlankText = ""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"id": data} if isinstance(data, str) else data


@frozen_dataclass(error=WorldFormatError)
class Persona:
    """A tutor persona: its prompt is the answer model's system prompt.

    Attributes:
        id: Identifier (also the key the rater uses).
        name: Display name (default: the id).
        prompt: System prompt of the answers.
        style: Style vector ``(m,)``.
    """

    id: Ident
    name: Text
    prompt: Text
    style: Vector

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        return _with_defaults(data, name=_the_id, style=_none)


@frozen_dataclass(error=WorldFormatError)
class Kind:
    """A question kind (``definition``, ``computation``, ``why``, ...) and its need vector."""

    id: Ident
    description: Text
    need: Vector

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        return _with_defaults(data, description=_the_id, need=_none)


@frozen_dataclass(error=WorldFormatError)
class Cue:
    """A first-person cue that ends a question ("I need a line I can quote in an exam.")."""

    id: Ident
    text: Text
    need: Vector

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        return _with_defaults(data, need=_none)


def _chain(data: Any, info: ValidationInfo) -> Any:
    """A chain's YAML (a concept, or concept + one example question per kind id) as fields."""
    if isinstance(data, str):
        return {"concept": data}
    if isinstance(data, ArgsKwargs) or not isinstance(data, Mapping):
        return data
    kinds = _references(info).kinds or KINDS
    allowed = ["concept", *kinds]
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise ValueError(f"unknown keys {unknown}; expected {sorted(allowed)}")
    examples = []
    for kind in (k for k in kinds if k in data):
        text = data[kind]
        if not isinstance(text, str) or not text.strip():
            raise error_at((kind,), f"expected a non-empty string, got {text!r}", data)
        examples.append((kind, text.strip()))
    fields = {"examples": tuple(examples)}
    return {**fields, "concept": data["concept"]} if "concept" in data else fields


@frozen_dataclass(error=WorldFormatError)
class Chain:
    """A concept of a topic, with optional example questions by kind id."""

    concept: Text
    examples: tuple[tuple[str, str], ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any, info: ValidationInfo) -> Any:
        return _chain(data, info)

    def example(self, kind: str) -> str | None:
        """The example question of ``kind``, if given."""
        return dict(self.examples).get(kind)


@frozen_dataclass(error=WorldFormatError)
class Topic:
    """A topic: id, display name (default: the id with spaces), subject and concept chains."""

    id: Ident
    name: Text
    subject: BlankText
    chains: Annotated[tuple[Chain, ...], Field(min_length=1)]

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        return _with_defaults(
            data, name=lambda d: str(d.get("id", "")).replace("_", " "), subject=lambda d: ""
        )


@frozen_dataclass(error=WorldFormatError)
class QuirkEntry:
    """A quirk: like (``sign`` +1) or dislike (-1) of a style dim, optionally on one kind only."""

    id: Ident
    description: BlankText
    dim: Text
    sign: Real
    when_kind: Text | None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        return _with_defaults(data, description=lambda d: "", sign=lambda d: 1, when_kind=_none)

    @model_validator(mode="after")
    def _known_dim_and_kind(self, info: ValidationInfo) -> QuirkEntry:
        refs = _references(info)
        if refs.dims and self.dim not in refs.dims:
            message = f"unknown style dimension {self.dim!r}; known: {list(refs.dims)}"
            raise error_at(("dim",), message, self.dim)
        if self.sign not in (1.0, -1.0):
            raise error_at(("sign",), f"sign must be 1 or -1, got {self.sign!r}", self.sign)
        kinds = refs.kinds
        if self.when_kind is not None and kinds is not None and self.when_kind not in kinds:
            message = f"unknown kind {self.when_kind!r}; known: {list(kinds)}"
            raise error_at(("when_kind",), message, self.when_kind)
        return self


def _known_quirks(quirks: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
    known = _references(info).quirks
    for i, quirk in enumerate(quirks):
        if known is not None and quirk not in known:
            raise error_at((i,), f"unknown quirk {quirk!r}; known: {list(known)}", quirk)
    return quirks


@frozen_dataclass(error=WorldFormatError)
class ProfileEntry:
    """A student profile: the description is an LLM judge's role; taste ``(m,)``, cue
    following and quirk ids drive the simulated (scripted) judge."""

    id: Ident
    name: Text
    description: BlankText
    taste: Vector
    cue_following: Annotated[Real, Field(ge=0.0)] = 1.0
    quirks: Annotated[tuple[str, ...], AfterValidator(_known_quirks)] = ()

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        data = _with_defaults(data, name=_the_id, description=lambda d: "", taste=_none)
        if isinstance(data, Mapping) and data.get("quirks") is None:
            data = {**data, "quirks": ()}
        return data


@frozen_dataclass(error=WorldFormatError)
class TraitValueEntry:
    """One value of a template trait (``cue_following`` None: the trait does not set it)."""

    id: Ident
    description: BlankText
    taste: Vector
    cue_following: Annotated[Real, Field(ge=0.0)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        return _with_defaults(data, description=lambda d: "", taste=_none)


def _distinct_values(values: tuple[TraitValueEntry, ...]) -> tuple[TraitValueEntry, ...]:
    _check_unique([v.id for v in values])
    return values


@frozen_dataclass(error=WorldFormatError)
class TraitEntry:
    """A template trait and its values (a template student has one value of each trait)."""

    id: Ident
    description: BlankText
    values: Annotated[
        tuple[TraitValueEntry, ...], Field(min_length=1), AfterValidator(_distinct_values)
    ]

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        return _with_defaults(data, description=lambda d: "")


def _check_unique(ids: Sequence[str]) -> None:
    seen: set[str] = set()
    for entry_id in ids:
        if entry_id in seen:
            raise ValueError(f"duplicate id {entry_id!r}")
        seen.add(entry_id)


def kind_list(entries: Any) -> Any:
    """``questions.yaml`` gives kinds as a mapping id -> entry: as a list of entries."""
    if isinstance(entries, Mapping):
        return [{"id": key, **(value or {})} for key, value in entries.items()]
    return entries


def parse_entries(
    entry: type[E],
    entries: Any,
    references: References,
    *,
    error: Callable[[str], Exception],
    source: str,
    path: str,
) -> tuple[E, ...]:
    """Validate a non-empty list of catalogue entries with distinct ids.

    Args:
        entry: The entry type (`Persona`, `ProfileEntry`, ...).
        entries: The YAML list (kinds may also be a mapping, see `kind_list`).
        references: Style dims, kind ids and quirk ids the entries may name.
        error: Builds the exception (an error class).
        source: The file, named first in messages.
        path: Where the list sits in the file (``"personas"``, ``"students"``).

    Raises:
        The exception ``error`` builds, as ``SOURCE: personas[0].style.brevity: ...``.
    """
    if entry is Kind:
        entries = kind_list(entries)
    if not isinstance(entries, list) or not entries:
        kind = "null" if entries is None else type(entries).__name__
        raise error(f"{source}: {path}: expected a non-empty list, got {kind}")
    items: tuple[E, ...] = validate(
        tuple[entry, ...],  # type: ignore[valid-type]
        entries,
        error=error,
        source=source,
        prefix=path,
        context=references.context(),
    )
    try:
        _check_unique([item.id for item in items])  # type: ignore[attr-defined]
    except ValueError as exc:
        raise error(f"{source}: {path}: {exc}") from None
    return items


__all__ = [
    "KINDS",
    "Chain",
    "Cue",
    "Ident",
    "Kind",
    "Persona",
    "ProfileEntry",
    "QuirkEntry",
    "References",
    "StyleDim",
    "Topic",
    "TraitEntry",
    "TraitValueEntry",
    "Vector",
    "kind_list",
    "parse_entries",
]
