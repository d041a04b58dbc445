"""Where stage calls go, and what is counted: senders, per-stage reports, progress bars.

Part of the stage engine (`prefduel.llm.stages`):

* `ClientSender` sends through an LLM client (any `Completer`; an
  `LLMClient` brings the cache, bounded concurrency, retries, the budget stop and
  the call log), keeps each stage's `StageReport` (calls answered, cached, failed, tokens,
  money spent in this run, and what the cached answers cost when an earlier run received them),
  and moves a tqdm `ProgressBar` per stage on stderr;
* `CacheSender` answers from the cache only and estimates what the rest would cost
  (`StageEstimate`: dry runs, nothing is sent and no API key is needed).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tqdm import tqdm

from prefduel.llm.cache import ResponseCache
from prefduel.llm.estimate import estimate_cost
from prefduel.llm.prices import PriceTable
from prefduel.llm.request import Completer, LLMRequest, LLMResponse
from prefduel.llm.structured import rejected


@dataclass
class StageReport:
    """What one stage did.

    Attributes:
        stage: Stage name.
        calls: Requests answered (cache hits, new answers and failures; retries included).
        cached: Answered from the cache (free).
        sent: Answered by the backend in this run.
        failed: Calls without an answer (re-run to retry them).
        malformed: Answers that could not be parsed.
        retried: Extra requests for malformed answers.
        unusable: Items left without a usable answer after all tries.
        structured: Answers that followed the requested JSON schema (structured output).
        structure_ignored: Answers to a structured request that came back as free text (read
            by the text parser).
        structure_rejected: Structured requests the endpoint refused (HTTP 400, 422, ...), each
            asked again without ``response_format`` (counted in ``calls`` too).
        prompt_tokens: Prompt tokens sent in this run.
        completion_tokens: Completion tokens received in this run.
        cost: Money spent in this run (provider batches included).
        batched: Of ``sent``, answered through a provider's Batch API (``--batch``).
        batch_cost: Of ``cost``, spent on those (at the batch price).
        batch_failed: Batch lines that came back without an answer (an error status), each
            sent again (online or in a new batch) or counted in ``failed``.
        batch_expired: Batch lines the provider did not run (the batch expired or was
            cancelled), sent again the same way.
        earlier_cost: What this stage's answers served from the cache cost when an earlier run
            (or another run sharing the cache) received them: their stored tokens at this
            run's prices; each distinct request counted once.
        seconds: Wall time.
    """

    stage: str
    calls: int = 0
    cached: int = 0
    sent: int = 0
    failed: int = 0
    malformed: int = 0
    retried: int = 0
    unusable: int = 0
    structured: int = 0
    structure_ignored: int = 0
    structure_rejected: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    batched: int = 0
    batch_cost: float = 0.0
    batch_failed: int = 0
    batch_expired: int = 0
    earlier_cost: float = 0.0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict."""
        return dataclasses.asdict(self)

    @classmethod
    def total(cls, reports: Iterable[StageReport], name: str = "total") -> StageReport:
        """The sum of ``reports`` (every count, cost and time)."""
        out = cls(name)
        for report in reports:
            for f in dataclasses.fields(cls):
                if f.name != "stage":
                    setattr(out, f.name, getattr(out, f.name) + getattr(report, f.name))
        return out


