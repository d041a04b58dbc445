"""Retry policy: which failures to retry and how long to wait.

Retried: HTTP 408, 409, 429 and 5xx, timeouts, connection errors (drops, truncated bodies) and
malformed answers — i.e. every `LLMCallError` with
``retryable=True``. Not retried: other 4xx (bad request, authentication, unknown model).

Wait before attempt ``n + 1`` (after ``n`` failures):

* the endpoint's ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date) when given,
  capped at ``max_retry_after``;
* else exponential backoff with jitter: ``min(max_delay, base_delay * multiplier**(n-1))``
  reduced by a random fraction up to ``jitter``. The random fraction is a hash of
  ``(seed, request key, n)``, so delays are reproducible and independent of task scheduling.
"""

from __future__ import annotations

import email.utils
import hashlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying: 408, 409, 429 and every 5xx."""
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date).

    Args:
        headers: Response headers (case-insensitive lookup is done on lower-cased names).
        now: Current Unix time for HTTP dates (default: ``time.time()``).

    Returns:
        Non-negative seconds, or None when no usable header is present.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = lower.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            try:
                date = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                continue
            seconds = date.timestamp() - (time.time() if now is None else now)
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _unit(seed: int, key: str, attempt: int) -> float:
    """A uniform number in [0, 1) determined by its arguments."""
    digest = hashlib.sha256(f"{seed}:{key}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts and how long to wait between them.

    Attributes:
        max_attempts: Attempts per call, the first included (1 = never retry).
        base_delay: Backoff before the second attempt, in seconds.
        multiplier: Backoff growth per failure.
        max_delay: Longest backoff.
        jitter: Fraction of the backoff removed at random (0 = none, 1 = "full jitter").
        max_retry_after: Longest wait honoured from a ``retry-after`` header.
        seed: Seed of the jitter.
    """

    max_attempts: int = 6
    base_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    jitter: float = 0.25
    max_retry_after: float = 120.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(f"max_attempts: expected an int >= 1, got {self.max_attempts!r}")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}: expected >= 0 seconds, got {getattr(self, name)!r}")
        if not self.multiplier >= 1:
            raise ValueError(f"multiplier: expected >= 1, got {self.multiplier!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter: expected a fraction in [0, 1], got {self.jitter!r}")

    def delay(self, failures: int, *, key: str = "", retry_after: float | None = None) -> float:
        """Seconds to wait before the next attempt.

        Args:
            failures: Failed attempts so far (1 after the first failure).
            key: The request key (seeds the jitter).
            retry_after: Seconds the endpoint asked for, if it did.

        Returns:
            The wait in seconds.
        """
        if retry_after is not None:
            return min(max(0.0, retry_after), self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * self.multiplier ** max(0, failures - 1))
        return backoff * (1.0 - self.jitter * _unit(self.seed, key, failures))
