"""The client: cache, bounded concurrency, retries, cost accounting and the call log.

`LLMClient` wraps a `Backend` and answers requests::

    backend = OpenAIBackend(base_url="http://localhost:8000/v1", api_key_env="MY_KEY")
    with LLMClient(backend, cache="run/llm-cache.sqlite", call_log="run/calls.jsonl",
                   max_connections=32) as client:
        responses = client.run(requests)            # sync; or: await client.complete_many(...)
    failed = [r for r in responses if not r.ok]     # recorded, not raised: re-run to retry them

For each request: a cache hit returns at once (cost 0, nothing sent); otherwise the request is
sent under a semaphore of ``max_connections`` slots (released while backing off), retried per the
`RetryPolicy`, and the answer is stored in the cache before it is
returned. A call that exhausts its attempts (or fails permanently) returns a response with
``ok=False`` and its ``error``; nothing is cached for it, so running the same batch again sends
exactly the calls without an answer (resume). Identical requests in flight at the same time are
sent once.

Resume guarantee: each answer is committed to the cache (one SQLite transaction, which
survives a killed process) in the event-loop step in which the backend returns it, before its
call-log line and before anything is awaited, so no other task runs in between (also with
``attempt_timeout``, a deadline on the calling task). A kill (SIGKILL, Ctrl-C, SIGTERM) at any
moment therefore loses at most the replies in flight at that moment, at most
``max_connections``: requests sent whose reply the backend had not returned yet, and at most one
returned reply whose commit the kill interrupted. Only those are sent, and paid, again on resume
(the endpoint may have billed them already); every other reply received is served from the
cache.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any, TypeVar

from prefduel.llm.cache import ResponseCache
from prefduel.llm.calllog import CallLog, utc_now
from prefduel.llm.clientstats import ClientStats
from prefduel.llm.errors import LLMCallError, RequestError
from prefduel.llm.estimate import CostEstimate, estimate_cost
from prefduel.llm.loops import LoopState, run_sync
from prefduel.llm.prices import PriceTable, load_prices
from prefduel.llm.request import Backend, LLMRequest, LLMResponse
from prefduel.llm.retry import RetryPolicy

T = TypeVar("T")
ResultCallback = Callable[[LLMResponse], None]


class LLMClient:
    """Answers requests through a backend, with cache, concurrency limit, retries and costs.

    Args:
        backend: The backend (`OpenAIBackend`,
            `ScriptedBackend`, or your own).
        cache: A `ResponseCache` or a path to one; None
            disables caching (and resume).
        max_connections: Attempts in flight at once (an asyncio semaphore).
        retry: The retry policy (default `RetryPolicy()`).
        prices: Price table (default `load_prices()`).
        call_log: A `CallLog` or a path to one; None: no log.
        budget: Stop sending new attempts once this much was spent (in the price table's
            currency); the requests not sent fail with ``error="budget ..."`` and are sent by a
            later run. In-flight attempts may overshoot by up to ``max_connections`` calls.
        attempt_timeout: Seconds before an attempt is abandoned as a timeout (None: rely on
            the backend's own timeout).
        log_hits: Write a call-log line for each cache hit.
        sleep: ``await sleep(seconds)`` used for backoff (inject a fake one in tests).
        clock: Monotonic clock for latencies.

    Raises:
        ValueError: ``max_connections`` < 1 or ``budget`` < 0.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | str | os.PathLike[str] | None = None,
        max_connections: int = 16,
        retry: RetryPolicy | None = None,
        prices: PriceTable | None = None,
        call_log: CallLog | str | os.PathLike[str] | None = None,
        budget: float | None = None,
        attempt_timeout: float | None = None,
        log_hits: bool = True,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections: expected an int >= 1, got {max_connections!r}")
        if budget is not None and not budget >= 0:
            raise ValueError(f"budget: expected >= 0 or None, got {budget!r}")
        self.backend = backend
        self.cache = (
            cache if cache is None or isinstance(cache, ResponseCache) else (ResponseCache(cache))
        )
        self._owns_cache = cache is not None and not isinstance(cache, ResponseCache)
        self.max_connections = max_connections
        self.retry = retry or RetryPolicy()
        self.prices = prices if prices is not None else load_prices()
        self.call_log = (
            call_log if call_log is None or isinstance(call_log, CallLog) else CallLog(call_log)
        )
        self.budget = budget
        self.attempt_timeout = attempt_timeout
        self.log_hits = log_hits
        self._sleep = sleep
        self._clock = clock
        self._stats = ClientStats(started=time.monotonic())
        self._loop_states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopState] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        cache = str(self.cache.path) if self.cache is not None else None
        return (
            f"LLMClient(backend={self.backend!r}, cache={cache!r}, "
            f"max_connections={self.max_connections})"
        )

    @property
    def namespace(self) -> str:
        """The backend's cache namespace."""
        return self.backend.namespace

    @property
    def endpoint(self) -> str | None:
        """The endpoint the backend sends to (its ``endpoint``: a base URL without
        credentials), recorded with each cached answer; None for a backend without one."""
        endpoint = getattr(self.backend, "endpoint", None)
        return endpoint if isinstance(endpoint, str) and endpoint else None

    def stats(self) -> ClientStats:
        """A snapshot of the running totals."""
        return replace(self._stats)

    # -- async API -------------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer one request (cache, then the backend with retries).

        Never raises for a failed call: the response has ``ok=False`` and ``error``.

        Raises:
            RequestError: ``request`` is not an `LLMRequest`.
        """
        if not isinstance(request, LLMRequest):
            raise RequestError(f"expected an LLMRequest, got {type(request).__name__}")
        hit = self._lookup(request)
        if hit is not None:
            return hit
        state = self._state()
        key = request.key
        while (pending := state.inflight.get(key)) is not None:
            try:
                response = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if pending.cancelled():
                    continue  # the sender was cancelled: send it ourselves
                raise
            self._stats.requests += 1
            if response.ok:
                self._stats.hits += 1
                return replace(response, request=request, cached=True, cost=0.0, attempts=0)
            self._stats.failed += 1
            return replace(response, request=request)
        future: asyncio.Future[LLMResponse] = state.loop.create_future()
        state.inflight[key] = future
        try:
            response = await self._call(request, state)
        except BaseException:
            future.cancel()
            raise
        else:
            future.set_result(response)
            return response
        finally:
            del state.inflight[key]

    async def complete_many(
        self,
        requests: Iterable[LLMRequest],
        *,
        on_result: ResultCallback | None = None,
        window: int | None = None,
    ) -> list[LLMResponse]:
        """Answer many requests concurrently; responses in request order.

        Args:
            requests: The requests.
            on_result: Called with each response as it completes (e.g. to move a progress bar).
            window: Requests being worked on at once (default ``max(64, 4 * max_connections)``;
                bounds memory for millions of requests).

        Returns:
            One response per request, failures included.
        """
        items = list(requests)
        results: list[LLMResponse | None] = [None] * len(items)
        limit = asyncio.Semaphore(window or max(64, 4 * self.max_connections))

        async def one(index: int, request: LLMRequest) -> None:
            try:
                response = await self.complete(request)
                results[index] = response
                if on_result is not None:
                    on_result(response)
            finally:
                limit.release()

        async with asyncio.TaskGroup() as group:
            for index, request in enumerate(items):
                await limit.acquire()
                group.create_task(one(index, request))
        return [r for r in results if r is not None]

    async def aclose(self) -> None:
        """Release the backend's loop-bound resources, close the call log and an owned cache."""
        await self.backend.aclose()
        self._close_files()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- sync API --------------------------------------------------------------------------

    def complete_sync(self, request: LLMRequest) -> LLMResponse:
        """`complete` from synchronous code (use `run` for batches)."""
        return run_sync(self._then_release(self.complete(request)))

    def run(
        self, requests: Iterable[LLMRequest], *, on_result: ResultCallback | None = None
    ) -> list[LLMResponse]:
        """`complete_many` from synchronous code."""
        return run_sync(self._then_release(self.complete_many(requests, on_result=on_result)))

    def close(self) -> None:
        """Close the call log and an owned cache (the backend is released after each sync
        call already)."""
        self._close_files()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    async def _then_release(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        finally:
            await self.backend.aclose()

    def _close_files(self) -> None:
        if self.call_log is not None:
            self.call_log.close()
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    def _state(self) -> LoopState:
        loop = asyncio.get_running_loop()
        state = self._loop_states.get(loop)
        if state is None:
            state = self._loop_states[loop] = LoopState(loop, self.max_connections)
        return state

    def _log(self, request: LLMRequest, status: str, **fields: Any) -> None:
        if self.call_log is None:
            return
        self.call_log.write(
            {
                "time": utc_now(),
                "status": status,
                "role": request.role,
                "model": request.model,
                "sample": request.sample,
                "key": request.key,
                "namespace": self.namespace,
                **fields,
            }
        )

    def _lookup(self, request: LLMRequest) -> LLMResponse | None:
        if self.cache is None:
            return None
        hit = self.cache.get(request, self.namespace, self.endpoint)
        if hit is None:
            return None
        self._stats.requests += 1
        self._stats.hits += 1
        if self.log_hits:
            self._log(
                request,
                "hit",
                attempt=0,
                cached=True,
                prompt_tokens=hit.usage.prompt_tokens,
                completion_tokens=hit.usage.completion_tokens,
                cost=0.0,
                latency=0.0,
            )
        return hit

    async def _attempt(self, request: LLMRequest) -> LLMResponse:
        """One attempt; every failure comes out as an `LLMCallError`."""
        try:
            if self.attempt_timeout is None:
                return await self.backend.complete(request)
            # a deadline on THIS task, not a new one (asyncio.wait_for on Python 3.11 runs the
            # attempt in a task of its own, so its reply waited a loop iteration, while other
            # tasks ran, before it could be committed)
            async with asyncio.timeout(self.attempt_timeout):
                return await self.backend.complete(request)
        except LLMCallError:
            raise
        except TimeoutError:
            raise LLMCallError(
                f"no answer within {self.attempt_timeout} s", kind="timeout", retryable=True
            ) from None
        except Exception as exc:  # a backend bug must not kill the batch; record it
            message = f"backend {type(self.backend).__name__} raised {type(exc).__name__}: {exc}"
            redact = getattr(self.backend, "redact", None)  # its message may quote a secret
            raise LLMCallError(
                redact(message) if callable(redact) else message,
                kind="backend",
                retryable=False,
            ) from None

    async def _call(self, request: LLMRequest, state: LoopState) -> LLMResponse:
        started = self._clock()
        attempt = 0
        while True:
            async with state.semaphore:
                # checked once a connection is free, so calls that queued for one see what was
                # spent meanwhile (at most max_connections calls in flight can pass the cap)
                over_budget = self.budget is not None and self._stats.cost >= self.budget
                if not over_budget:
                    attempt += 1
                    t0 = self._clock()
                    self._stats.attempts += 1
                    try:
                        answer = await self._attempt(request)
                    except LLMCallError as exc:
                        failure = exc
                    else:
                        return self._success(
                            request, answer, attempt, started, self._clock() - t0
                        )
            if over_budget:
                error = (
                    f"budget of {self.budget:g} {self.prices.currency} reached "
                    f"({self._stats.cost:.4f} spent); not sent"
                )
                self._log(request, "skipped", attempt=attempt, cached=False, error=error)
                return self._failure(request, error, attempt, started)
            latency = self._clock() - t0
            if not failure.retryable or attempt >= self.retry.max_attempts:
                self._log(
                    request,
                    "failed",
                    attempt=attempt,
                    cached=False,
                    http_status=failure.status,
                    latency=round(latency, 6),
                    error=str(failure),
                )
                why = "" if failure.retryable else " (not retryable)"
                return self._failure(request, f"{failure}{why}", attempt, started, failure)
            wait = self.retry.delay(attempt, key=request.key, retry_after=failure.retry_after)
            self._stats.retries += 1
            self._log(
                request,
                "retry",
                attempt=attempt,
                cached=False,
                http_status=failure.status,
                latency=round(latency, 6),
                retry_in=round(wait, 6),
                error=str(failure),
            )
            await self._sleep(wait)

    def _success(
        self, request: LLMRequest, answer: LLMResponse, attempt: int, started: float, took: float
    ) -> LLMResponse:
        usage = answer.usage
        cost = (
            self.prices.cost(request.model, usage.prompt_tokens, usage.completion_tokens)
            if self.backend.billable
            else 0.0
        )
        response = replace(
            answer,
            request=request,
            ok=True,
            cost=cost,
            cached=False,
            attempts=attempt,
            latency=self._clock() - started,
            created=answer.created or time.time(),
            error=None,
        )
        try:
            # committed first, in the step in which the backend returned the reply: nothing is
            # awaited and no other task runs in between, so a kill loses only replies still
            # in flight (see the module docstring)
            if self.cache is not None:
                self.cache.put(response, self.namespace, self.endpoint)
        finally:  # a paid reply is counted and logged even if the cache cannot take it
            s = self._stats
            s.requests += 1
            s.answered += 1
            s.prompt_tokens += usage.prompt_tokens
            s.completion_tokens += usage.completion_tokens
            s.cost += cost
            self._log(
                request,
                "ok",
                attempt=attempt,
                cached=False,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost=cost,
                latency=round(took, 6),
            )
        return response

    def _failure(
        self,
        request: LLMRequest,
        error: str,
        attempts: int,
        started: float,
        cause: LLMCallError | None = None,
    ) -> LLMResponse:
        self._stats.requests += 1
        self._stats.failed += 1
        return LLMResponse(
            request=request,
            text=None,
            ok=False,
            attempts=attempts,
            latency=self._clock() - started,
            created=time.time(),
            error=error,
            status=cause.status if cause is not None else None,
            error_kind=cause.kind if cause is not None else "budget",
            retryable=cause.retryable if cause is not None else True,
        )


__all__ = ["ClientStats", "CostEstimate", "LLMClient", "estimate_cost", "run_sync"]
