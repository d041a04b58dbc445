"""The test server's faults, fault schedules and answers (`prefduel.llm.testserver`).

Before answering, the server asks its fault schedule (a function of the `ReceivedRequest`) for
a `Fault`:

* ``Fault.http(status, retry_after=..., retry_after_ms=...)``: an error status (429, 500, 503,
  400, ...) with optional ``retry-after`` / ``retry-after-ms`` headers; ``echo_auth=True`` puts
  the received ``Authorization`` header into the error message (to test redaction); ``body=``
  sends that body instead of an OpenAI-style error (e.g. FastAPI's ``{"detail": "..."}``);
* ``Fault.timeout(delay)``: answer only after ``delay`` seconds (longer than the client's
  timeout);
* ``Fault.malformed()``: status 200, ``application/json``, a body that is not JSON;
* ``Fault.truncated()``: status 200 with a ``Content-Length`` larger than the body sent, then
  the connection is closed;
* ``Fault.drop()``: the connection is closed without any response;
* ``Fault.bad_shape()``: valid JSON without choices;
* ``Fault.echo(where, model=False, fields=())``: a HOSTILE but successful answer (status 200,
  counted as answered): the normal answer with the received ``Authorization`` header and its
  bearer token echoed into the content (``where``: ``"append"``, ``"prepend"`` or ``"replace"``
  the whole answer), and with ``model=True`` the token appended to the reported model name too;
  ``fields`` plants the token in more places of the reply (`ECHO_FIELDS`: the finish reason,
  logprobs that were not asked for, the usage, the ids, or a null content whose finish reason
  carries it, which makes the reply a failure): to test that every part of a reply is scrubbed
  of the key before it is cached or written.

Schedules are pure functions of the request, so tests are deterministic whatever the order of
arrival: `per_request_faults` (attempt ``n`` of each distinct body), `random_faults`
(a hash of seed, body and attempt) and `fault_sequence` (by arrival order, for sequential
clients). Answers: `default_answer` of the JSON body, as a chat completion
(`completion_payload`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefduel.llm.prices import estimate_tokens

FAULT_KINDS = ("http", "timeout", "malformed", "truncated", "drop", "bad_shape", "echo")
#: Where an ``echo`` fault puts the echoed credentials in the answer.
ECHO_PLACES = ("append", "prepend", "replace")
#: More places of a reply where an ``echo`` fault can plant the bearer token.
ECHO_FIELDS = ("finish_reason", "logprobs", "usage", "ids", "null_content")


@dataclass(frozen=True)
class Fault:
    """One injected failure (build with the class methods).

    Attributes:
        kind: One of `FAULT_KINDS`.
        status: HTTP status (``http`` faults).
        retry_after: ``retry-after`` header value, verbatim (seconds or an HTTP date).
        retry_after_ms: ``retry-after-ms`` header value, verbatim.
        delay: Seconds to wait before answering (``timeout`` faults).
        echo_auth: Put the received ``Authorization`` header into the error message.
        echo_where: ``echo`` faults: where the credentials go in the answer (`ECHO_PLACES`).
        echo_model: ``echo`` faults: also append the bearer token to the reported model name.
        echo_fields: ``echo`` faults: more places of the reply for the token (`ECHO_FIELDS`).
        body: ``http`` faults: the response body, verbatim (None: an OpenAI-style error).
    """

    kind: str
    status: int = 500
    retry_after: str | None = None
    retry_after_ms: str | None = None
    delay: float = 0.0
    echo_auth: bool = False
    echo_where: str = "append"
    echo_model: bool = False
    echo_fields: tuple[str, ...] = ()
    body: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind: expected one of {FAULT_KINDS}, got {self.kind!r}")
        if self.echo_where not in ECHO_PLACES:
            raise ValueError(f"echo_where: expected one of {ECHO_PLACES}, got {self.echo_where!r}")
        unknown = set(self.echo_fields) - set(ECHO_FIELDS)
        if unknown:
            raise ValueError(f"echo_fields: expected some of {ECHO_FIELDS}, got {sorted(unknown)}")

    @classmethod
    def http(
        cls,
        status: int,
        *,
        retry_after: float | str | None = None,
        retry_after_ms: float | str | None = None,
        echo_auth: bool = False,
        body: Any = None,
    ) -> Fault:
        """An error status with optional ``retry-after`` / ``retry-after-ms`` headers and body
        (a string verbatim, anything else as JSON)."""
        return cls(
            "http",
            status=status,
            retry_after=None if retry_after is None else str(retry_after),
            retry_after_ms=None if retry_after_ms is None else str(retry_after_ms),
            echo_auth=echo_auth,
            body=body if body is None or isinstance(body, str) else json.dumps(body),
        )

    @classmethod
    def timeout(cls, delay: float = 5.0) -> Fault:
        """Answer only after ``delay`` seconds."""
        return cls("timeout", delay=delay)

    @classmethod
    def malformed(cls) -> Fault:
        """Status 200 with a body that is not JSON."""
        return cls("malformed")

    @classmethod
    def truncated(cls) -> Fault:
        """Status 200, half the body, connection closed."""
        return cls("truncated")

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without a response."""
        return cls("drop")

    @classmethod
    def bad_shape(cls) -> Fault:
        """Valid JSON that is not a chat completion (no choices)."""
        return cls("bad_shape")

    @classmethod
    def echo(
        cls, where: str = "append", *, model: bool = False, fields: tuple[str, ...] = ()
    ) -> Fault:
        """A successful answer that echoes the received credentials (a hostile endpoint).

        The content gets ``[echo Authorization: <header>; token: <bearer token>]`` appended,
        prepended, or instead of the normal answer (``where``); ``model=True`` also appends
        the token to the reported model name; ``fields`` plants it in more places
        (`echo_reply`).
        """
        return cls("echo", echo_where=where, echo_model=model, echo_fields=tuple(fields))


