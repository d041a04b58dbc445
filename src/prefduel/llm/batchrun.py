"""Batch mode of the stage engine: cache misses sent as provider batches, resumable at any kill.

`BatchSender` is a sender of the stage engine (`prefduel.llm.stages`), like `ClientSender`,
whose cache misses go to the provider's Batch API (`prefduel.llm.batchapi`) instead of one
online call each. There is one engine: requests, parsing, retries of malformed replies and
accounting are the same; only how a miss is answered differs. For each wave of a stage (up to
`BatchSettings.wave` requests) it

1. serves cache hits (answers of earlier runs, online or batch: the cache keys are the same);
2. claims the batches the state file lists for the missing requests (a run killed while they
   ran), or packs the rest into input files within the provider's limits, uploads them and
   starts one batch per file;
3. polls the batches every `BatchSettings.poll` seconds until they end, downloads their output
   and error files, and commits each answer to the cache (priced at the batch price:
   `PriceTable.batch_cost`) before anything else happens;
4. sends the lines that failed or expired again (`BatchSettings.retry`: ``online``, or in a new
   batch up to `BatchSettings.rounds` batches); what still has no answer is a failed call, which
   a re-run sends again.

The state file (`prefduel.llm.batchstate.BatchState`: ``batches.json`` in the run folder, each
batch's request keys in ``batches/NAME.keys``) is rewritten atomically at each step: before the
upload (keys), after it (file id), after the batch starts (batch id), at each status change,
and when its lines are committed (the batch leaves the file). A run killed at any moment
therefore resumes without paying a request twice: a batch not uploaded yet is sent anew
(nothing ran); one uploaded but not recorded as started is looked up by its input file
(``batches.list``) and started only if the provider has no batch of it; one started is polled;
one finished is downloaded again (the provider keeps its files); answers already committed are
cache hits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from prefduel.llm.batchapi import (
    BatchAPI,
    BatchInfo,
    failure,
    pack,
    read_results,
)
from prefduel.llm.batchstate import BatchSettings, BatchState, BatchTotals
from prefduel.llm.calllog import utc_now
from prefduel.llm.client import LLMClient
from prefduel.llm.errors import LLMConfigError
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.request import LLMRequest, LLMResponse
from prefduel.llm.senders import ClientSender, StageReport


class BatchSender(ClientSender):
    """Answers a stage's cache misses through a provider's Batch API (see the module
    docstring); counts, bars and cache hits as `ClientSender`.

    Args:
        client: The client (its cache, prices, budget, call log; its backend must be an
            `OpenAIBackend`).
        state: The run folder's batch state.
        settings: Limits, polling and retries.
        progress: Draw a progress bar per stage.
        api: The Batch API client (default: through the client's backend).
        sleep: ``await sleep(seconds)`` between polls.

    Raises:
        LLMConfigError: The client's backend is not an OpenAI-compatible endpoint.
    """

    def __init__(
        self,
        client: LLMClient,
        state: BatchState,
        settings: BatchSettings,
        *,
        progress: bool = False,
        api: BatchAPI | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if not isinstance(client.backend, OpenAIBackend):
            raise LLMConfigError(
                "batch mode needs an OpenAI-compatible endpoint with a Batch API (backend "
                f"openai), not the {client.namespace} backend"
            )
        super().__init__(client, progress=progress)
        self.llm = client
        self.backend = client.backend
        self.state = state
        self.settings = settings
        self.api = api or BatchAPI(client.backend, retry=client.retry)
        self.chunk = settings.wave
        self.totals = BatchTotals(state=str(state.path))
        self.spent = 0.0
        self._sleep = sleep
        self._wave: set[str] = set()

    async def send(
        self, report: StageReport, requests: Sequence[LLMRequest]
    ) -> list[LLMResponse | None]:
        """Cache hits, then the misses through batches; one response per request."""
        out: list[LLMResponse | None] = []
        wanted: dict[str, LLMRequest] = {}
        for request in requests:
            hit = self._hit(request)
            out.append(hit)
            if hit is None:
                wanted.setdefault(request.key, request)
        records = self._claim(wanted, {r.key for r in requests})
        batched: set[str] = set()
        answers = await self._answer(report, wanted, records, batched) if wanted else {}
        seen: set[str] = set()
        for i, request in enumerate(requests):
            response = out[i]
            if response is None:
                response = replace(answers[request.key], request=request)
                if request.key in seen and response.ok:  # asked twice in a wave: paid once
                    response = replace(response, cached=True, cost=0.0, attempts=0)
                elif response.ok and request.key in batched:
                    report.batched += 1
                    report.batch_cost += response.cost
                seen.add(request.key)
                out[i] = response
            self._count(report, response)
        return out

    def _hit(self, request: LLMRequest) -> LLMResponse | None:
        cache = self.llm.cache
        if cache is None:
            return None
        return cache.get(request, self.llm.namespace, self.llm.endpoint)

    def _claim(self, pending: Mapping[str, LLMRequest], wave: set[str]) -> list[dict[str, Any]]:
        """The batches of the state holding missing requests of this wave (collected, not
        sent again). A batch recorded before its upload finished never ran, and one whose
        requests are all cached now was committed before a kill: both are forgotten."""
        claimed = []
        for record in list(self.state.batches.values()):
            keys = self.state.keys(record["name"])
            if not any(k in pending for k in keys):
                if keys and all(k in wave for k in keys):
                    self.state.drop(record, status="committed")
                continue
            if record["input_file_id"] is None:
                self.state.drop(record)
                continue
            claimed.append(record)
            self.totals.resumed += 1
        self._wave = wave
        return claimed

    async def _answer(
        self,
        report: StageReport,
        wanted: dict[str, LLMRequest],
        claimed: list[dict[str, Any]],
        batched: set[str],
    ) -> dict[str, LLMResponse]:
        """The response of each missing request: the ``claimed`` batches and new ones, then
        the retries of lines without an answer."""
        results: dict[str, LLMResponse] = {}
        online: dict[str, LLMRequest] = {}
        pending = dict(wanted)
        rounds = self.settings.rounds if self.settings.retry == "batch" else 1
        for round_ in range(rounds):
            if not pending:
                break
            if round_:
                self.totals.retried_batch += len(pending)
            records = claimed if round_ == 0 else []
            running = {k for r in records for k in self.state.keys(r["name"])}
            fresh = [r for k, r in pending.items() if k not in running]
            if fresh and self._over_budget():
                results.update(self._budget_failures(fresh))
                fresh = []
            made, too_big = await self._submit(report.stage, fresh, round_)
            results.update(too_big)
            online.update({k: pending[k] for k in too_big})  # cannot be batched: online
            got = await self._collect([*records, *made], pending, report)
            results.update(got)
            batched.update(k for k, r in got.items() if r.ok)
            pending = {k: pending[k] for k, r in got.items() if not r.ok and r.retryable}
        if self.settings.retry == "online":
            online.update(pending)
        if online:
            self.totals.retried_online += len(online)
            for response in await self.llm.complete_many(list(online.values())):
                results[response.key] = response
        return results

    def _over_budget(self) -> bool:
        budget = self.llm.budget
        return budget is not None and self.llm.stats().cost + self.spent >= budget

    def _budget_failures(self, requests: list[LLMRequest]) -> dict[str, LLMResponse]:
        spent = self.llm.stats().cost + self.spent
        error = (
            f"budget of {self.llm.budget:g} {self.llm.prices.currency} reached ({spent:.4f} "
            "spent); not sent"
        )
        return {r.key: failure(r, error, kind="budget", retryable=True) for r in requests}

    async def _submit(
        self, stage: str, requests: list[LLMRequest], round_: int
    ) -> tuple[list[dict[str, Any]], dict[str, LLMResponse]]:
        """Upload ``requests`` in files within the limits and start a batch of each; the
        records, and the failures of requests too large for a file."""
        s = self.settings
        records, refused = [], {}
        for group, data in pack(requests, s.max_requests, s.max_bytes):
            if data is None:
                error = f"the request is larger than the batch file limit ({s.max_bytes} bytes)"
                refused[group[0].key] = failure(group[0], error, kind="batch", retryable=False)
                continue
            record = self.state.add(stage, round_, [r.key for r in group], len(data))
            file_id = await self.api.upload(data, f"{record['name']}.jsonl")
            self.state.update(record, input_file_id=file_id, status="uploaded")
            await self._start(record, look=False)
            records.append(record)
        return records, refused

    async def _start(self, record: dict[str, Any], *, look: bool) -> None:
        """Start the batch of an uploaded file; with ``look``, unless the provider already
        has one of it (a run killed between starting it and recording its id)."""
        info = await self.api.find(record["input_file_id"]) if look else None
        if info is None:
            info = await self.api.create(record["input_file_id"], {"prefduel": record["name"]})
            self.totals.started += 1
        self.state.update(record, id=info.id, status=info.status)

    async def _wait(self, record: dict[str, Any]) -> BatchInfo:
        """Poll a batch until it ends."""
        if record.get("id") is None:  # uploaded by a killed run, maybe started
            await self._start(record, look=True)
        while True:
            info = await self.api.retrieve(record["id"])
            if info.status != record["status"]:
                self.state.update(record, status=info.status)
            if info.final:
                return info
            self._show(record, info)
            await self._sleep(self.settings.poll)

    def _show(self, record: dict[str, Any], info: BatchInfo) -> None:
        bar = self.bar.bar if self.bar is not None else None
        if bar is not None:
            done = f"{info.completed + info.failed:,d}/{info.total:,d}" if info.total else ""
            bar.set_postfix_str(f"batch {record['name']} {info.status} {done}".rstrip())

    async def _collect(
        self,
        records: list[dict[str, Any]],
        pending: Mapping[str, LLMRequest],
        report: StageReport,
    ) -> dict[str, LLMResponse]:
        """Wait for ``records``; commit their answers; the response of each pending key."""
        infos = await asyncio.gather(*(self._wait(r) for r in records))
        got: dict[str, LLMResponse] = {}
        for record, info in zip(records, infos, strict=True):
            keys = self.state.keys(record["name"])
            asked = {k: pending[k] for k in keys if k in pending}
            found: dict[str, LLMResponse] = {}
            for file_id in (info.output_file_id, info.error_file_id):
                if file_id:
                    data = await self.api.content(file_id)
                    found.update(read_results(data, asked, self.backend, info.id))
            for key in asked.keys() - found.keys():  # a failed or cancelled batch: no line
                found[key] = _unrun(asked[key], info)
            counts = {"answered": 0, "failed": 0, "expired": 0}
            for key, response in found.items():
                if response.ok:
                    response = self._commit(response, info.id)
                    counts["answered"] += 1
                elif response.error_kind == "expired":
                    counts["expired"] += 1
                else:
                    counts["failed"] += 1
                got[key] = response
            report.batch_failed += counts["failed"]
            report.batch_expired += counts["expired"]
            if all(k in self._wave for k in keys):  # every line committed or handed on
                self.state.drop(record, status=info.status, **counts)
        return got

    def _commit(self, response: LLMResponse, batch_id: str) -> LLMResponse:
        """Price an answer at the batch price and store it in the cache, first thing."""
        request, usage = response.request, response.usage
        cost = (
            self.llm.prices.batch_cost(request.model, usage.prompt_tokens, usage.completion_tokens)
            if self.backend.billable
            else 0.0
        )
        response = replace(response, cost=cost, cached=False, attempts=1)
        try:
            if self.llm.cache is not None:
                self.llm.cache.put(response, self.llm.namespace, self.llm.endpoint)
        finally:  # a paid answer is counted and logged even if the cache cannot take it
            self.spent += cost
            if self.llm.call_log is not None:
                self.llm.call_log.write(
                    {
                        "time": utc_now(),
                        "status": "ok",
                        "role": request.role,
                        "model": request.model,
                        "sample": request.sample,
                        "key": request.key,
                        "namespace": self.llm.namespace,
                        "attempt": 1,
                        "cached": False,
                        "prompt_tokens": usage.prompt_tokens,
                        "completion_tokens": usage.completion_tokens,
                        "cost": cost,
                        "batch": batch_id,
                    }
                )
        return response


def _unrun(request: LLMRequest, info: BatchInfo) -> LLMResponse:
    """The response of a request a finished batch has no line for."""
    why = f": {info.errors}" if info.errors else ""
    if info.status == "failed":  # the provider refused the file: sending it again cannot help
        return failure(request, f"batch {info.id} failed{why}", kind="batch", retryable=False)
    return failure(request, f"batch {info.id} {info.status}{why}", kind="expired", retryable=True)


__all__ = ["BatchSender", "BatchSettings", "BatchState", "BatchTotals"]
