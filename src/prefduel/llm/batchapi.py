"""OpenAI's Batch API, as any OpenAI-compatible provider that offers it serves it.

A batch is a JSONL file of requests, each with a ``custom_id``, uploaded with
``files.create(purpose="batch")``; ``batches.create(input_file_id, endpoint=
"/v1/chat/completions", completion_window="24h")`` starts it; ``batches.retrieve`` reports its
status (``validating``, ``in_progress``, ``finalizing``, then ``completed``, ``expired``,
``failed`` or ``cancelled``); ``files.content`` downloads its output file (one line per answered
request, by ``custom_id``) and error file (failed lines, and the lines an expired or cancelled
batch did not run). OpenAI takes at most 50,000 requests and 200 MB per input file
(`MAX_REQUESTS`, `MAX_BYTES`) and bills batch calls at half the online price.

This module is the protocol: the request line of an `LLMRequest` (`request_line`: its
``custom_id`` is the request's cache key and its body the JSON an online call sends), the
cut of requests into files within the limits (`pack`), the calls (`BatchAPI`, through
the SDK client of an `OpenAIBackend`, each retried per a `RetryPolicy` when the failure is
transient) and the reading of result lines into `LLMResponse` s as an online reply is read
(`read_results`). Waves, the state file and resume are `prefduel.llm.batchrun`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, TypeVar

from prefduel.llm.errors import LLMCallError
from prefduel.llm.openai_backend import OpenAIBackend, server_message
from prefduel.llm.request import LLMRequest, LLMResponse
from prefduel.llm.retry import RetryPolicy, is_retryable_status
from prefduel.llm.structured import refuses_format

#: The endpoint batched requests go to, and the only completion window OpenAI offers.
ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
#: OpenAI's limits on one input file.
MAX_REQUESTS = 50_000
MAX_BYTES = 200_000_000
#: Statuses after which a batch changes no more.
FINAL = ("completed", "expired", "failed", "cancelled")

T = TypeVar("T")


def chat_body(request: LLMRequest) -> dict[str, Any]:
    """The JSON body of ``request`` as an online call sends it (model, messages, sampling
    parameters, seed)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
    }
    body.update(request.params.to_json())
    if request.seed is not None:
        body["seed"] = request.seed
    return body


def request_line(request: LLMRequest) -> bytes:
    """One line of a batch input file: ``custom_id`` (the cache key), method, url, body."""
    line = {"custom_id": request.key, "method": "POST", "url": ENDPOINT, "body": chat_body(request)}
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def pack(
    requests: Iterable[LLMRequest], max_requests: int, max_bytes: int
) -> Iterator[tuple[list[LLMRequest], bytes | None]]:
    """``requests`` in order, cut into input files of at most ``max_requests`` lines and
    ``max_bytes`` bytes: each file's requests and bytes; a request whose line alone is larger
    than ``max_bytes`` comes alone with None (it cannot be batched)."""
    current: list[LLMRequest] = []
    parts: list[bytes] = []
    used = 0
    for request in requests:
        line = request_line(request)
        if len(line) > max_bytes:
            yield [request], None
            continue
        if current and (len(current) >= max_requests or used + len(line) > max_bytes):
            yield current, b"".join(parts)
            current, parts, used = [], [], 0
        current.append(request)
        parts.append(line)
        used += len(line)
    if current:
        yield current, b"".join(parts)


