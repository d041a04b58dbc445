"""The running totals of an `LLMClient` (`ClientStats`)."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class ClientStats:
    """Running totals of one client (snapshot with `LLMClient.stats`).

    Attributes:
        requests: Requests answered (hits, answers and failures).
        hits: Answered from the cache.
        answered: Answered by the backend.
        failed: Gave up (after retries, permanent errors, or skipped by the budget cap).
        attempts: Attempts sent to the backend.
        retries: Failed attempts that were retried.
        prompt_tokens: Prompt tokens of the answers received (hits excluded).
        completion_tokens: Completion tokens of the answers received (hits excluded).
        cost: Money spent (hits cost nothing).
        started: ``time.monotonic()`` when the client was made (for calls per second).
    """

    requests: int = 0
    hits: int = 0
    answered: int = 0
    failed: int = 0
    attempts: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    started: float = 0.0

    def rate(self, now: float | None = None) -> float:
        """Requests per second since `started`."""
        elapsed = (time.monotonic() if now is None else now) - self.started
        return self.requests / elapsed if elapsed > 0 else 0.0
