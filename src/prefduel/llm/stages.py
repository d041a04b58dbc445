"""One stage engine for batches of LLM calls: ask, read, retry malformed replies, account.

A *stage* asks one call per item (a question to write, a pair to judge, an attribute to score)
and reads the reply. A `Stage` describes it with small functions:

* ``request(item, previous)``: the request for an item, given the malformed replies it got so
  far (empty on the first try; a retry changes the sample index or shows the bad reply back);
* ``parse(item, text)``: the value of a reply, or None when the reply is malformed;
* ``placeholder(item)``: the value of an item whose reply is not known yet (a dry run reads the
  cache only);
* ``fallback(item, replies)``: the value once every try was malformed (default `MALFORMED`);
* ``describe(item)``: fields naming the item in progress and error records.

`StageEngine` runs stages and does the rest in one place, through a sender
(`prefduel.llm.senders`, importable from here too):

* `ClientSender` sends through an LLM client (any `Completer`; an
  `LLMClient` brings the cache, bounded concurrency, retries, the budget stop and
  the call log), keeps each stage's `StageReport` (calls answered, cached, failed, tokens,
  money spent in this run, and what the cached answers cost when an earlier run received them),
  and moves a tqdm progress bar per stage on stderr (`ProgressBar`);
* `CacheSender` answers from the cache only and estimates what the rest would cost
  (`StageEstimate`: dry runs, nothing is sent and no API key is needed);
* `StageEngine.run` asks a batch of items (`CHUNK` requests at a time), asks the items with a
  malformed reply again in waves up to the stage's ``tries``, and records every malformed reply
  (`StageEngine.malformed`) and every call without an answer (`StageEngine.failures`);
* `ask` runs one item through a client, for flows that need each reply before the next request
  (a conversation); `each` works on items concurrently under a bound, with progress.

Resume comes from the client's cache: requests are pure functions of the item and the replies
before them, so a re-run builds the same requests, every reply received before (by a run that
was stopped by the budget, failed, interrupted or killed) is served from the cache, and only the
missing calls are sent. A call that fails is recorded, never raised: its item's value is
`FAILED`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from prefduel.llm.request import Completer, LLMRequest, LLMResponse
from prefduel.llm.senders import (
    CacheSender,
    ClientSender,
    ProgressBar,
    Sender,
    StageEstimate,
    StageReport,
)

#: Requests handed to the client at once (bounds memory for millions of calls).
CHUNK = 4096

Item = TypeVar("Item")


class _Marker:
    """A named value that equals only itself."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The value of an item whose call failed (after the client's retries, or over the budget).
FAILED: Any = _Marker("FAILED")
#: The default value of an item whose every reply was malformed.
MALFORMED: Any = _Marker("MALFORMED")


def _reply_text(item: Any, text: str) -> str:
    return text


def _unknown(item: Any) -> None:
    return None


def _malformed(item: Any, replies: tuple[str, ...]) -> Any:
    return MALFORMED


def _item_name(item: Any) -> dict[str, Any]:
    return {"item": str(item)}


