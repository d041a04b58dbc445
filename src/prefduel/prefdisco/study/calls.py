"""Which calls each episode made, and what they cost.

The LLM layer's call log (``llm-calls.jsonl``) has one line per attempt but knows nothing of
episodes. `MeteredClient` wraps a role group's client: every response it returns inside
`recording` is also noted there as a `call_record` (role, model, sample, cache key,
finish reason, tokens, cost), so each transcript and score row carries the records of its own
calls (``calls``), joinable to the call log by ``key``. The records are per episode because
each episode runs in its own task and `recording` keeps the list in a context variable.

The cost of a call is priced from its token counts with the client's price table, also for an
answer served from the cache: it is what the episode costs, not what this run paid, so a
resumed run writes the same rows as an uninterrupted one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from prefduel.llm.request import Completer, LLMRequest, LLMResponse

_CALLS: ContextVar[list[dict[str, Any]] | None] = ContextVar("prefdisco_calls", default=None)


@contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """Collect the call records of the `MeteredClient` calls made in this task (and the
    tasks it starts) into the list yielded."""
    calls: list[dict[str, Any]] = []
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)


def call_record(response: LLMResponse, prices: Any = None) -> dict[str, Any]:
    """One call as the rows record it.

    Args:
        response: The call's response.
        prices: A price table (`prefduel.llm.prices.PriceTable`); without one the response's
            own cost is used (0 for a cache hit).
    """
    request = response.request
    usage = response.usage
    if prices is not None and prices.known(request.model):
        cost = prices.cost(request.model, usage.prompt_tokens, usage.completion_tokens)
    else:
        cost = response.cost
    return {
        "role": request.role,
        "model": request.model,
        "sample": request.sample,
        "key": request.key,
        "ok": response.ok,
        "finish_reason": response.finish_reason,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost": round(cost, 9),
    }


class MeteredClient:
    """A `Completer` that notes each response in the current `recording` (if any).

    Args:
        client: The client that answers (an `LLMClient` brings its price table).
    """

    def __init__(self, client: Completer) -> None:
        self.client = client
        self.prices = getattr(client, "prices", None)

    def __repr__(self) -> str:
        return f"MeteredClient({self.client!r})"

    @property
    def endpoint(self) -> str | None:
        """The wrapped client's endpoint (None when it has none)."""
        return getattr(self.client, "endpoint", None)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer through the wrapped client and note the call."""
        response = await self.client.complete(request)
        calls = _CALLS.get()
        if calls is not None:
            calls.append(call_record(response, self.prices))
        return response


def metered(client: Completer) -> Completer:
    """``client`` wrapped once in a `MeteredClient`."""
    return client if isinstance(client, MeteredClient) else MeteredClient(client)


def in_order(calls: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """Records of concurrent calls (the judgements of one episode) in a fixed order: role,
    sample, key; the order in which they finished depends on the endpoint."""
    return tuple(sorted(calls, key=lambda c: (str(c["role"]), int(c["sample"]), str(c["key"]))))


def usage_of(calls: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Calls, tokens and cost of some call records."""
    items = list(calls)
    return {
        "calls": len(items),
        "prompt_tokens": sum(int(c.get("prompt_tokens") or 0) for c in items),
        "completion_tokens": sum(int(c.get("completion_tokens") or 0) for c in items),
        "cost": round(sum(float(c.get("cost") or 0.0) for c in items), 9),
    }


def finish_reasons(calls: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Role -> finish reason (``stop``, ``length``, ``none`` when not reported, ``failed`` for
    a call without an answer, e.g. a structured request the endpoint refused) -> calls."""
    counts: dict[str, Counter[str]] = {}
    for c in calls:
        reason = "failed" if c.get("ok") is False else str(c.get("finish_reason") or "none")
        counts.setdefault(str(c.get("role")), Counter())[reason] += 1
    return {role: dict(sorted(n.items())) for role, n in sorted(counts.items())}


__all__ = [
    "MeteredClient",
    "call_record",
    "finish_reasons",
    "in_order",
    "metered",
    "recording",
    "usage_of",
]
