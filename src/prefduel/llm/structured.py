"""Structured outputs: ask the endpoint to answer in a JSON schema; read it; fall back to text.

Small and local models often cannot follow a format they are only told about (``Reply with a
single letter``). OpenAI, vLLM and llama.cpp's server can constrain the answer instead: a request
parameter ``response_format = {"type": "json_schema", "json_schema": {"name": ..., "schema":
..., "strict": true}}`` makes the model produce JSON that validates against the schema. An
`AnswerFormat` describes the answer of one role; a role's `StructuredMode` setting says whether
and how to ask for it:

===============  ================================================================================
mode             what is sent
===============  ================================================================================
``off``          nothing (the default: requests, and their cache keys, stay as they were)
``auto``         the role's schema for answers with a shape (a pick, scores); nothing for prose
``json_schema``  the role's JSON object schema (a pick: ``{"pick": "A"}``; prose:
                 ``{"answer": "..."}``)
``choice``       a pick only: a bare enum schema (``"A"``); vLLM and llama.cpp accept it, OpenAI
                 asks for an object at the top and refuses it (the fallback then answers)
``json_object``  the role's schema in the older form ``{"type": "json_object", "schema": ...}``,
                 the only one `llama-cpp-python`'s server takes (it answers ``json_schema`` with
                 HTTP 500 and a validation error); nothing for prose
===============  ================================================================================

``response_format`` is an ordinary request parameter, so it is part of the request's cache key
only when it is sent. The free-text parser of the role stays the fallback, per call:

* the endpoint **honours** the schema: the reply is unwrapped (`AnswerFormat.unwrap`: the pick
  ``"A"`` of ``{"pick": "A"}``, the scores object as JSON text) and read by the same parser;
* the endpoint **ignores** it (free text comes back): the text is read by the parser as is;
* the endpoint **rejects** it (HTTP 400, 415, 422 or 501, or any HTTP error whose message names
  ``response_format``: `rejected`; never retried as a transient error): the request is sent
  again one rung down (`fall_back`): a ``json_schema`` request as ``json_object`` with the same
  schema, a ``json_object`` request without ``response_format`` (`unstructured`: the very
  request of mode ``off``, so its answer is shared with unstructured runs through the cache).
  `sends_at_most` gives the worst case for dry-run bounds.

The stage engine (`prefduel.llm.stages.Stage`: ``answer`` and ``structured``) does all three and
records which path answered each call (`PATHS`). Example::

    PICK = AnswerFormat.choice("pick", ("A", "B"))
    stage = Stage("judge", request=..., parse=parse_pick, answer=PICK, structured="auto")
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from prefduel.llm.request import LLMRequest, LLMResponse, Params

#: How a role asks for structured output (see the module docstring).
StructuredMode = Literal["auto", "json_schema", "json_object", "choice", "off"]
STRUCTURED_MODES: tuple[str, ...] = get_args(StructuredMode)

#: The request parameter that carries the schema.
RESPONSE_FORMAT = "response_format"
#: HTTP statuses with which endpoints refuse a ``response_format`` they do not support.
REJECTION_STATUSES = frozenset({400, 415, 422, 501})

#: Which path answered a call that asked for structured output.
PATH_SCHEMA = "schema"  # the reply followed the schema
PATH_IGNORED = "ignored"  # the endpoint sent free text instead (read by the text parser)
PATH_REJECTED = "rejected"  # every format was refused; answered without response_format
PATHS = (PATH_SCHEMA, PATH_IGNORED, PATH_REJECTED)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


@dataclass(frozen=True)
class AnswerFormat:
    """The shape of one role's answer, for structured outputs (build with the class methods).

    Attributes:
        name: Schema name sent to the endpoint (letters, digits, ``_`` and ``-``; at most 64).
        schema: The JSON schema of the answer object (mode ``json_schema``, and ``auto`` unless
            ``prose``).
        field: The property holding the answer (``"pick"``, ``"answer"``); None: the whole object
            is the answer (e.g. scores), handed to the parser as JSON text.
        choices: The allowed picks (mode ``choice``: a bare enum schema).
        prose: The answer is free prose: ``auto`` sends no schema for it.

    Raises:
        ValueError: A bad name, or a ``field`` that the schema does not define.
    """

    name: str
    schema: Mapping[str, Any]
    field: str | None = None
    choices: tuple[str, ...] = ()
    prose: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(
                f"answer format name: expected 1-64 letters, digits, '_' or '-', got {self.name!r}"
            )
        if self.field is not None and self.field not in (self.schema.get("properties") or {}):
            raise ValueError(
                f"answer format {self.name}: the schema has no property {self.field!r}"
            )
        object.__setattr__(self, "schema", Params(self.schema).to_json())  # JSON values only

    @classmethod
    def choice(cls, name: str, choices: Sequence[str], *, field: str = "pick") -> AnswerFormat:
        """A pick among ``choices`` (e.g. ``("A", "B")``): ``{field: one of choices}``."""
        options = tuple(str(c) for c in choices)
        if len(options) < 2:
            raise ValueError(f"answer format {name}: expected at least two choices, got {options}")
        schema = _object({field: {"type": "string", "enum": list(options)}})
        return cls(name, schema, field=field, choices=options)

    @classmethod
    def text(cls, name: str, *, field: str = "answer") -> AnswerFormat:
        """Free prose, wrapped as ``{field: "..."}`` in mode ``json_schema`` (``auto``: off)."""
        return cls(name, _object({field: {"type": "string"}}), field=field, prose=True)

    @classmethod
    def scores(
        cls, name: str, keys: Sequence[str], *, minimum: float, maximum: float
    ) -> AnswerFormat:
        """A number in ``[minimum, maximum]`` for every key: ``{key: score, ...}`` (the object's
        JSON text is the answer)."""
        number = {"type": "number", "minimum": minimum, "maximum": maximum}
        return cls(name, _object({str(k): dict(number) for k in keys}))

    @classmethod
    def json_object(cls, name: str, schema: Mapping[str, Any]) -> AnswerFormat:
        """Any JSON object schema; the reply's JSON text is the answer."""
        return cls(name, dict(schema))

    def response_format(self, mode: StructuredMode) -> dict[str, Any] | None:
        """The ``response_format`` parameter of ``mode`` (None: send none).

        Raises:
            ValueError: An unknown mode, or ``choice`` for an answer without choices.
        """
        if mode not in STRUCTURED_MODES:
            raise ValueError(f"structured: expected one of {list(STRUCTURED_MODES)}, got {mode!r}")
        if mode == "off" or (mode == "auto" and self.prose):
            return None
        if mode == "choice":
            if not self.choices:
                raise ValueError(
                    f"structured: 'choice' needs an answer with choices; {self.name} has none "
                    f"(allowed: {[m for m in STRUCTURED_MODES if m != 'choice']})"
                )
            schema: Mapping[str, Any] = {"type": "string", "enum": list(self.choices)}
        else:
            schema = json.loads(json.dumps(self.schema))  # a copy the caller may change
        if mode == "json_object":
            return {"type": "json_object", "schema": dict(schema)}
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": dict(schema), "strict": True},
        }

    def sends_at_most(self, mode: StructuredMode) -> int:
        """Requests one call of ``mode`` may take when the endpoint refuses each format in turn
        (`fall_back`): 3 from ``json_schema``, 2 from ``json_object``, 1 without a schema."""
        fmt = self.response_format(mode)
        if fmt is None:
            return 1
        return 3 if fmt.get("type") == "json_schema" else 2

    def unwrap(self, text: str) -> tuple[str, bool]:
        """The answer inside a structured reply, for the role's text parser.

        Returns:
            ``(text for the parser, whether the reply followed the schema)``: the pick or the
            field's string, or the object's JSON text; ``(text, False)`` for free text.
        """
        data = _json(text)
        if self.choices and isinstance(data, str) and data in self.choices:
            return data, True  # mode "choice": a bare enum
        if not isinstance(data, dict):
            return text, False
        if self.field is None:
            required = self.schema.get("required") or ()
            return (json.dumps(data), True) if all(k in data for k in required) else (text, False)
        value = data.get(self.field)
        if not isinstance(value, str) or (self.choices and value not in self.choices):
            return text, False
        return value, True


