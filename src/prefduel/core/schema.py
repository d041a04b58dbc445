"""Typed configs on pydantic v2, with errors that name the file, the field and what is allowed.

Every config (datagen, prefdisco, the LLM settings, TutorSim's catalogue files) is a frozen,
typed model that refuses unknown keys. This module turns pydantic's `ValidationError` into one
of prefduel's own error classes (so ``except`` clauses and the CLI's exit code 2 keep working)
whose message reads ``FILE: FIELD.PATH: what was expected, got what``::

    run.yaml: models.judge.temperature: expected a number >= 0.0, got -1
    run.yaml: (top level): unknown keys ['colour']; expected ['cache', ...]; did you mean 'color'?

Three entry points:

* `validate` a parsed mapping (or `load` a YAML file) into a model, a pydantic dataclass or any
  type a `TypeAdapter` accepts (``list[Persona]``);
* `frozen_dataclass`, a class decorator: a frozen pydantic dataclass whose constructor (and so
  ``dataclasses.replace``) raises the given error class instead of `ValidationError`;
* `first_problem` / `describe` for callers that word the location themselves, and `error_at`
  for validators that name a part of their value.

Field types shared by the configs: `Integer`, `Real` (finite; ints become floats), `Number`
(finite; an int stays an int, so request parameters hash as they were written), `Text` (a
stripped, non-empty string; numbers are accepted as text), `BlankText` (may be empty) and
`Switch` (``on``/``off`` or true/false, stored as a bool).
``Annotated[float, Noun("seconds")]`` words a field's messages as "expected seconds > 0".
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    TypeAdapter,
    ValidationError,
    WrapValidator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import InitErrorDetails, PydanticCustomError

from prefduel.core.yamlfile import read_yaml

T = TypeVar("T")
ErrorFactory = Callable[[str], Exception]

#: Settings of every config model: unknown keys are errors.
FORBID_EXTRA = ConfigDict(extra="forbid")


@dataclasses.dataclass(frozen=True)
class Noun:
    """Annotation metadata: how messages name a field's values (``Noun("seconds")``)."""

    text: str


def _keep_int(value: Any, handler: Callable[[Any], Any]) -> Any:
    checked = handler(value)
    return value if type(value) is int else checked


