"""Errors of the LLM layer. Messages say what was expected and what arrived, never an API key."""

from __future__ import annotations

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
