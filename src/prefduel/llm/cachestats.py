"""What a response cache holds: entries, tokens and hypothetical cost per group (`CacheStats`)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prefduel.llm.prices import PriceTable

#: Namespaces whose answers were never billed (their hypothetical cost is 0).
UNBILLED_NAMESPACES = frozenset({"scripted"})


@dataclass(frozen=True)
class CacheGroup:
    """Cached answers of one (namespace, model, role)."""

    namespace: str
    model: str
    role: str
    entries: int
    prompt_tokens: int
    completion_tokens: int
    cost: float


@dataclass(frozen=True)
class CacheStats:
    """What a cache holds (see `ResponseCache.stats`).

    Attributes:
        path: The database file.
        entries: Cached answers.
        prompt_tokens: Sum of prompt tokens over entries.
        completion_tokens: Sum of completion tokens over entries.
        cost: What the cached answers would cost at the table's prices (hypothetical: they
            were paid once, and hits cost nothing).
        currency: The price table's currency.
        size_bytes: Bytes on disk (database plus its WAL and shared-memory files).
        oldest: Unix time of the oldest entry (None when empty).
        newest: Unix time of the newest entry.
        groups: Per (namespace, model, role) breakdown, largest first.
        unpriced_models: Models without a price (counted at 0).
        endpoints: ``(endpoint, entries)`` per recorded endpoint, largest first (None: entries
            without one: scripted answers, or written before endpoints were recorded).
    """

    path: str
    entries: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    currency: str
    size_bytes: int
    oldest: float | None
    newest: float | None
    groups: tuple[CacheGroup, ...] = field(default=())
    unpriced_models: tuple[str, ...] = field(default=())
    endpoints: tuple[tuple[str | None, int], ...] = field(default=())

    def by(self, column: str) -> list[CacheGroup]:
        """Groups summed over everything but ``column`` (``"model"``, ``"role"`` or
        ``"namespace"``), largest first."""
        if column not in ("model", "role", "namespace"):
            raise ValueError(f"expected model, role or namespace, got {column!r}")
        sums: dict[str, list[float]] = {}
        for g in self.groups:
            s = sums.setdefault(getattr(g, column), [0, 0, 0, 0.0])
            s[0] += g.entries
            s[1] += g.prompt_tokens
            s[2] += g.completion_tokens
            s[3] += g.cost
        rows = [
            CacheGroup(
                namespace=name if column == "namespace" else "*",
                model=name if column == "model" else "*",
                role=name if column == "role" else "*",
                entries=int(s[0]),
                prompt_tokens=int(s[1]),
                completion_tokens=int(s[2]),
                cost=float(s[3]),
            )
            for name, s in sums.items()
        ]
        return sorted(rows, key=lambda g: (-g.entries, getattr(g, column)))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        data = asdict(self)
        data["groups"] = [asdict(g) for g in self.groups]
        data["unpriced_models"] = list(self.unpriced_models)
        data["endpoints"] = [{"endpoint": e, "entries": n} for e, n in self.endpoints]
        return data


def _file_size(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(f"{path}{suffix}")
        except OSError:
            pass
    return total


def cache_stats(
    path: Path,
    rows: list[tuple[str, str, str, int, int, int]],
    span: tuple[float | None, float | None],
    endpoints: list[tuple[str | None, int]],
    prices: PriceTable | None,
) -> CacheStats:
    """The `CacheStats` of a cache file from its grouped rows.

    Args:
        path: The database file.
        rows: ``(namespace, model, role, entries, prompt tokens, completion tokens)`` per group.
        span: ``(oldest, newest)`` creation time of the entries.
        endpoints: ``(endpoint, entries)`` per recorded endpoint, largest first.
        prices: Price table for the hypothetical cost (None: cost 0).
    """
    groups, unpriced = [], set()
    for namespace, model, role, n, prompt, completion in rows:
        cost = 0.0
        if prices is not None and namespace not in UNBILLED_NAMESPACES:
            if prices.known(model):
                cost = prices.cost(model, prompt, completion)
            else:
                unpriced.add(model)
        groups.append(CacheGroup(namespace, model, role, n, prompt, completion, cost))
    groups.sort(key=lambda g: (-g.entries, g.namespace, g.model, g.role))
    return CacheStats(
        path=str(path),
        entries=sum(g.entries for g in groups),
        prompt_tokens=sum(g.prompt_tokens for g in groups),
        completion_tokens=sum(g.completion_tokens for g in groups),
        cost=sum(g.cost for g in groups),
        currency=prices.currency if prices is not None else "USD",
        size_bytes=_file_size(path),
        oldest=span[0],
        newest=span[1],
        groups=tuple(groups),
        unpriced_models=tuple(sorted(unpriced)),
        endpoints=tuple((e, int(n)) for e, n in endpoints),
    )
