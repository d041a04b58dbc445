"""How the test server shapes an answer: structured output, sampled first tokens, logprobs.

`prefduel.llm.testserver` answers every chat completion with the text of its ``answer``
function; this module adds what real OpenAI-compatible servers do on request:

* **structured output** (``response_format: {"type": "json_schema", ...}``): with
  ``structured="honour"`` the text is put into the schema (`conform`: a pick becomes the enum value
  it names, prose becomes the string property, scores are read from the text's JSON object);
  ``"ignore"`` answers free text as servers that do not know the parameter do; ``"reject"``
  answers HTTP 400 as servers that refuse it do; ``"json_object"`` behaves as llama-cpp-python's
  server: a ``json_schema`` format gets HTTP 500 with a validation error naming
  ``response_format``, the older ``{"type": "json_object", "schema": ...}`` is honoured
  (`SERVER_STRUCTURED`);
* **a sampling distribution** of the first answer token (a ``distribution`` function of the
  body, e.g. the scripted judge's chance of each label): the answer is drawn from it, per
  request, from a hash of the body and its occurrence (or its ``seed``), so repeated samples of
  one prompt differ as they do at temperature 1 (`draw`);
* **log-probabilities** (``logprobs: true``, ``top_logprobs: n``): the answer's tokens
  (`tokens`) with their log-probabilities; the drawn token's position carries the distribution
  as its ``top_logprobs``, every other token has probability 1 (`logprobs_payload`). Logprobs
  and sampled answers therefore agree: the mean of many sampled picks is the probability the
  logprobs give.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

#: What the test server does with ``response_format``.
SERVER_STRUCTURED = ("honour", "ignore", "reject", "json_object")

#: A distribution function: the first answer token's probabilities for a request body, or None.
DistributionFn = Callable[[Mapping[str, Any]], Mapping[str, float] | None]

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]+")
_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def tokens(text: str) -> list[str]:
    """``text`` cut into word, space and punctuation runs (the test server's tokens)."""
    return _TOKEN.findall(text)


def json_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON schema a body's ``response_format`` asks for, or None."""
    fmt = body.get("response_format")
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    return schema if isinstance(schema, Mapping) else None


def json_object_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema of the older form ``{"type": "json_object", "schema": ...}``, or None."""
    fmt = body.get("response_format")
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_object":
        return None
    schema = fmt.get("schema")
    return schema if isinstance(schema, Mapping) else None


def _choice(text: str, options: list[Any]) -> Any:
    """The enum value ``text`` names (exactly, or as a standalone word), else the first."""
    stripped = text.strip().strip("\"'*.`() ")
    for option in options:
        if stripped == str(option):
            return option
    for option in options:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(str(option))}(?![A-Za-z0-9])", text):
            return option
    return options[0]


def _numbers(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (empty when there is none)."""
    for block in _JSON_OBJECT.findall(text):
        try:
            data = json.loads(block)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return {}


def _property(name: str, spec: Mapping[str, Any], text: str, found: dict[str, Any]) -> Any:
    if "enum" in spec:
        return _choice(text, list(spec["enum"]))
    kind = spec.get("type")
    if kind in ("number", "integer"):
        value = found.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        return spec.get("minimum", 0)
    if kind == "boolean":
        return bool(found.get(name, False))
    return text


def conform(text: str, schema: Mapping[str, Any]) -> str:
    """``text`` put into ``schema``, as JSON text (a constrained decoder's output).

    A string enum at the top becomes the value ``text`` names; an object gets each property:
    enums as above, numbers from the first JSON object in ``text`` (else the minimum), strings
    the whole ``text``.
    """
    if "enum" in schema:
        return json.dumps(_choice(text, list(schema["enum"])))
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, Mapping):
        return json.dumps(text)
    found = _numbers(text)
    return json.dumps(
        {name: _property(name, spec, text, found) for name, spec in properties.items()}
    )


def draw(distribution: Mapping[str, float], key: str, index: int) -> str:
    """A token drawn from ``distribution`` with a uniform from the hash of ``key`` and
    ``index`` (deterministic; differs between indexes)."""
    total = sum(distribution.values())
    digest = hashlib.sha256(f"{key}:{index}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64 * total
    for token, p in distribution.items():
        u -= p
        if u < 0:
            return token
    return next(reversed(distribution))


def _entry(token: str, logprob: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode("utf-8")),
        "top_logprobs": [
            {"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))} for t, lp in top
        ],
    }


def logprobs_payload(
    text: str, chosen: str | None, distribution: Mapping[str, float] | None, top_n: int
) -> dict[str, Any]:
    """``choices[0].logprobs`` of an answer: its tokens, the first one equal to ``chosen``
    carrying ``distribution`` (its ``top_n`` likeliest entries), the others probability 1."""
    content = []
    placed = False
    for token in tokens(text):
        if not placed and distribution and token == chosen:
            placed = True
            ranked = sorted(distribution.items(), key=lambda kv: -kv[1])
            top = [(t, math.log(p)) for t, p in ranked if p > 0][:top_n]
            logprob = math.log(distribution[token]) if distribution.get(token) else -9999.0
            content.append(_entry(token, logprob, top))
        else:
            content.append(_entry(token, 0.0, [(token, 0.0)][:top_n]))
    return {"content": content}


__all__ = [
    "SERVER_STRUCTURED",
    "DistributionFn",
    "conform",
    "draw",
    "json_object_schema",
    "json_schema",
    "logprobs_payload",
    "tokens",
]