@dataclass(frozen=True)
class ReceivedRequest:
    """A request as the server saw it.

    Attributes:
        index: Arrival order (0, 1, ...).
        time: ``time.monotonic()`` at arrival.
        method: HTTP method.
        path: Request path.
        headers: Headers with lower-cased names (``authorization`` included: memory only).
        body: Parsed JSON body (None if absent or not JSON).
        body_key: SHA-256 of the body's canonical JSON (`body_key`).
        attempt: Earlier requests with the same ``body_key`` (0 for the first).
        fault: Kind of the fault injected, or None for a normal answer.
    """

    index: int
    time: float
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    body_key: str
    attempt: int
    fault: str | None = None


#: A fault schedule: which fault (or None) to inject for a request.
FaultSchedule = Callable[[ReceivedRequest], Fault | None]
#: An answer function: the answer text for a request body.
AnswerFn = Callable[[dict[str, Any]], str]


def body_key(body: Any) -> str:
    """SHA-256 (hex) of a JSON body in canonical form (sorted keys, no spaces)."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def last_user_message(body: Mapping[str, Any]) -> str:
    """The content of the last ``user`` message of a chat body ("" if none)."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def default_answer(body: Mapping[str, Any]) -> str:
    """``answer <12 hex of the body hash>: <start of the last user message>``."""
    user = " ".join(last_user_message(body).split())[:60]
    return f"answer {body_key(body)[:12]}: {user}"


def fault_sequence(faults: Sequence[Fault | None]) -> FaultSchedule:
    """The ``n``-th request received gets ``faults[n]`` (later ones none).

    Deterministic only when requests arrive in a known order (one at a time).
    """
    items = list(faults)
    return lambda req: items[req.index] if req.index < len(items) else None


