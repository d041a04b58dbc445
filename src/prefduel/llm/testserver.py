"""A local OpenAI-compatible HTTP server with deterministic answers and fault injection.

For tests and benchmarks of the REAL client path (``openai`` SDK -> HTTP -> server), offline.
Standard library only (``http.server`` in a background thread)::

    with OpenAITestServer(faults=per_request_faults(lambda body: [Fault.http(429, retry_after=1)])
                          ) as server:
        backend = OpenAIBackend(base_url=server.base_url, api_key_env="MY_FAKE_KEY")
        ...                                   # first attempt of each request gets a 429
        assert all(r.attempt <= 1 for r in server.requests)

It serves ``POST /v1/chat/completions`` (answer: `default_answer` of the JSON body, or
your ``answer`` function) and ``GET /v1/models``. Before answering, the fault schedule (a
function of the `ReceivedRequest`) may pick a `Fault`:

* ``Fault.http(status, retry_after=..., retry_after_ms=...)``: an error status (429, 500, 503,
  400, ...) with optional ``retry-after`` / ``retry-after-ms`` headers; ``echo_auth=True`` puts
  the received ``Authorization`` header into the error message (to test redaction);
* ``Fault.timeout(delay)``: answer only after ``delay`` seconds (longer than the client's
  timeout);
* ``Fault.malformed()``: status 200, ``application/json``, a body that is not JSON;
* ``Fault.truncated()``: status 200 with a ``Content-Length`` larger than the body sent, then
  the connection is closed;
* ``Fault.drop()``: the connection is closed without any response;
* ``Fault.bad_shape()``: valid JSON without choices;
* ``Fault.echo(where, model=False)``: a HOSTILE but successful answer (status 200, counted as
  answered): the normal answer with the received ``Authorization`` header and its bearer token
  echoed into the content (``where``: ``"append"``, ``"prepend"`` or ``"replace"`` the whole
  answer), and with ``model=True`` the token appended to the reported model name too (to test
  that replies are scrubbed of the key before they are cached or written).

Schedules are pure functions of the request, so tests are deterministic whatever the order of
arrival: `per_request_faults` (attempt ``n`` of each distinct body), `random_faults`
(a hash of seed, body and attempt) and `fault_sequence` (by arrival order, for sequential
clients). Every request received is recorded (`OpenAITestServer.requests`), headers
included, in memory only.

Run it standalone (prints ``READY <base_url>`` then serves until stdin closes or Ctrl-C)::

    python -m prefduel.llm.testserver [--port 8000] [--latency 0.01] [--echo-auth append]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prefduel.llm.prices import estimate_tokens

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
FAULT_KINDS = ("http", "timeout", "malformed", "truncated", "drop", "bad_shape", "echo")
#: Where an ``echo`` fault puts the echoed credentials in the answer.
ECHO_PLACES = ("append", "prepend", "replace")


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
    """

    kind: str
    status: int = 500
    retry_after: str | None = None
    retry_after_ms: str | None = None
    delay: float = 0.0
    echo_auth: bool = False
    echo_where: str = "append"
    echo_model: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind: expected one of {FAULT_KINDS}, got {self.kind!r}")
        if self.echo_where not in ECHO_PLACES:
            raise ValueError(f"echo_where: expected one of {ECHO_PLACES}, got {self.echo_where!r}")

    @classmethod
    def http(
        cls,
        status: int,
        *,
        retry_after: float | str | None = None,
        retry_after_ms: float | str | None = None,
        echo_auth: bool = False,
    ) -> Fault:
        """An error status with optional ``retry-after`` / ``retry-after-ms`` headers."""
        return cls(
            "http",
            status=status,
            retry_after=None if retry_after is None else str(retry_after),
            retry_after_ms=None if retry_after_ms is None else str(retry_after_ms),
            echo_auth=echo_auth,
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
    def echo(cls, where: str = "append", *, model: bool = False) -> Fault:
        """A successful answer that echoes the received credentials (a hostile endpoint).

        The content gets ``[echo Authorization: <header>; token: <bearer token>]`` appended,
        prepended, or instead of the normal answer (``where``); ``model=True`` also appends
        the token to the reported model name.
        """
        return cls("echo", echo_where=where, echo_model=model)


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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    owner: OpenAITestServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 60  # idle keep-alive connections end after a minute
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms stalls

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr log."""

    def _send(
        self,
        status: int,
        payload: bytes,
        *,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        declared_length: int | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header(
            "Content-Length", str(len(payload) if declared_length is None else declared_length)
        )
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def do_GET(self) -> None:
        """``/v1/models``: one test model."""
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = {"object": "list", "data": [{"id": "test-model", "object": "model"}]}
            self._send(200, json.dumps(data).encode())
        else:
            self._send(404, b'{"error": {"message": "not found", "type": "not_found"}}')

    def do_POST(self) -> None:
        """Chat completions, with the scheduled fault if any."""
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner = self.server.owner
        received, fault = owner._receive(self, body)
        if received.path.split("?")[0] not in CHAT_PATHS:
            self._send(404, b'{"error": {"message": "unknown path", "type": "not_found"}}')
            return
        if not isinstance(body, dict):
            self._send(400, b'{"error": {"message": "body is not a JSON object"}}')
            return
        try:
            self._answer(owner, body, received, fault)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout)

    def _answer(
        self,
        owner: OpenAITestServer,
        body: dict[str, Any],
        received: ReceivedRequest,
        fault: Fault | None,
    ) -> None:
        if fault is not None and fault.kind == "drop":
            self.close_connection = True
            return
        if fault is not None and fault.kind == "http":
            message = f"injected fault: HTTP {fault.status}"
            if fault.echo_auth:
                message += f" (received Authorization: {received.headers.get('authorization')})"
            headers = {}
            if fault.retry_after is not None:
                headers["retry-after"] = fault.retry_after
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = fault.retry_after_ms
            error = {"error": {"message": message, "type": "injected", "code": fault.status}}
            self._send(fault.status, json.dumps(error).encode(), headers=headers)
            return
        if fault is not None and fault.kind == "timeout":
            if owner._stopping.wait(fault.delay):
                self.close_connection = True
                return
        elif owner.latency > 0:
            time.sleep(owner.latency)
        if fault is not None and fault.kind == "malformed":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, "mess')
            return
        if fault is not None and fault.kind == "bad_shape":
            self._send(200, b'{"id": "chatcmpl-empty", "object": "chat.completion"}')
            return
        text = owner.answer(body)
        echoing = fault is not None and fault.kind == "echo"
        if fault is not None and echoing:
            authorization = received.headers.get("authorization")
            echo = echo_text(authorization)
            text = {
                "append": f"{text} {echo}",
                "prepend": f"{echo} {text}",
                "replace": echo,
            }[fault.echo_where]
        data = completion_payload(body, text)
        if fault is not None and echoing and fault.echo_model:
            data["model"] = f"{data['model']}+{bearer_token(authorization)}"
        payload = json.dumps(data).encode()
        if fault is not None and fault.kind == "truncated":
            self._send(200, payload[: len(payload) // 2], declared_length=len(payload))
            self.close_connection = True
            return
        self._send(200, payload)
        if fault is None or echoing:
            owner._answered(received)


class OpenAITestServer:
    """The test server (start with ``with`` or `start`).

    Args:
        answer: Answer text for a request body (default `default_answer`).
        faults: Fault schedule (default: no faults). May be replaced between phases via
            `faults`.
        latency: Seconds each normal answer takes.
        host: Interface (default 127.0.0.1).
        port: Port (0: any free port).
    """

    def __init__(
        self,
        *,
        answer: AnswerFn | None = None,
        faults: FaultSchedule | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.answer = answer or default_answer
        self.faults = faults
        self.latency = latency
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest] = []
        self._attempts: dict[str, int] = {}
        self._answers: dict[str, int] = {}
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"OpenAITestServer({self.base_url if self._server else 'stopped'})"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` (after `start`)."""
        if self._server is None:
            raise RuntimeError("the test server is not started")
        return f"http://{self.host}:{self._server.server_address[1]}/v1"

    def start(self) -> OpenAITestServer:
        """Bind and serve in a daemon thread; returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self.host, self.port), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (pending delayed answers are abandoned)."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- records ---------------------------------------------------------------------------

    def _receive(
        self, handler: BaseHTTPRequestHandler, body: Any
    ) -> tuple[ReceivedRequest, Fault | None]:
        key = body_key(body)
        with self._lock:
            attempt = self._attempts.get(key, 0)
            self._attempts[key] = attempt + 1
            received = ReceivedRequest(
                index=len(self._requests),
                time=time.monotonic(),
                method=handler.command,
                path=handler.path,
                headers={k.lower(): v for k, v in handler.headers.items()},
                body=body,
                body_key=key,
                attempt=attempt,
            )
            self._requests.append(received)
        fault = self.faults(received) if self.faults is not None else None
        if fault is not None:
            received = replace(received, fault=fault.kind)
            with self._lock:
                self._requests[received.index] = received
        return received, fault

    def _answered(self, received: ReceivedRequest) -> None:
        with self._lock:
            self._answers[received.body_key] = self._answers.get(received.body_key, 0) + 1

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def answers(self) -> dict[str, int]:
        """Body key -> complete answers sent for it (requests without a fault or with an
        ``echo`` fault)."""
        with self._lock:
            return dict(self._answers)

    def reset(self) -> None:
        """Forget the requests received and the attempt counts."""
        with self._lock:
            self._requests.clear()
            self._attempts.clear()
            self._answers.clear()


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until stdin closes or Ctrl-C (for benchmarks and manual tests)."""
    parser = argparse.ArgumentParser(
        prog="python -m prefduel.llm.testserver",
        description="Local OpenAI-compatible test server (deterministic answers).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument(
        "--echo-auth",
        choices=ECHO_PLACES,
        default=None,
        help="hostile mode: every answer echoes the received Authorization header",
    )
    args = parser.parse_args(argv)
    faults: FaultSchedule | None = None
    if args.echo_auth is not None:
        hostile = Fault.echo(args.echo_auth)
        faults = lambda req: hostile  # noqa: E731
    with OpenAITestServer(
        host=args.host, port=args.port, latency=args.latency, faults=faults
    ) as server:
        print(f"READY {server.base_url}", flush=True)
        try:
            sys.stdin.read()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
