"""Dry runs: the calls, tokens and cost of a batch before it is sent (``--dry-run``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prefduel.llm.cache import ResponseCache
from prefduel.llm.prices import PriceTable, estimate_tokens, load_prices
from prefduel.llm.request import LLMRequest


@dataclass(frozen=True)
class CostEstimate:
    """A dry-run estimate (see `estimate_cost`).

    Attributes:
        calls: Requests.
        cached: Of which already in the cache (free).
        prompt_tokens: Estimated prompt tokens of the uncached calls.
        completion_tokens: Estimated completion tokens of the uncached calls.
        cost: Estimated cost of the uncached calls.
        currency: The price table's currency.
        unpriced_models: Models without a price (counted at 0).
    """

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    currency: str
    unpriced_models: tuple[str, ...] = ()

    @property
    def to_send(self) -> int:
        """Calls that would be sent."""
        return self.calls - self.cached


def estimate_cost(
    requests: Iterable[LLMRequest],
    *,
    prices: PriceTable | None = None,
    completion_tokens: int | Callable[[LLMRequest], int] | None = None,
    cache: ResponseCache | None = None,
    namespace: str = "openai",
) -> CostEstimate:
    """Estimate calls, tokens and cost of a batch before sending it (``--dry-run``).

    Prompt tokens are estimated from the text (`estimate_tokens`);
    completion tokens from ``completion_tokens`` (a number or a function of the request), else
    the request's ``max_tokens`` / ``max_completion_tokens``, else 256.

    Args:
        requests: The batch.
        prices: Price table (default `load_prices()`).
        completion_tokens: Expected completion tokens per call.
        cache: If given, cached requests are counted as free.
        namespace: The cache namespace of the backend that would answer.
    """
    items = list(requests)
    prices = prices if prices is not None else load_prices()
    cached = cache.cached_keys((r.key for r in items), namespace) if cache is not None else set()
    prompt = completion = 0
    cost = 0.0
    unpriced: set[str] = set()
    for request in items:
        if request.key in cached:
            continue
        p = sum(estimate_tokens(m.content) for m in request.messages)
        if callable(completion_tokens):
            c = completion_tokens(request)
        elif completion_tokens is not None:
            c = completion_tokens
        else:
            c = request.params.get("max_tokens") or request.params.get("max_completion_tokens")
            c = int(c) if isinstance(c, int) else 256
        prompt += p
        completion += c
        if prices.known(request.model):
            cost += prices.cost(request.model, p, c)
        else:
            unpriced.add(request.model)
    return CostEstimate(
        calls=len(items),
        cached=sum(1 for r in items if r.key in cached),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=cost,
        currency=prices.currency,
        unpriced_models=tuple(sorted(unpriced)),
    )


__all__ = ["CostEstimate", "estimate_cost"]
