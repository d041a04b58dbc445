"""A local OpenAI-compatible HTTP server with deterministic answers and fault injection.

For tests and benchmarks of the REAL client path (``openai`` SDK -> HTTP -> server), offline.
Standard library only (``http.server`` in a background thread)::

    with OpenAITestServer(faults=per_request_faults(lambda body: [Fault.http(429, retry_after=1)])
                          ) as server:
        backend = OpenAIBackend(base_url=server.base_url, api_key_env="MY_FAKE_KEY")
        ...                                   # first attempt of each request gets a 429
        assert all(r.attempt <= 1 for r in server.requests)

It serves ``POST /v1/chat/completions`` (answer: `default_answer` of the JSON body, or
your ``answer`` function), ``GET /v1/models``, and OpenAI's Batch API (``/v1/files``,
``/v1/batches``: `OpenAITestServer.batch`, a `prefduel.llm.testbatches.BatchDesk` whose lines
get the same answers as online calls). It honours ``response_format`` (a JSON schema:
the answer is put into it), or ignores or rejects it (``structured=``); draws the first answer
token from a ``distribution`` function when given; and returns ``logprobs`` when asked
(`prefduel.llm.testanswers`). Before answering, the fault schedule (a
function of the `ReceivedRequest`) may pick a `Fault`: an HTTP error status (with
``retry-after``), a timeout, a malformed or truncated body, a dropped connection, valid JSON of
the wrong shape, or a hostile successful answer that echoes the received credentials. Faults,
schedules (`per_request_faults`, `random_faults`, `fault_sequence`) and answers live in
`prefduel.llm.testfaults` and are importable from here too. Every request received is
recorded (`OpenAITestServer.requests`), headers included, in memory only.

Run it standalone (prints ``READY <base_url>`` then serves until stdin closes or Ctrl-C)::

    python -m prefduel.llm.testserver [--port 8000] [--latency 0.01] [--echo-auth append]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prefduel.llm.testanswers import (
    SERVER_STRUCTURED,
    DistributionFn,
    conform,
    draw,
    json_object_schema,
    json_schema,
    logprobs_payload,
)
from prefduel.llm.testbatches import BatchDesk, line_fault_status
from prefduel.llm.testfaults import (
    ECHO_PLACES,
    FAULT_KINDS,
    AnswerFn,
    Fault,
    FaultSchedule,
    ReceivedRequest,
    bearer_token,
    body_key,
    completion_payload,
    default_answer,
    echo_reply,
    echo_text,
    fault_sequence,
    last_user_message,
    per_request_faults,
    random_faults,
)

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
BATCH_PREFIXES = ("/v1/files", "/v1/batches")

#: The body with which llama-cpp-python's server (0.3) answers a ``json_schema`` format: HTTP 500
#: and a pydantic validation error naming ``response_format`` (seen on a real server).
LLAMA_CPP_PYTHON_REFUSAL = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema'}",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
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

    def _batch_reply(self, status: int, reply: Any) -> None:
        if isinstance(reply, bytes):
            self._send(status, reply, content_type="application/octet-stream")
        else:
            self._send(status, json.dumps(reply).encode())

    def do_GET(self) -> None:
        """``/v1/models``: one test model; the Batch API's files and batches."""
        if self.path.startswith(BATCH_PREFIXES):
            self._batch_reply(*self.server.owner.batch.get(self.path))
        elif self.path.rstrip("/") in ("/v1/models", "/models"):
            data = {"object": "list", "data": [{"id": "test-model", "object": "model"}]}
            self._send(200, json.dumps(data).encode())
        else:
            self._send(404, b'{"error": {"message": "not found", "type": "not_found"}}')

    def do_POST(self) -> None:
        """Chat completions, with the scheduled fault if any."""
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith(BATCH_PREFIXES):
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._batch_reply(*self.server.owner.batch.post(self.path, headers, raw))
            return
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
            self._http_fault(fault, received)
            return
        has_schema = json_schema(body) is not None or json_object_schema(body) is not None
        if has_schema and owner.structured == "reject":
            error = {"error": {"message": "response_format is not supported by this server"}}
            self._send(400, json.dumps(error).encode())
            return
        if json_schema(body) is not None and owner.structured == "json_object":
            self._send(500, json.dumps(LLAMA_CPP_PYTHON_REFUSAL).encode())
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
        echoing = fault is not None and fault.kind == "echo"
        data = owner.completion(body, received, fault if echoing else None)
        payload = json.dumps(data).encode()
        if fault is not None and fault.kind == "truncated":
            self._send(200, payload[: len(payload) // 2], declared_length=len(payload))
            self.close_connection = True
            return
        self._send(200, payload)
        if fault is None or echoing:
            owner._answered(received)

    def _http_fault(self, fault: Fault, received: ReceivedRequest) -> None:
        """An error status: the fault's own body, or an OpenAI-style error object."""
        headers = {}
        if fault.retry_after is not None:
            headers["retry-after"] = fault.retry_after
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = fault.retry_after_ms
        if fault.body is not None:
            self._send(fault.status, fault.body.encode(), headers=headers)
            return
        message = f"injected fault: HTTP {fault.status}"
        if fault.echo_auth:
            message += f" (received Authorization: {received.headers.get('authorization')})"
        error = {"error": {"message": message, "type": "injected", "code": fault.status}}
        self._send(fault.status, json.dumps(error).encode(), headers=headers)


class OpenAITestServer:
    """The test server (start with ``with`` or `start`).

    Args:
        answer: Answer text for a request body (default `default_answer`).
        faults: Fault schedule (default: no faults). May be replaced between phases via
            `faults`.
        latency: Seconds each normal answer takes.
        host: Interface (default 127.0.0.1).
        port: Port (0: any free port).
        structured: What to do with a ``response_format`` JSON schema: ``"honour"`` (answer
            in it), ``"ignore"`` (free text), ``"reject"`` (HTTP 400, also for the older
            ``json_object`` form with a ``schema``) or ``"json_object"`` (as
            llama-cpp-python: HTTP 500 for ``json_schema``, the older form honoured).
        distribution: The first answer token's probabilities for a body (None: answer as
            ``answer`` says); the token is drawn per request (see `testanswers.draw`).
        logprobs: Return ``logprobs`` when a request asks for them (False: never, as
            endpoints without logprobs).

    Raises:
        ValueError: An unknown ``structured`` value.
    """

    def __init__(
        self,
        *,
        answer: AnswerFn | None = None,
        faults: FaultSchedule | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        structured: str = "honour",
        distribution: DistributionFn | None = None,
        logprobs: bool = True,
    ) -> None:
        if structured not in SERVER_STRUCTURED:
            raise ValueError(f"structured: expected one of {SERVER_STRUCTURED}, got {structured!r}")
        self.answer = answer or default_answer
        self.faults = faults
        self.structured = structured
        self.distribution = distribution
        self.logprobs = logprobs
        self.latency = latency
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest] = []
        self._attempts: dict[str, int] = {}
        self._answers: dict[str, int] = {}
        self._stopping = threading.Event()
        #: The Batch API's files and batches (`BatchDesk`: holds, line faults, expiry).
        self.batch = BatchDesk(self)
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

    # -- answers ---------------------------------------------------------------------------

    def completion(
        self, body: dict[str, Any], received: ReceivedRequest, echo: Fault | None = None
    ) -> dict[str, Any]:
        """The chat completion answering ``body``: the answer (drawn from the distribution,
        put into the schema, echoing credentials for an ``echo`` fault) and its logprobs."""
        text = self.answer(body)
        distribution = self.distribution(body) if self.distribution is not None else None
        chosen = None
        if distribution:
            seed = body.get("seed")
            index = seed if isinstance(seed, int) else received.attempt
            chosen = text = draw(distribution, received.body_key, index)
        schema = json_schema(body)
        if schema is not None and self.structured == "honour":
            text = conform(text, schema)
        older = json_object_schema(body)
        if older is not None and self.structured in ("honour", "json_object"):
            text = conform(text, older)
        authorization = received.headers.get("authorization")
        if echo is not None:
            mark = echo_text(authorization)
            text = {
                "append": f"{text} {mark}",
                "prepend": f"{mark} {text}",
                "replace": mark,
            }[echo.echo_where]
        data = completion_payload(body, text)
        if echo is not None and echo.echo_model:
            data["model"] = f"{data['model']}+{bearer_token(authorization)}"
        if body.get("logprobs") is True and self.logprobs:
            top_n = body.get("top_logprobs")
            data["choices"][0]["logprobs"] = logprobs_payload(
                text, chosen, distribution, top_n if isinstance(top_n, int) else 0
            )
        if echo is not None:
            echo_reply(data, bearer_token(authorization), echo.echo_fields)
        return data

    def line_reply(
        self, body: Any, headers: Mapping[str, str], faults: FaultSchedule | None
    ) -> tuple[int, dict[str, Any]]:
        """The status and reply of one batch line: what an online call of ``body`` gets
        (recorded as a request of path ``batch``), or the error of its scheduled fault."""
        key = body_key(body)
        with self._lock:
            attempt = self._attempts.get(key, 0)
            self._attempts[key] = attempt + 1
            received = ReceivedRequest(
                len(self._requests), time.monotonic(), "POST", "batch", headers, body, key, attempt
            )
            self._requests.append(received)
        fault = faults(received) if faults is not None else None
        if fault is not None:
            status = line_fault_status(fault)
            with self._lock:
                self._requests[received.index] = replace(received, fault=fault.kind)
            return status, {"error": {"message": f"injected fault: HTTP {status}"}}
        has_schema = json_schema(body) is not None or json_object_schema(body) is not None
        if has_schema and self.structured == "reject":
            return 400, {"error": {"message": "response_format is not supported by this server"}}
        if json_schema(body) is not None and self.structured == "json_object":
            return 500, LLAMA_CPP_PYTHON_REFUSAL
        data = self.completion(body, received)
        self._answered(received)
        return 200, data

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


__all__ = [
    "CHAT_PATHS",
    "ECHO_PLACES",
    "FAULT_KINDS",
    "SERVER_STRUCTURED",
    "AnswerFn",
    "DistributionFn",
    "Fault",
    "FaultSchedule",
    "OpenAITestServer",
    "ReceivedRequest",
    "bearer_token",
    "body_key",
    "completion_payload",
    "default_answer",
    "echo_text",
    "fault_sequence",
    "last_user_message",
    "main",
    "per_request_faults",
    "random_faults",
]


if __name__ == "__main__":
    sys.exit(main())
