"""Secrets out of replies: `scrub` replaces each secret in a text, `scrub_reply` in every string
of a reply (see `prefduel.llm.openai_backend` for which secrets an endpoint's replies are
scrubbed of, and when)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from prefduel.llm.request import LLMResponse

#: What replaces a secret found in a reply.
REDACTED = "[REDACTED]"


def _scrub_all(value: Any, secrets: list[str]) -> Any:
    """``value`` with `scrub` applied to every string inside it: through dataclasses, named
    tuples, tuples, lists and mappings (keys too); other values as they are."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _scrub_all(getattr(value, f.name), secrets)
            for f in dataclasses.fields(value)
            if f.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_scrub_all(v, secrets) for v in value))
    if isinstance(value, tuple | list):
        return type(value)(_scrub_all(v, secrets) for v in value)
    if isinstance(value, Mapping):
        return {_scrub_all(k, secrets): _scrub_all(v, secrets) for k, v in value.items()}
    return value


def scrub_reply(response: LLMResponse, secrets: Iterable[str | None]) -> LLMResponse:
    """``response`` with every secret replaced by `REDACTED` in every string of the reply:
    each field (text, model, finish reason, error, logprobs, usage, and any field added later),
    recursively; the request (what was sent) is left as it is."""
    found = [s for s in secrets if s]
    if not found:
        return response
    changes = {
        f.name: _scrub_all(getattr(response, f.name), found)
        for f in dataclasses.fields(response)
        if f.name != "request"
    }
    return dataclasses.replace(response, **changes)


def scrub(text: str | None, secrets: Iterable[str | None]) -> str | None:
    """``text`` with every occurrence of each non-empty secret replaced by `REDACTED`.

    Longer secrets are replaced first (so a secret containing another is replaced whole).
    None and empty secrets are ignored; None text is returned as is.
    """
    if not text:
        return text
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


__all__ = ["REDACTED", "scrub", "scrub_reply"]