def _object(properties: Mapping[str, Any]) -> dict[str, Any]:
    """A strict object schema: every property required, no others (as OpenAI's strict mode
    asks)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def _json(text: str) -> Any:
    """``text`` parsed as JSON (inside a code fence too), or None."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body)
    except ValueError:
        return None


def structure(request: LLMRequest, answer: AnswerFormat, mode: StructuredMode) -> LLMRequest:
    """``request`` asking for ``answer``'s structure as ``mode`` says (unchanged for ``off``)."""
    fmt = answer.response_format(mode)
    if fmt is None:
        return request
    return replace(request, params=Params({**request.params, RESPONSE_FORMAT: fmt}))


def unstructured(request: LLMRequest) -> LLMRequest:
    """``request`` without ``response_format`` (the request of mode ``off``)."""
    if RESPONSE_FORMAT not in request.params:
        return request
    params = {k: v for k, v in request.params.items() if k != RESPONSE_FORMAT}
    return replace(request, params=Params(params))


def is_structured(request: LLMRequest) -> bool:
    """Whether ``request`` asks for structured output."""
    return RESPONSE_FORMAT in request.params


def fall_back(request: LLMRequest) -> LLMRequest:
    """``request`` one rung down after its ``response_format`` was refused: ``json_schema`` ->
    ``json_object`` with the same schema -> none (`unstructured`)."""
    fmt = request.params.to_json().get(RESPONSE_FORMAT)
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            older = {"type": "json_object", "schema": schema}
            return replace(request, params=Params({**request.params, RESPONSE_FORMAT: older}))
    return unstructured(request)


def refuses_format(request: LLMRequest, status: int | None, message: str) -> bool:
    """Whether an HTTP error answering ``request`` refuses its ``response_format``: a status of
    `REJECTION_STATUSES`, or an error message naming ``response_format`` (llama-cpp-python's
    server answers an unknown format with HTTP 500 and a validation error)."""
    if not is_structured(request) or status is None:
        return False
    return status in REJECTION_STATUSES or RESPONSE_FORMAT in message.lower()


def rejected(response: LLMResponse) -> bool:
    """Whether a failed structured call was refused for its ``response_format``
    (`refuses_format`), so the request one rung down (`fall_back`) may succeed."""
    return not response.ok and refuses_format(
        response.request, response.status, response.error or ""
    )


__all__ = [
    "PATHS",
    "PATH_IGNORED",
    "PATH_REJECTED",
    "PATH_SCHEMA",
    "REJECTION_STATUSES",
    "RESPONSE_FORMAT",
    "STRUCTURED_MODES",
    "AnswerFormat",
    "StructuredMode",
    "fall_back",
    "is_structured",
    "refuses_format",
    "rejected",
    "structure",
    "unstructured",
]