@dataclass(frozen=True)
class Stage(Generic[Item]):
    """How one stage asks for, reads and names its items.

    Attributes:
        name: Stage name (reports, progress bars, records).
        request: ``(item, previous malformed replies) -> LLMRequest``; must be a pure function
            of its arguments (the same request on a re-run is what makes it resumable).
        parse: ``(item, reply text) -> value``, None when the reply is malformed (default: the
            text, so every reply is usable).
        placeholder: ``item -> value`` of an item whose reply is not known (a dry run's
            uncached calls; default None).
        fallback: ``(item, malformed replies) -> value`` once all ``tries`` were malformed
            (default `MALFORMED`).
        describe: ``item -> fields`` naming it in the malformed and failure records (default
            ``{"item": str(item)}``).
        tries: Requests per item at most (the first included) while replies are malformed.

    Raises:
        ValueError: ``tries`` < 1.
    """

    name: str
    request: Callable[[Item, tuple[str, ...]], LLMRequest]
    parse: Callable[[Item, str], Any] = _reply_text
    placeholder: Callable[[Item], Any] = _unknown
    fallback: Callable[[Item, tuple[str, ...]], Any] = _malformed
    describe: Callable[[Item], dict[str, Any]] = _item_name
    tries: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.tries, bool) or not isinstance(self.tries, int) or self.tries < 1:
            raise ValueError(f"stage {self.name}: tries: expected an int >= 1, got {self.tries!r}")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a stage got for one item.

    Attributes:
        value: The parsed reply; the stage's ``fallback`` when every try was malformed, its
            ``placeholder`` when the reply is not known (dry run), `FAILED` when the call failed.
        tries: Requests made for the item.
        request: The last request made.
        replies: The malformed replies, in order.
        error: Why the call failed (`FAILED` only).
    """

    value: Any
    tries: int
    request: LLMRequest
    replies: tuple[str, ...] = ()
    error: str | None = None

    @property
    def failed(self) -> bool:
        """Whether the call got no answer (re-run to retry it)."""
        return self.value is FAILED


class StageEngine:
    """Runs stages through a sender; keeps their reports and the malformed and failure records.

    Args:
        sender: A `ClientSender` (live) or `CacheSender` (dry run).
        chunk: Requests handed to the sender at once.

    Attributes:
        reports: Stage name -> `StageReport`, in the order the stages were first named.
        malformed: One record per malformed reply: ``stage``, the ``describe`` fields,
            ``sample``, ``try`` (0 for the first request) and ``text`` (first 500 characters).
        failures: One record per call without an answer: ``stage``, the ``describe`` fields,
            ``sample`` and ``error``.
    """

    def __init__(self, sender: Sender, *, chunk: int = CHUNK) -> None:
        self.sender = sender
        self.chunk = chunk
        self.reports: dict[str, StageReport] = {}
        self.malformed: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []

    def report(self, stage: str) -> StageReport:
        """The report of ``stage`` (made empty the first time)."""
        return self.reports.setdefault(stage, StageReport(stage))

    def start(self, stage: str, total: int) -> None:
        """Begin ``stage`` with ``total`` calls announced (its clock and progress bar)."""
        self.sender.start(self.report(stage), total)

    def finish(self, stage: str) -> None:
        """End ``stage`` (its wall time; its bar closed)."""
        self.sender.finish(self.report(stage))

    async def run(self, stage: Stage[Item], items: Sequence[Item]) -> list[Outcome]:
        """Ask every item; ask those with a malformed reply again, in waves, up to ``tries``.

        Returns:
            One `Outcome` per item, in item order.
        """
        report = self.report(stage.name)
        outcomes: list[Outcome | None] = [None] * len(items)
        replies: list[tuple[str, ...]] = [()] * len(items)
        pending = list(range(len(items)))
        for attempt in range(stage.tries):
            if not pending:
                break
            if attempt:
                report.retried += len(pending)
                self.sender.grow(len(pending))
            again = []
            for start in range(0, len(pending), self.chunk):
                chunk = pending[start : start + self.chunk]
                requests = [stage.request(items[i], replies[i]) for i in chunk]
                responses = await self.sender.send(report, requests)
                for i, request, response in zip(chunk, requests, responses, strict=True):
                    outcome = self._read(stage, report, items[i], request, response, replies[i])
                    if isinstance(outcome, str):  # malformed, tries left: ask again
                        replies[i] = (*replies[i], outcome)
                        again.append(i)
                    else:
                        outcomes[i] = outcome
            pending = again
        done = [o for o in outcomes if o is not None]
        assert len(done) == len(items), "every item ends with an outcome on its last try"
        return done

    def _read(
        self,
        stage: Stage[Item],
        report: StageReport,
        item: Item,
        request: LLMRequest,
        response: LLMResponse | None,
        previous: tuple[str, ...],
    ) -> Outcome | str:
        """The outcome of one reply, or the reply's text to ask again (malformed, tries left)."""
        tries = len(previous) + 1
        if response is None:
            return Outcome(stage.placeholder(item), tries, request, previous)
        if not response.ok:
            self.failures.append(
                {
                    "stage": stage.name,
                    **stage.describe(item),
                    "sample": request.sample,
                    "error": response.error or "failed",
                }
            )
            return Outcome(FAILED, tries, request, previous, response.error)
        text = response.text or ""
        value = stage.parse(item, text)
        if value is not None:
            return Outcome(value, tries, request, previous)
        report.malformed += 1
        self.malformed.append(
            {
                "stage": stage.name,
                **stage.describe(item),
                "sample": request.sample,
                "try": len(previous),
                "text": text[:500],
            }
        )
        if tries < stage.tries:
            return text
        report.unusable += 1
        replies = (*previous, text)
        return Outcome(stage.fallback(item, replies), tries, request, replies)


async def ask(stage: Stage[Item], item: Item, client: Completer) -> Outcome:
    """Run one item of ``stage`` through ``client`` (malformed replies asked again).

    For flows whose next request needs this reply (a conversation); a batch of independent
    items goes through `StageEngine.run`.
    """
    sender = ClientSender(client, batch=False, price_hits=False)
    (outcome,) = await StageEngine(sender).run(stage, [item])
    return outcome


async def each(
    items: Sequence[Item],
    work: Callable[[Item], Awaitable[None]],
    *,
    in_flight: int,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Work on ``items`` concurrently, at most ``in_flight`` at once.

    Args:
        items: The items.
        work: The work on one item (its own failures are its business).
        in_flight: Items worked on at once (calls are further limited by the client).
        progress: Called with ``(done, total)`` after each item.
    """
    gate = asyncio.Semaphore(in_flight)
    done = 0

    async def one(item: Item) -> None:
        nonlocal done
        async with gate:
            await work(item)
            done += 1
            if progress is not None:
                progress(done, len(items))

    await asyncio.gather(*(one(item) for item in items))


__all__ = [
    "CHUNK",
    "FAILED",
    "MALFORMED",
    "CacheSender",
    "ClientSender",
    "Outcome",
    "ProgressBar",
    "Sender",
    "Stage",
    "StageEngine",
    "StageEstimate",
    "StageReport",
    "ask",
    "each",
]