@dataclass
class StageEstimate:
    """A dry-run estimate of one stage.

    Attributes:
        stage: Stage name.
        calls: Requests the stage will make (retries of malformed answers not yet seen are
            not included).
        cached: Of which already in the cache (free).
        prompt_tokens: Estimated prompt tokens of the calls to send.
        completion_tokens: Estimated completion tokens of the calls to send.
        cost: Estimated cost of the calls to send (0 for a backend that is not billable).
        batch_cost: The same calls sent through a provider's Batch API (``cost`` less the
            price table's ``batch_discount``).
        exact: Whether every prompt is known (earlier stages cached); otherwise prompts are
            estimated with placeholder answers.
        unpriced: Models without a price (counted at 0).
    """

    stage: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    batch_cost: float = 0.0
    exact: bool = True
    unpriced: tuple[str, ...] = ()

    @property
    def to_send(self) -> int:
        """Calls that would be sent."""
        return self.calls - self.cached

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict (``to_send`` included)."""
        return {**dataclasses.asdict(self), "to_send": self.to_send}

    @classmethod
    def total(cls, estimates: Iterable[StageEstimate], name: str = "total") -> StageEstimate:
        """The sum of ``estimates`` (exact only if all are; unpriced models merged)."""
        out = cls(name)
        for s in estimates:
            out.calls += s.calls
            out.cached += s.cached
            out.prompt_tokens += s.prompt_tokens
            out.completion_tokens += s.completion_tokens
            out.cost += s.cost
            out.batch_cost += s.batch_cost
            out.exact = out.exact and s.exact
            out.unpriced = tuple(sorted({*out.unpriced, *s.unpriced}))
        return out


class ProgressBar:
    """A tqdm progress bar on stderr that exists only once it is opened or first shown.

    Args:
        desc: The bar's label.
        unit: What it counts (``"call"``, ``"episode"``).
        enabled: Draw it (a disabled bar still counts, silently).
        options: More ``tqdm`` options (``smoothing``, ``mininterval``, ...).
    """

    def __init__(self, desc: str, unit: str, *, enabled: bool = True, **options: Any) -> None:
        self.desc = desc
        self.unit = unit
        self.enabled = enabled
        self.options = options
        self.bar: tqdm | None = None

    def open(self, total: int) -> None:
        """Make the bar now (``total`` steps)."""
        self.bar = tqdm(
            total=total,
            desc=self.desc,
            unit=self.unit,
            file=sys.stderr,
            disable=not self.enabled,
            dynamic_ncols=True,
            **self.options,
        )

    def grow(self, n: int) -> None:
        """Add ``n`` steps to the total."""
        if self.bar is not None and n:
            self.bar.total = (self.bar.total or 0) + n
            self.bar.refresh()

    def step(self, postfix: str) -> None:
        """One step, with ``postfix`` set first (so the refresh it may trigger shows it)."""
        if self.bar is not None:
            self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.update(1)

    def show(self, done: int, total: int, **postfix: Any) -> None:
        """``done`` of ``total`` steps (the bar is made at the first call)."""
        if self.bar is None:
            self.open(total)
        bar = self.bar
        assert bar is not None
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)
        if postfix:
            bar.set_postfix(**postfix, refresh=False)

    def close(self, postfix: str | None = None) -> None:
        """Close the bar (after a last ``postfix`` and refresh, if given)."""
        if self.bar is None:
            return
        if postfix is not None:
            self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.refresh()
        self.bar.close()
        self.bar = None


class Sender(Protocol):
    """Where a `StageEngine` sends its requests (`ClientSender`, `CacheSender`)."""

    def start(self, report: StageReport, total: int) -> None:
        """A stage of ``total`` calls begins."""
        ...

    def grow(self, n: int) -> None:
        """``n`` more calls than announced (retries of malformed replies)."""
        ...

    def finish(self, report: StageReport) -> None:
        """The stage is done."""
        ...

    async def send(
        self, report: StageReport, requests: Sequence[LLMRequest]
    ) -> list[LLMResponse | None]:
        """One response per request (None: not known, in a dry run)."""
        ...


def _postfix(report: StageReport) -> str:
    text = (
        f"hits={report.cached:,d} tok={report.prompt_tokens + report.completion_tokens:,d} "
        f"cost={report.cost:.4f}"
    )
    if report.failed:
        text += f" failed={report.failed:,d}"
    if report.malformed:
        text += f" malformed={report.malformed:,d}"
    return text


class ClientSender:
    """Sends through a client; counts each stage's calls, tokens and money; draws its bar.

    Args:
        client: Any `Completer`; with an `LLMClient` (``complete_many``, ``prices``) batches
            are sent concurrently and cache hits are priced (`StageReport.earlier_cost`).
        progress: Draw a progress bar per stage on stderr.
        batch: Send through the client's ``complete_many`` when it has one; otherwise (or
            with False) each request is one ``complete`` call, awaited in the calling task
            when it is alone (a conversation's turn).
        price_hits: Price cache hits (`StageReport.earlier_cost`; a model without a price
            warns once); off where nobody reads the reports.
    """

    dry = False

    def __init__(
        self,
        client: Completer,
        *,
        progress: bool = False,
        batch: bool = True,
        price_hits: bool = True,
    ) -> None:
        self.client = client
        self.progress = progress
        self.batch = batch
        self.bar: ProgressBar | None = None
        self._started = 0.0
        self._prices: PriceTable | None = getattr(client, "prices", None) if price_hits else None
        self._billable = bool(getattr(getattr(client, "backend", None), "billable", True))
        # 64-bit prefixes of the keys whose answer is already priced in this run (a request
        # asked twice is paid once: the second is a hit, or shares the first one's answer)
        self._priced: set[int] = set()

    def start(self, report: StageReport, total: int) -> None:
        """Start the stage's clock and bar."""
        self._started = time.perf_counter()
        self.bar = ProgressBar(
            f"{report.stage:9s}", "call", enabled=self.progress, smoothing=0.05, mininterval=0.2
        )
        self.bar.open(total)

    def grow(self, n: int) -> None:
        """More calls than announced."""
        if self.bar is not None:
            self.bar.grow(n)

    def finish(self, report: StageReport) -> None:
        """Add the stage's wall time to its report; close its bar."""
        report.seconds += time.perf_counter() - self._started
        if self.bar is not None:
            self.bar.close(_postfix(report))
            self.bar = None

    def close(self) -> None:
        """Close a bar left open (an interrupted stage)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _earlier_cost(self, response: LLMResponse) -> float:
        """The cost of a cache hit when it was received (0 if already priced in this run)."""
        mark = int(response.key[:16], 16)
        if mark in self._priced:
            return 0.0
        self._priced.add(mark)
        if not self._billable or self._prices is None:
            return 0.0
        usage = response.usage
        return self._prices.cost(
            response.request.model, usage.prompt_tokens, usage.completion_tokens
        )

    def _count(self, report: StageReport, response: LLMResponse) -> None:
        report.calls += 1
        if response.cached:
            report.cached += 1
            report.earlier_cost += self._earlier_cost(response)
        elif response.ok:
            self._priced.add(int(response.key[:16], 16))
            report.sent += 1
            report.prompt_tokens += response.usage.prompt_tokens
            report.completion_tokens += response.usage.completion_tokens
            report.cost += response.cost
        elif rejected(response):  # refused for its format: asked again one rung down
            report.structure_rejected += 1
        else:
            report.failed += 1
        if self.bar is not None:
            self.bar.step(_postfix(report))

    async def send(
        self, report: StageReport, requests: Sequence[LLMRequest]
    ) -> list[LLMResponse | None]:
        """Answers from the client (cache, concurrency, retries, budget, call log)."""

        def on_result(response: LLMResponse) -> None:
            self._count(report, response)

        many = getattr(self.client, "complete_many", None) if self.batch else None
        if many is not None:
            return list(await many(requests, on_result=on_result))

        async def one(request: LLMRequest) -> LLMResponse:
            response = await self.client.complete(request)
            on_result(response)
            return response

        if len(requests) == 1:
            return [await one(requests[0])]
        return list(await asyncio.gather(*(one(r) for r in requests)))


class CacheSender:
    """Answers from the cache only (nothing is sent); estimates what the rest would cost.

    Args:
        cache: The cache (None: nothing is cached).
        namespace: The cache namespace of the backend that would answer.
        prices: Price table.
        billable: Whether that backend costs money.
        completion: Role -> expected completion tokens of a call.
        endpoint: The endpoint that would answer (cached answers recorded from another endpoint
            do not count; None: any).
    """

    dry = True

    def __init__(
        self,
        cache: ResponseCache | None,
        namespace: str,
        prices: PriceTable,
        *,
        billable: bool,
        completion: Mapping[str, int],
        endpoint: str | None = None,
    ) -> None:
        self.cache = cache
        self.endpoint = endpoint
        self.namespace = namespace
        self.prices = prices
        self.billable = billable
        self.completion = completion
        self.estimates: dict[str, StageEstimate] = {}

    def estimate(self, stage: str) -> StageEstimate:
        """The estimate of ``stage`` so far."""
        return self.estimates.setdefault(stage, StageEstimate(stage))

    def start(self, report: StageReport, total: int) -> None:
        """Nothing to draw."""
        self.estimate(report.stage)

    def grow(self, n: int) -> None:
        """Nothing to draw."""

    def finish(self, report: StageReport) -> None:
        """Nothing to draw."""

    async def send(
        self, report: StageReport, requests: Sequence[LLMRequest]
    ) -> list[LLMResponse | None]:
        """Cache hits, None for the rest (whose tokens and cost are estimated)."""
        est = self.estimate(report.stage)
        out: list[LLMResponse | None] = []
        uncached = []
        for request in requests:
            hit = (
                self.cache.get(request, self.namespace, self.endpoint)
                if self.cache is not None
                else None
            )
            out.append(hit)
            if hit is None:
                uncached.append(request)
        estimate = estimate_cost(
            uncached, prices=self.prices, completion_tokens=lambda r: self.completion[r.role]
        )
        est.calls += len(requests)
        est.cached += len(requests) - len(uncached)
        est.prompt_tokens += estimate.prompt_tokens
        est.completion_tokens += estimate.completion_tokens
        if self.billable:
            est.cost += estimate.cost
            est.batch_cost += estimate.cost * (1.0 - self.prices.batch_discount)
            est.unpriced = tuple(sorted({*est.unpriced, *estimate.unpriced_models}))
        return out


__all__ = [
    "CacheSender",
    "ClientSender",
    "ProgressBar",
    "Sender",
    "StageEstimate",
    "StageReport",
]