@dataclass(frozen=True)
class BatchInfo:
    """What ``batches.retrieve`` said of a batch.

    Attributes:
        id: The batch id.
        status: Its status (final ones: `FINAL`).
        input_file_id: The uploaded requests.
        output_file_id: The answered lines (None until it is done, or when none was answered).
        error_file_id: The failed and unrun lines (None when there are none).
        total: Requests in it.
        completed: Requests answered.
        failed: Requests failed.
        errors: Why the batch itself failed (validation), or None.
    """

    id: str
    status: str
    input_file_id: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    errors: str | None = None

    @property
    def final(self) -> bool:
        """Whether the batch changes no more."""
        return self.status in FINAL

    @classmethod
    def of(cls, batch: Any) -> BatchInfo:
        """The info of an SDK ``Batch`` object."""
        counts = getattr(batch, "request_counts", None)
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        text = "; ".join(
            f"{getattr(e, 'code', None) or 'error'}: {getattr(e, 'message', None) or ''}"
            + (f" (line {e.line})" if getattr(e, "line", None) else "")
            for e in errors
        )
        return cls(
            id=str(batch.id),
            status=str(batch.status),
            input_file_id=str(batch.input_file_id),
            output_file_id=getattr(batch, "output_file_id", None),
            error_file_id=getattr(batch, "error_file_id", None),
            total=int(getattr(counts, "total", 0) or 0),
            completed=int(getattr(counts, "completed", 0) or 0),
            failed=int(getattr(counts, "failed", 0) or 0),
            errors=text or None,
        )


