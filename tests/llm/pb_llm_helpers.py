"""Helpers shared by the LLM-layer tests (imported by name: ``tests/llm`` is on ``sys.path``)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from prefduel.llm import LLMCallError, LLMRequest, LLMResponse, Usage

#: A unique fake API key for this test session: it must never appear in a file or message.
FAKE_KEY = "sk-pbtest-" + secrets.token_hex(16)
KEY_ENV = "PREFDUEL_TEST_LLM_KEY"


def make_requests(
    n: int, *, role: str = "judge", samples: int = 1, model: str = "gpt-4o-mini", tag: str = "q"
) -> list[LLMRequest]:
    """``n`` prompts x ``samples`` sample indices."""
    return [
        LLMRequest.chat(model, f"{tag} {i}", role=role, sample=s, temperature=1.0, max_tokens=8)
        for i in range(n)
        for s in range(samples)
    ]


class RecordingSleep:
    """An injectable ``sleep`` that records the delays and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


class FlakyBackend:
    """A backend whose attempt ``n`` of a request follows ``plan(request)[n]``.

    A plan entry is None (answer), an :class:`LLMCallError` (raised) or any other exception.
    Counts attempts per key and the largest number of attempts in flight at once.
    """

    namespace = "flaky"
    billable = True

    def __init__(
        self,
        plan: Callable[[LLMRequest], Sequence[BaseException | None]] | None = None,
        *,
        latency: float = 0.0,
        usage: Usage | None = None,
    ) -> None:
        self.plan = plan or (lambda request: [])
        self.latency = latency
        self.usage = usage or Usage(10, 5)
        self.attempts: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        n = self.attempts[request.key]
        self.attempts[request.key] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            steps = self.plan(request)
            if n < len(steps) and steps[n] is not None:
                raise steps[n]
            return LLMResponse(
                request=request,
                text=f"answer to {request.messages[-1].content} #{request.sample}",
                model=request.model + "-2024",
                finish_reason="stop",
                usage=self.usage,
                created=time.time(),
            )
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        pass


def transient(status: int | None = 503, retry_after: float | None = None) -> LLMCallError:
    """A retryable failure."""
    return LLMCallError(
        f"HTTP {status}", kind="http", status=status, retryable=True, retry_after=retry_after
    )


def files_containing(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    data = needle.encode("utf-8")
    return [p for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]
