"""One stage engine for batches of LLM calls: ask, read, retry malformed replies, account.

A *stage* asks one call per item (a question to write, a pair to judge, an attribute to score)
and reads the reply. A `Stage` describes it with small functions:

* ``request(item, previous)``: the request for an item, given the malformed replies it got so
  far (empty on the first try; a retry changes the sample index or shows the bad reply back);
* ``parse(item, text)``: the value of a reply, or None when the reply is malformed;
* ``placeholder(item)``: the value of an item whose reply is not known yet (a dry run reads the
  cache only);
* ``fallback(item, replies)``: the value once every try was malformed (default `MALFORMED`);
* ``describe(item)``: fields naming the item in progress and error records;
* ``answer`` and ``structured``: the shape of the answer and the role's `StructuredMode`, to ask
  the endpoint for structured output (`prefduel.llm.structured`): the engine adds
  ``response_format`` to each request, unwraps a reply that follows the schema before
  ``parse`` reads it, lets ``parse`` read free text when the endpoint ignored the schema, and
  asks again without ``response_format`` when the endpoint refused it (per call); `Outcome.path`
  and the stage's report say which path answered;
* ``read(item, text, response)``: like ``parse`` with the whole response (e.g. its
  ``logprobs``), used instead of it when given.

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
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from prefduel.llm.concurrency import each
from prefduel.llm.request import Completer, LLMRequest, LLMResponse
from prefduel.llm.senders import (
    CacheSender,
    ClientSender,
    ProgressBar,
    Sender,
    StageEstimate,
    StageReport,
)
from prefduel.llm.structured import (
    PATH_IGNORED,
    PATH_REJECTED,
    PATH_SCHEMA,
    STRUCTURED_MODES,
    AnswerFormat,
    StructuredMode,
    fall_back,
    is_structured,
    rejected,
    structure,
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
        answer: The shape of the answer, for structured output (None: never structured).
        structured: How to ask for it (`StructuredMode`; ``"off"``: never).
        read: ``(item, reply text, response) -> value``: ``parse`` with the whole response
            (e.g. its ``logprobs``); used instead of ``parse`` when given.

    Raises:
        ValueError: ``tries`` < 1, or a ``structured`` mode the answer does not allow.
    """

    name: str
    request: Callable[[Item, tuple[str, ...]], LLMRequest]
    parse: Callable[[Item, str], Any] = _reply_text
    placeholder: Callable[[Item], Any] = _unknown
    fallback: Callable[[Item, tuple[str, ...]], Any] = _malformed
    describe: Callable[[Item], dict[str, Any]] = _item_name
    tries: int = 1
    answer: AnswerFormat | None = None
    structured: StructuredMode = "off"
    read: Callable[[Item, str, LLMResponse], Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.tries, bool) or not isinstance(self.tries, int) or self.tries < 1:
            raise ValueError(f"stage {self.name}: tries: expected an int >= 1, got {self.tries!r}")
        if self.structured not in STRUCTURED_MODES:
            raise ValueError(
                f"stage {self.name}: structured: expected one of {list(STRUCTURED_MODES)}, got "
                f"{self.structured!r}"
            )
        if self.answer is not None:
            self.answer.response_format(self.structured)  # ValueError: e.g. "choice" of prose

    def build(self, item: Item, previous: tuple[str, ...], *, rung: int = 0) -> LLMRequest:
        """The request for ``item``, with ``response_format`` as ``structured`` says, taken
        ``rung`` steps down (`fall_back`) after the endpoint refused the formats above it."""
        request = self.request(item, previous)
        if self.answer is None:
            return request
        request = structure(request, self.answer, self.structured)
        for _ in range(rung):
            request = fall_back(request)
        return request


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
        path: Which path answered the last request of a stage that asks for structured
            output (`prefduel.llm.structured.PATHS`: ``"schema"``, ``"ignored"``,
            ``"rejected"``); None when none was asked (or no reply is known).
        response: The last response (None in a dry run for an uncached call).
    """

    value: Any
    tries: int
    request: LLMRequest
    replies: tuple[str, ...] = ()
    error: str | None = None
    path: str | None = None
    response: LLMResponse | None = None

    @property
    def failed(self) -> bool:
        """Whether the call got no answer (re-run to retry it)."""
        return self.value is FAILED


@dataclass
class _Rungs:
    """How far down the format ladder (`fall_back`) each item of one stage run is asked.

    It is the endpoint, not the item, that refuses a format, so an item starts at the lowest
    rung any refusal of the run has reached: a server without structured output costs one
    refused call per rung, not per item (except for the items in flight at once).
    """

    floor: int = 0
    items: dict[int, int] = field(default_factory=dict)

    def of(self, item: int) -> int:
        """The rung to ask ``item`` at."""
        return max(self.items.get(item, 0), self.floor)

    def refused(self, item: int, rung: int) -> None:
        """The endpoint refused ``item``'s request at ``rung``."""
        self.items[item] = max(self.items.get(item, 0), rung + 1)
        self.floor = max(self.floor, rung + 1)


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
            ``sample`` and ``error``; ``kind`` (`LLMCallError` kind), ``status`` (HTTP) and
            ``permanent`` (re-sending cannot help, e.g. 401 or 404) when known.
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

    async def run(
        self, stage: Stage[Item], items: Sequence[Item], *, rungs: _Rungs | None = None
    ) -> list[Outcome]:
        """Ask every item; ask those with a malformed reply again, in waves, up to ``tries``.

        ``rungs`` carries what an earlier run learned about the formats the endpoint refuses
        (default: nothing yet).

        Returns:
            One `Outcome` per item, in item order.
        """
        report = self.report(stage.name)
        outcomes: list[Outcome | None] = [None] * len(items)
        replies: list[tuple[str, ...]] = [()] * len(items)
        rungs = rungs if rungs is not None else _Rungs()
        pending = list(range(len(items)))
        for attempt in range(stage.tries):
            if not pending:
                break
            if attempt:
                report.retried += len(pending)
                self.sender.grow(len(pending))
            again = []
            for chunk in self._chunks(stage, pending, probe=attempt == 0):
                for i, outcome in await self._ask(stage, report, items, chunk, replies, rungs):
                    if isinstance(outcome, str):  # malformed, tries left: ask again
                        replies[i] = (*replies[i], outcome)
                        again.append(i)
                    else:
                        outcomes[i] = outcome
            pending = again
        done = [o for o in outcomes if o is not None]
        assert len(done) == len(items), "every item ends with an outcome on its last try"
        return done

    def _chunks(self, stage: Stage[Item], pending: list[int], *, probe: bool) -> list[list[int]]:
        """``pending`` in chunks; with ``probe``, a structured stage asks its first item alone
        first, so the formats the endpoint refuses are known before the rest are sent."""
        head: list[list[int]] = []
        if probe and pending and stage.answer is not None:
            if stage.answer.response_format(stage.structured) is not None:
                head, pending = [pending[:1]], pending[1:]
        return head + [
            pending[start : start + self.chunk] for start in range(0, len(pending), self.chunk)
        ]

    async def _ask(
        self,
        stage: Stage[Item],
        report: StageReport,
        items: Sequence[Item],
        chunk: list[int],
        replies: list[tuple[str, ...]],
        rungs: _Rungs,
    ) -> list[tuple[int, Outcome | str]]:
        """One request per item of ``chunk``; the items whose structured request the endpoint
        refused are asked again at once one rung down (`fall_back`), until one is taken or no
        ``response_format`` is left."""
        read: list[tuple[int, Outcome | str]] = []
        asking = list(chunk)
        while asking:
            asked = {i: rungs.of(i) for i in asking}
            requests = [stage.build(items[i], replies[i], rung=asked[i]) for i in asking]
            responses = await self.sender.send(report, requests)
            refused = []
            for i, request, response in zip(asking, requests, responses, strict=True):
                if response is not None and rejected(response):  # counted by the sender
                    refused.append(i)
                    rungs.refused(i, asked[i])
                else:
                    outcome = self._read(
                        stage, report, items[i], request, response, replies[i], asked[i] > 0
                    )
                    read.append((i, outcome))
            if refused:
                self.sender.grow(len(refused))
            asking = refused
        return read

    def _fail(
        self, stage: Stage[Item], item: Item, request: LLMRequest, response: LLMResponse
    ) -> None:
        """Record a call without an answer."""
        record = {
            "stage": stage.name,
            **stage.describe(item),
            "sample": request.sample,
            "error": response.error or "failed",
        }
        if response.error_kind is not None:
            record["kind"] = response.error_kind
        if response.status is not None:
            record["status"] = response.status
        if response.retryable is False:
            record["permanent"] = True
        self.failures.append(record)

    def _value(
        self,
        stage: Stage[Item],
        report: StageReport,
        item: Item,
        response: LLMResponse,
        plain: bool,
    ) -> tuple[Any, str | None]:
        """The parsed value of an answer (None: malformed) and the path that answered."""
        text = response.text or ""
        path = None
        if stage.answer is not None and is_structured(response.request):
            text, followed = stage.answer.unwrap(text)
            path = PATH_SCHEMA if followed else PATH_IGNORED
            if followed:
                report.structured += 1
            else:
                report.structure_ignored += 1
        elif plain:
            path = PATH_REJECTED
        if stage.read is not None:
            return stage.read(item, text, response), path
        return stage.parse(item, text), path

    def _read(
        self,
        stage: Stage[Item],
        report: StageReport,
        item: Item,
        request: LLMRequest,
        response: LLMResponse | None,
        previous: tuple[str, ...],
        plain: bool = False,
    ) -> Outcome | str:
        """The outcome of one reply, or the reply's text to ask again (malformed, tries left);
        ``plain``: a structured request of the item was refused."""
        tries = len(previous) + 1
        if response is None:
            return Outcome(stage.placeholder(item), tries, request, previous)
        if not response.ok:
            self._fail(stage, item, request, response)
            return Outcome(FAILED, tries, request, previous, response.error, response=response)
        value, path = self._value(stage, report, item, response, plain)
        if value is not None:
            return Outcome(value, tries, request, previous, path=path, response=response)
        text = response.text or ""
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
        return Outcome(
            stage.fallback(item, replies), tries, request, replies, path=path, response=response
        )