def per_request_faults(
    script: Callable[[Mapping[str, Any]], Sequence[Fault | None]],
) -> FaultSchedule:
    """Attempt ``n`` of each distinct body gets ``script(body)[n]`` (none past the end).

    Example: ``per_request_faults(lambda body: [Fault.http(500)] * 2)`` fails the first two
    attempts of every request, whatever the order in which requests arrive.
    """

    def schedule(req: ReceivedRequest) -> Fault | None:
        plan = script(req.body if isinstance(req.body, Mapping) else {})
        return plan[req.attempt] if req.attempt < len(plan) else None

    return schedule


def random_faults(
    rate: float, faults: Sequence[Fault], *, seed: int = 0, max_faulty_attempts: int = 3
) -> FaultSchedule:
    """Each attempt fails with probability ``rate`` (a hash of seed, body and attempt), the
    fault drawn from ``faults``; attempts past ``max_faulty_attempts`` always succeed."""
    if not 0 <= rate <= 1:
        raise ValueError(f"rate: expected a probability, got {rate!r}")
    choices = list(faults)
    if not choices:
        raise ValueError("faults: expected at least one fault")

    def schedule(req: ReceivedRequest) -> Fault | None:
        if req.attempt >= max_faulty_attempts:
            return None
        digest = hashlib.sha256(f"{seed}:{req.body_key}:{req.attempt}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2.0**64
        if u >= rate:
            return None
        return choices[int.from_bytes(digest[8:16], "big") % len(choices)]

    return schedule


def bearer_token(authorization: str | None) -> str:
    """The credentials of an ``Authorization`` header value (``Bearer X`` -> ``X``)."""
    parts = (authorization or "").split(None, 1)
    return parts[1] if len(parts) == 2 else (authorization or "")


def echo_text(authorization: str | None) -> str:
    """What an ``echo`` fault puts in the answer for a received ``Authorization`` header."""
    return f"[echo Authorization: {authorization or ''}; token: {bearer_token(authorization)}]"


def echo_reply(data: dict[str, Any], token: str, fields: Sequence[str]) -> None:
    """Plant ``token`` in the places ``fields`` names (`ECHO_FIELDS`) of a chat completion:
    ``finish_reason``; ``logprobs`` (a token and its alternative, asked for or not); ``usage``
    (its counts become text, and a details mapping holds it); ``ids`` (``id`` and
    ``system_fingerprint``); ``null_content`` (no content, the token in the finish reason)."""
    choice = data["choices"][0]
    if "finish_reason" in fields or "null_content" in fields:
        choice["finish_reason"] = f"stop {token}"
    if "null_content" in fields:
        choice["message"]["content"] = None
    if "logprobs" in fields:
        entry = {"token": token, "logprob": -0.5, "top_logprobs": [
            {"token": token, "logprob": -0.5}, {"token": f"B{token}", "logprob": -1.5}]}
        choice["logprobs"] = {"content": [entry]}
    if "usage" in fields:
        data["usage"] = {"prompt_tokens": token, "completion_tokens": 3,
                         "completion_tokens_details": {"note": token}}
    if "ids" in fields:
        data["id"] = f"chatcmpl-{token}"
        data["system_fingerprint"] = token


def completion_payload(body: Mapping[str, Any], text: str) -> dict[str, Any]:
    """A chat-completion JSON object answering ``body`` with ``text``."""
    prompt = sum(
        estimate_tokens(m.get("content") or "")
        for m in body.get("messages") or []
        if isinstance(m, Mapping) and isinstance(m.get("content"), str)
    )
    completion = estimate_tokens(text)
    return {
        "id": "chatcmpl-" + body_key(body)[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or "test-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


__all__ = [
    "ECHO_FIELDS",
    "ECHO_PLACES",
    "FAULT_KINDS",
    "AnswerFn",
    "Fault",
    "FaultSchedule",
    "ReceivedRequest",
    "bearer_token",
    "body_key",
    "completion_payload",
    "default_answer",
    "echo_reply",
    "echo_text",
    "fault_sequence",
    "last_user_message",
    "per_request_faults",
    "random_faults",
]
