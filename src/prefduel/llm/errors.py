"""Errors of the LLM layer. Messages say what was expected and what arrived, never an API key."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from prefduel.core.errors import PrefduelError


class LLMError(PrefduelError):
    """Base class of the errors the LLM layer raises on purpose."""


class RequestError(LLMError, ValueError):
    """An `LLMRequest` is malformed (names the field)."""


class LLMConfigError(LLMError, ValueError):
    """A backend is misconfigured: missing API-key variable, missing ``openai`` extra, ..."""


class PriceTableError(LLMError, ValueError):
    """A price table file is missing or not in the documented format (names file and model)."""


class CacheError(LLMError, RuntimeError):
    """The response cache file cannot be opened, read or written."""


class LLMCallError(LLMError, RuntimeError):
    """One attempt of one call failed.

    Backends raise it from ``complete``; `LLMClient` retries
    the retryable ones and turns the rest into failed responses (it never raises it).

    Attributes:
        kind: ``"http"``, ``"timeout"``, ``"connection"``, ``"malformed"``, ``"refused"``,
            ``"config"`` (e.g. the key variable vanished), ``"backend"`` (a backend or handler
            raised something else) or ``"failed"`` (from ``LLMResponse.unwrap``).
        status: The HTTP status, when the endpoint answered with one.
        retryable: Whether the same request may succeed when sent again.
        retry_after: Seconds the endpoint asked to wait (``retry-after`` / ``retry-after-ms``).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


#: Failure kinds that re-sending cannot fix when they are not retryable (an HTTP 401, 403 or
#: 404, a missing key variable): the endpoint settings are wrong.
PERMANENT_KINDS = ("http", "config")


def endpoint_problem(failures: Iterable[Mapping[str, Any]], *, answered: int) -> str | None:
    """The error that makes a batch's failures a settings problem rather than a resumable one.

    Args:
        failures: Failure records (`prefduel.llm.stages.StageEngine.failures`: ``error``,
            ``kind``, ``permanent``).
        answered: Calls the endpoint answered in the same run.

    Returns:
        The commonest permanent error (``permanent`` and of a `PERMANENT_KINDS` kind), or, when
        the endpoint answered nothing and every failure is a connection error (a wrong address
        or port, or a server that is not running), the commonest of those; else None (transient
        failures: re-running resumes).
    """
    records = list(failures)
    permanent = [
        f["error"] for f in records if f.get("permanent") and f.get("kind") in PERMANENT_KINDS
    ]
    if permanent:
        return Counter(permanent).most_common(1)[0][0]
    if records and answered == 0 and all(f.get("kind") == "connection" for f in records):
        return Counter(f["error"] for f in records).most_common(1)[0][0]
    return None