async def ask(stage: Stage[Item], item: Item, client: Completer) -> Outcome:
    """Run one item of ``stage`` through ``client`` (malformed replies asked again).

    For flows whose next request needs this reply (a conversation); a batch of independent
    items goes through `StageEngine.run`. A structured stage learns once per client which
    formats its endpoint refuses: the first call probes while the others wait, later calls
    start at the rung it reached.
    """
    learned = _learned(client, stage.name)
    if learned.settled or stage.answer is None or stage.structured == "off":
        return await _ask_one(stage, item, client, learned)
    lock = learned.locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
    async with lock:
        if not learned.settled:
            outcome = await _ask_one(stage, item, client, learned)
            learned.settled = outcome.response is not None and not rejected(outcome.response)
            return outcome
    return await _ask_one(stage, item, client, learned)


async def _ask_one(stage: Stage[Item], item: Item, client: Completer, learned: _Learned) -> Outcome:
    sender = ClientSender(client, batch=False, price_hits=False)
    rungs = _Rungs(floor=learned.floor)
    (outcome,) = await StageEngine(sender).run(stage, [item], rungs=rungs)
    learned.floor = max(learned.floor, rungs.floor)
    return outcome


@dataclass
class _Learned:
    """What `ask` learned of one endpoint's refusals for one stage: the rung they reached,
    whether a call has settled it, and the lock (per event loop) of the probing call."""

    floor: int = 0
    settled: bool = False
    locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary
    )


#: What each client learned, per stage; it lives as long as the client (one run), so an
#: endpoint restarted with other settings between two runs of one process is probed afresh.
_BY_CLIENT: weakref.WeakKeyDictionary[Any, dict[str, _Learned]] = weakref.WeakKeyDictionary()


def _learned(client: Completer, stage: str) -> _Learned:
    """What was learned for ``stage`` on ``client``."""
    return _BY_CLIENT.setdefault(client, {}).setdefault(stage, _Learned())


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