def _number_as_text(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _stripped(value: str) -> str:
    return value.strip()


def _non_empty(value: str) -> str:
    if not value:
        raise PydanticCustomError("empty_text", "expected a non-empty string")
    return value


#: An integer (not a bool, not a float); add bounds with ``Annotated[Integer, Field(ge=1)]``.
Integer = Annotated[int, Strict()]
#: A finite number, stored as a float.
Real = Annotated[float, Strict(), Field(allow_inf_nan=False)]
#: A finite number stored as given: an int stays an int (it is sent and hashed as written).
Number = Annotated[float, Strict(), Field(allow_inf_nan=False), WrapValidator(_keep_int)]
#: A string, stripped; numbers are accepted as their text. May be empty.
BlankText = Annotated[str, BeforeValidator(_number_as_text), Strict(), AfterValidator(_stripped)]
#: A stripped, non-empty string; numbers are accepted as their text.
Text = Annotated[BlankText, AfterValidator(_non_empty)]


def _on_off(value: Any) -> Any:
    if value is True or value == "on":
        return True
    if value is False or value == "off":
        return False
    raise PydanticCustomError("switch", "expected on or off, got {value}", {"value": repr(value)})


#: A switch: ``on``/``off`` (or true/false), stored as a bool.
Switch = Annotated[bool, BeforeValidator(_on_off)]


# -- errors -----------------------------------------------------------------------------------


def error_at(loc: tuple[str | int, ...], message: str, value: Any) -> ValidationError:
    """An error to raise inside a validator about a part of its value (a key of a mapping):
    pydantic puts ``loc`` after the validated field's own location."""
    detail = InitErrorDetails(type=PydanticCustomError("invalid", message), loc=loc, input=value)
    return ValidationError.from_exception_data("invalid", [detail])


@dataclasses.dataclass(frozen=True)
class Problem:
    """The first problem of a `ValidationError`, in prefduel's words.

    Attributes:
        loc: Where: keys and list indices from the validated value's root.
        message: What was expected and what arrived.
    """

    loc: tuple[str | int, ...]
    message: str


def field_path(loc: Sequence[str | int], prefix: str = "") -> str:
    """``("models", "judge", "temperature")`` -> ``models.judge.temperature``; list indices
    as ``[i]`` (``personas[0].style``); ``prefix`` goes first."""
    text = prefix
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def describe(
    exc: ValidationError,
    schema: Any = None,
    *,
    source: str = "",
    prefix: str = "",
    root: str = "",
) -> str:
    """The message of the first problem: ``SOURCE: FIELD.PATH: problem``.

    Args:
        exc: What pydantic raised.
        schema: The validated type (for the allowed keys and the wording of numbers).
        source: The file (or other origin) named first; "" for none.
        prefix: Path of the validated value inside its file (``"llm"``).
        root: How to name the root when the problem is there (e.g. ``"(top level)"``).
    """
    problem = first_problem(exc, schema)
    where = field_path(problem.loc, prefix) or root
    parts = [p for p in (source, where) if p]
    return ": ".join([*parts, problem.message])


def first_problem(exc: ValidationError, schema: Any = None) -> Problem:
    """The first error of ``exc`` as a `Problem`; unknown or missing keys of the same mapping
    are reported together (``unknown keys ['a', 'b']; expected [...]``)."""
    errors = exc.errors()
    first = errors[0]
    kind = _KIND.get(first["type"], first["type"])
    if kind in ("extra", "missing"):
        parent = tuple(first["loc"][:-1])
        keys = [
            str(e["loc"][-1])
            for e in errors
            if _KIND.get(e["type"]) == kind and tuple(e["loc"][:-1]) == parent
        ]
        return Problem(parent, _key_message(kind, sorted(set(keys)), schema, parent))
    return Problem(tuple(first["loc"]), _message(first, schema))


_KIND = {
    "extra_forbidden": "extra",
    "unexpected_keyword_argument": "extra",
    "missing": "missing",
    "missing_argument": "missing",
    "missing_keyword_only_argument": "missing",
}
_TYPE_NAMES = {
    ("int_type", "int_parsing", "int_from_float"): "an integer",
    ("float_type", "float_parsing"): "a number",
    ("bool_type", "bool_parsing"): "true or false",
    ("list_type", "tuple_type", "iterable_type", "set_type", "frozen_set_type"): "a list",
}
_MAPPING_TYPES = (
    "dict_type",
    "model_type",
    "dataclass_type",
    "mapping_type",
    "model_attributes_type",
)
_BOUNDS = {
    "greater_than_equal": ">=",
    "greater_than": ">",
    "less_than_equal": "<=",
    "less_than": "<",
}


def _message(error: Mapping[str, Any], schema: Any) -> str:
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    noun = _noun(schema, tuple(error["loc"]))
    for kinds, name in _TYPE_NAMES.items():
        if kind in kinds:
            return f"expected {noun or name}, got {value!r}"
    if kind in _MAPPING_TYPES:
        return f"expected a mapping, got {_type_name(value)}"
    if kind == "string_type":
        return f"expected a string, got {_type_name(value)}"
    if kind in _BOUNDS:
        bound = next(iter(ctx.values()))
        return f"expected {noun or 'a number'} {_BOUNDS[kind]} {bound}, got {value!r}"
    if kind == "finite_number":
        return f"expected a finite number, got {value!r}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {value!r}"
    if kind == "too_short":
        least = ctx.get("min_length")
        return f"expected at least {least} {'entry' if least == 1 else 'entries'}, got {value!r}"
    message = str(error["msg"])
    for tag in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(tag)
    return message


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _key_message(kind: str, keys: list[str], schema: Any, parent: tuple[str | int, ...]) -> str:
    model = _type_at(schema, parent)
    allowed = sorted(_fields(model)) if model is not None else []
    if kind == "missing":
        return f"missing required keys {keys}"
    noun = getattr(model, "__schema_keys__", "keys")
    message = f"unknown {noun} {keys}"
    if allowed:
        message += f"; expected {allowed}"
        close = difflib.get_close_matches(keys[0], allowed, n=1)
        if close:
            message += f"; did you mean {close[0]!r}?"
    return message


# -- walking a schema to a location -----------------------------------------------------------


def _fields(model: Any) -> dict[str, Any]:
    """Field name -> annotation of a model or a dataclass ({} for anything else)."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return {name: f.rebuild_annotation() for name, f in model.model_fields.items()}
    if isinstance(model, type) and dataclasses.is_dataclass(model):
        pydantic_fields = getattr(model, "__pydantic_fields__", None)
        if pydantic_fields is not None:
            return {name: f.rebuild_annotation() for name, f in pydantic_fields.items()}
        return typing.get_type_hints(model, include_extras=True)
    return {}


def _arms(hint: Any) -> tuple[list[Any], list[Any]]:
    """``hint`` without ``Annotated`` and ``None``: (its alternatives, their metadata)."""
    metadata: list[Any] = []
    while typing.get_origin(hint) is Annotated:
        metadata += list(hint.__metadata__)
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        arms, more = [], []
        for arm in typing.get_args(hint):
            if arm is not type(None):
                inner, inner_meta = _arms(arm)
                arms += inner
                more += inner_meta
        return arms, metadata + more
    return [hint], metadata


def _step(hint: Any, part: str | int) -> Any:
    for arm in _arms(hint)[0]:
        origin = typing.get_origin(arm)
        args = typing.get_args(arm)
        if isinstance(part, int) and origin in (tuple, list, Sequence) and args:
            return args[0]
        if isinstance(part, str) and origin in (dict, Mapping) and len(args) == 2:
            return args[1]
        fields = _fields(arm)
        if isinstance(part, str) and part in fields:
            return fields[part]
    return None


def _hint_at(schema: Any, loc: tuple[str | int, ...]) -> Any:
    hint = schema
    for part in loc:
        if hint is None:
            return None
        hint = _step(hint, part)
    return hint


def _type_at(schema: Any, loc: tuple[str | int, ...]) -> Any:
    """The model or dataclass at ``loc`` (None when the walk gets lost)."""
    hint = _hint_at(schema, loc)
    if hint is None:
        return None
    return next((arm for arm in _arms(hint)[0] if _fields(arm)), None)


def _noun(schema: Any, loc: tuple[str | int, ...]) -> str | None:
    """How the messages name the values at ``loc``: a `Noun`, else by the field's type."""
    hint = _hint_at(schema, loc) if schema is not None else None
    if hint is None:
        return None
    arms, metadata = _arms(hint)
    named = [m.text for m in metadata if isinstance(m, Noun)]
    if named:
        return named[0]
    if arms and arms[0] is int:
        return "an integer"
    if arms and arms[0] is float:
        return "a number"
    return None


# -- validating -------------------------------------------------------------------------------


@functools.cache
def type_adapter(schema: Any) -> TypeAdapter[Any]:
    """The (cached) `TypeAdapter` of ``schema``."""
    return TypeAdapter(schema)


def validate(
    schema: type[T] | Any,
    data: Any,
    *,
    error: ErrorFactory,
    source: str = "",
    prefix: str = "",
    root: str = "",
    context: Mapping[str, Any] | None = None,
) -> T:
    """Validate ``data`` into ``schema``.

    Args:
        schema: A pydantic model or dataclass, or any type a `TypeAdapter` takes.
        data: The parsed YAML (or JSON) value.
        error: Builds the exception raised for invalid data (an error class).
        source: The file, named first in messages ("" for none).
        prefix: Path of ``data`` inside the file (``"llm"``), put before the field path.
        root: How messages name ``data`` itself (e.g. ``"(top level)"``).
        context: Passed to the validators (`ValidationInfo.context`).

    Returns:
        The validated value.

    Raises:
        PrefduelError: the exception ``error`` builds (its own class), naming source, field
            path and what is allowed.
    """
    try:
        return type_adapter(schema).validate_python(data, context=context)
    except ValidationError as exc:
        message = describe(exc, schema, source=source, prefix=prefix, root=root)
        raise error(message) from None


def load(
    schema: type[T] | Any,
    path: str | Path,
    *,
    error: ErrorFactory,
    what: str = "config file",
    context: Mapping[str, Any] | None = None,
) -> T:
    """`validate` a YAML file (missing, unreadable and non-YAML files raise ``error`` too)."""
    data = read_yaml(path, what, error)
    return validate(schema, data, error=error, source=str(path), context=context)


def frozen_dataclass(
    *, error: ErrorFactory, path: str = "", keys: str = "keys"
) -> Callable[[type[T]], type[T]]:
    """Make a class a frozen pydantic dataclass that refuses unknown keys and raises ``error``.

    Direct construction and ``dataclasses.replace`` validate too; their messages name the field
    as ``PATH.FIELD`` (``run.max_turns: expected an integer >= 1, got 0``).

    Args:
        error: Builds the exception for invalid values (an error class).
        path: Where the class sits in its config file (``"run"``), for messages of direct
            construction ("" for none).
        keys: How messages name unknown keys (``"unknown LLM settings [...]"``).
    """

    def decorate(cls: type[T]) -> type[T]:
        made = pydantic_dataclass(frozen=True, config=FORBID_EXTRA)(cls)
        made.__schema_keys__ = keys  # type: ignore[attr-defined]
        checked_init = made.__init__

        @functools.wraps(checked_init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                checked_init(self, *args, **kwargs)
            except ValidationError as exc:
                raise error(describe(exc, made, prefix=path, root=path)) from None

        made.__init__ = __init__  # type: ignore[method-assign]
        return made

    return decorate


__all__ = [
    "FORBID_EXTRA",
    "BlankText",
    "Integer",
    "Noun",
    "Number",
    "Problem",
    "Real",
    "Switch",
    "Text",
    "describe",
    "error_at",
    "field_path",
    "first_problem",
    "frozen_dataclass",
    "load",
    "type_adapter",
    "validate",
]