class BatchAPI:
    """The Batch API calls, through an `OpenAIBackend`'s SDK client (its endpoint and key).

    Args:
        backend: The backend (base URL, API key variable, timeout, redaction).
        retry: Attempts and backoff of each call whose failure is transient (HTTP 408, 409,
            429, 5xx, timeouts, dropped connections).
        sleep: ``await sleep(seconds)`` for backoff.
    """

    def __init__(
        self,
        backend: OpenAIBackend,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.backend = backend
        self.retry = retry or RetryPolicy()
        self._sleep = sleep

    async def upload(self, data: bytes, name: str) -> str:
        """Upload a batch input file; its id."""
        sdk = self.backend.sdk()
        made = await self._call(
            "upload",
            lambda: sdk.files.create(file=(name, data, "application/jsonl"), purpose="batch"),
        )
        return str(made.id)

    async def create(self, file_id: str, metadata: Mapping[str, str]) -> BatchInfo:
        """Start a batch of the uploaded ``file_id``."""
        sdk = self.backend.sdk()
        batch = await self._call(
            "create",
            lambda: sdk.batches.create(
                input_file_id=file_id,
                endpoint=ENDPOINT,
                completion_window=WINDOW,
                metadata=dict(metadata),
            ),
        )
        return BatchInfo.of(batch)

    async def retrieve(self, batch_id: str) -> BatchInfo:
        """The batch's status now."""
        sdk = self.backend.sdk()
        return BatchInfo.of(await self._call("retrieve", lambda: sdk.batches.retrieve(batch_id)))

    async def find(self, file_id: str, pages: int = 10) -> BatchInfo | None:
        """The batch started on ``file_id`` (a run killed between starting it and recording
        its id), looking through the newest ``pages`` x 100 batches; None when there is none."""
        sdk = self.backend.sdk()
        after: str | None = None
        for _ in range(pages):
            kwargs: dict[str, Any] = {"limit": 100}
            if after is not None:
                kwargs["after"] = after
            page = await self._call("list", lambda kwargs=kwargs: sdk.batches.list(**kwargs))
            items = list(getattr(page, "data", None) or [])
            for batch in items:
                if str(batch.input_file_id) == file_id:
                    return BatchInfo.of(batch)
            if not items or not getattr(page, "has_more", False):
                return None
            after = str(items[-1].id)
        return None

    async def cancel(self, batch_id: str) -> BatchInfo:
        """Ask the provider to cancel a batch."""
        sdk = self.backend.sdk()
        return BatchInfo.of(await self._call("cancel", lambda: sdk.batches.cancel(batch_id)))

    async def content(self, file_id: str) -> bytes:
        """The bytes of an output or error file."""
        sdk = self.backend.sdk()
        reply = await self._call("download", lambda: sdk.files.content(file_id))
        data = getattr(reply, "content", reply)
        return data if isinstance(data, bytes) else str(data).encode("utf-8")

    async def _call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, retried while its failure is transient; `LLMCallError` otherwise."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await call()
            except Exception as exc:  # the SDK's errors, translated below
                failure = self._error(what, exc)
            if not failure.retryable or attempt >= self.retry.max_attempts:
                raise failure
            await self._sleep(self.retry.delay(attempt, key=what, retry_after=failure.retry_after))

    def _error(self, what: str, exc: Exception) -> LLMCallError:
        """The `LLMCallError` of a failed Batch API call (redacted)."""
        import openai

        where = f"Batch API {what} at {self.backend.endpoint}"
        if isinstance(exc, openai.APITimeoutError):
            return LLMCallError(f"{where}: timeout", kind="timeout", retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            return LLMCallError(
                self.backend.redact(f"{where}: connection failed ({exc})"),
                kind="connection",
                retryable=True,
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            message = server_message(exc.body) or exc.message
            return LLMCallError(
                self.backend.redact(f"{where}: HTTP {status}: {message}"),
                kind="http",
                status=status,
                retryable=is_retryable_status(status),
            )
        if isinstance(exc, LLMCallError):
            return exc
        return LLMCallError(
            self.backend.redact(f"{where}: {type(exc).__name__}: {exc}"),
            kind="batch",
            retryable=False,
        )


def _attributes(value: Any) -> Any:
    """JSON data with its objects readable as attributes (as the SDK's reply objects are)."""
    if isinstance(value, Mapping):
        return SimpleNamespace(**{str(k): _attributes(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_attributes(v) for v in value]
    return value


def failure(
    request: LLMRequest,
    error: str,
    *,
    kind: str,
    retryable: bool,
    status: int | None = None,
) -> LLMResponse:
    """A response without an answer."""
    return LLMResponse(
        request=request,
        text=None,
        ok=False,
        error=error,
        status=status,
        error_kind=kind,
        retryable=retryable,
    )


def read_line(
    entry: Mapping[str, Any], request: LLMRequest, backend: OpenAIBackend, batch_id: str
) -> LLMResponse:
    """The response of one output or error line (an answer, or why the line has none)."""
    response = entry.get("response")
    error = entry.get("error")
    if isinstance(response, Mapping) and response.get("status_code") == 200:
        try:
            return backend.read_completion(request, _attributes(response.get("body") or {}))
        except LLMCallError as exc:
            return failure(request, str(exc), kind=exc.kind, retryable=exc.retryable)
    if isinstance(response, Mapping) and isinstance(response.get("status_code"), int):
        status = int(response["status_code"])
        message = server_message(response.get("body")) or "no message"
        text = backend.redact(f"HTTP {status} in batch {batch_id}: {message}")
        return failure(
            request,
            text,
            kind="http",
            status=status,
            retryable=is_retryable_status(status) and not refuses_format(request, status, text),
        )
    code = error.get("code") if isinstance(error, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    kind = "expired" if code == "batch_expired" else "batch"
    text = backend.redact(f"{code or 'failed'} in batch {batch_id}: {message or 'no message'}")
    return failure(request, text, kind=kind, retryable=True)


def read_results(
    data: bytes,
    requests: Mapping[str, LLMRequest],
    backend: OpenAIBackend,
    batch_id: str,
) -> dict[str, LLMResponse]:
    """The responses in an output or error file, by ``custom_id``, of the requests in
    ``requests`` (lines of other requests, or unreadable, are left out)."""
    out: dict[str, LLMResponse] = {}
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, Mapping):
            continue
        request = requests.get(str(entry.get("custom_id")))
        if request is not None:
            out[request.key] = read_line(entry, request, backend, batch_id)
    return out


__all__ = [
    "ENDPOINT",
    "FINAL",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "WINDOW",
    "BatchAPI",
    "BatchInfo",
    "chat_body",
    "failure",
    "pack",
    "read_line",
    "read_results",
    "request_line",
]
