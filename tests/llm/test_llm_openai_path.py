"""The real client path (openai SDK -> HTTP -> local test server) with injected faults."""

from __future__ import annotations

import email.utils
import socket
import time
from collections import Counter

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep, make_requests

from prefduel.llm import (
    LLMClient,
    LLMConfigError,
    LLMRequest,
    ModelPrice,
    PriceTable,
    ResponseCache,
    RetryPolicy,
    read_call_log,
)
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import (
    Fault,
    OpenAITestServer,
    body_key,
    default_answer,
    fault_sequence,
    per_request_faults,
    random_faults,
)

TIMEOUT = 5.0  # client timeout per attempt (generous: the machine may be busy)
SHORT_TIMEOUT = 0.5  # for the timeout fault, which sleeps 3 s
PRICES = PriceTable({"gpt-4o-mini": ModelPrice(0.15, 0.60)})


@pytest.fixture(scope="module")
def server():
    with OpenAITestServer() as srv:
        yield srv


@pytest.fixture
def fresh(server, monkeypatch):
    """The shared server with no faults and no records; the fake key in the environment."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    server.reset()
    server.faults = None
    yield server
    server.faults = None


def _client(server, tmp_path, *, sleep=None, attempts=4, timeout=TIMEOUT, **kwargs):
    backend = OpenAIBackend(base_url=server.base_url, api_key_env=KEY_ENV, timeout=timeout)
    return LLMClient(
        backend,
        cache=tmp_path / "c.sqlite",
        call_log=tmp_path / "calls.jsonl",
        retry=RetryPolicy(max_attempts=attempts, base_delay=0.01, max_delay=0.05),
        prices=PRICES,
        sleep=sleep or RecordingSleep(),
        **kwargs,
    )


def _body(request: LLMRequest) -> dict:
    """The JSON body the SDK sends for a request (as the server parses it)."""
    body = {
        "model": request.model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        **request.params.to_json(),
    }
    if request.seed is not None:
        body["seed"] = request.seed
    return body


FAULTS = {
    "429+retry-after": (Fault.http(429, retry_after=0.01), "HTTP 429"),
    "500": (Fault.http(500), "HTTP 500"),
    "503": (Fault.http(503), "HTTP 503"),
    "408": (Fault.http(408), "HTTP 408"),
    "409": (Fault.http(409), "HTTP 409"),
    "timeout": (Fault.timeout(3.0), "timeout"),
    "malformed-json": (Fault.malformed(), "malformed response"),
    "truncated-body": (Fault.truncated(), "connection error"),
    "connection-drop": (Fault.drop(), "connection error"),
    "no-choices": (Fault.bad_shape(), "malformed response"),
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_each_fault_is_retried_then_answered(fresh, tmp_path, name):
    fault, message = FAULTS[name]
    fresh.faults = per_request_faults(lambda body: [fault])
    request = make_requests(1, tag=name)[0]
    timeout = SHORT_TIMEOUT if fault.kind == "timeout" else TIMEOUT
    with _client(fresh, tmp_path, timeout=timeout) as client:
        response = client.run([request])[0]
    assert response.ok, response.error
    assert response.attempts == 2
    assert response.text == default_answer(_body(request))
    assert [r.fault for r in fresh.requests] == [fault.kind, None]
    lines = read_call_log(tmp_path / "calls.jsonl")
    assert [x["status"] for x in lines] == ["retry", "ok"]
    assert message in lines[0]["error"]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.get(request, "openai").text == response.text


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry_after": "2"}, 2.0),
        ({"retry_after": "0.25"}, 0.25),
        ({"retry_after_ms": "1500"}, 1.5),
        ({"retry_after": "9", "retry_after_ms": "40"}, 0.04),
        ({"retry_after": "date"}, 30.0),
    ],
)
def test_retry_after_headers_are_honoured(fresh, tmp_path, headers, expected):
    if headers.get("retry_after") == "date":
        headers = {"retry_after": email.utils.formatdate(time.time() + 30, usegmt=True)}
    fresh.faults = fault_sequence([Fault.http(429, **headers)])
    sleep = RecordingSleep()
    with _client(fresh, tmp_path, sleep=sleep) as client:
        assert client.run(make_requests(1))[0].ok
    assert sleep.delays == [pytest.approx(expected, abs=1.5 if expected == 30.0 else 1e-9)]


def test_exhausted_retries_are_failures_and_the_batch_goes_on(fresh, tmp_path):
    doomed = {"q 2", "q 5"}
    fresh.faults = per_request_faults(
        lambda body: [Fault.http(503)] * 9 if body["messages"][-1]["content"] in doomed else []
    )
    requests = make_requests(8)
    with _client(fresh, tmp_path, attempts=3) as client:
        responses = client.run(requests)
    assert [r.ok for r in responses] == [i not in (2, 5) for i in range(8)]
    assert all(r.attempts == 3 and "HTTP 503" in r.error for r in responses if not r.ok)
    assert len(fresh.requests) == 6 + 2 * 3
    lines = read_call_log(tmp_path / "calls.jsonl")
    assert Counter(x["status"] for x in lines) == {"ok": 6, "retry": 4, "failed": 2}
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert len(cache) == 6


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(fresh, tmp_path, status):
    fresh.faults = per_request_faults(lambda body: [Fault.http(status)])
    with _client(fresh, tmp_path) as client:
        response = client.run(make_requests(1))[0]
    assert not response.ok and response.attempts == 1
    assert f"HTTP {status}" in response.error and "not retryable" in response.error
    assert len(fresh.requests) == 1


def test_the_request_body_and_headers(fresh, tmp_path):
    request = LLMRequest.chat(
        "gpt-4o-mini",
        "hello",
        system="be brief",
        role="rater",
        sample=3,
        seed=11,
        temperature=0.2,
        top_p=0.9,
        max_tokens=16,
        top_k=40,
        response_format={"type": "json_object"},
    )
    with _client(fresh, tmp_path) as client:
        response = client.run([request])[0]
    (received,) = fresh.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert received.body == _body(request)
    assert "sample" not in received.body and "role" not in received.body
    assert received.body["seed"] == 11 and received.body["top_k"] == 40
    assert response.model == "gpt-4o-mini" and response.finish_reason == "stop"
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0
    assert response.cost == pytest.approx(
        (response.usage.prompt_tokens * 0.15 + response.usage.completion_tokens * 0.60) / 1e6
    )


def test_many_concurrent_calls_with_random_faults_complete_exactly_once(fresh, tmp_path):
    kinds = [
        Fault.http(429, retry_after_ms=5),
        Fault.http(500),
        Fault.http(503),
        Fault.malformed(),
        Fault.truncated(),
        Fault.drop(),
        Fault.bad_shape(),
    ]
    fresh.faults = random_faults(0.3, kinds, seed=1, max_faulty_attempts=2)
    requests = make_requests(120)
    with _client(fresh, tmp_path, max_connections=16) as client:
        responses = client.run(requests)
        assert all(r.ok for r in responses), [r.error for r in responses if not r.ok]
        faulted = [r for r in fresh.requests if r.fault]
        assert 0 < len(faulted) < len(fresh.requests)
        # every body answered exactly once, faulty attempts aside
        answers = fresh.answers()
        assert sorted(answers) == sorted(body_key(_body(r)) for r in requests)
        assert set(answers.values()) == {1}
        fresh.reset()
        again = client.run(requests)
    assert all(r.cached for r in again) and fresh.requests == []
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert sorted(cache.keys()) == sorted(r.key for r in requests)


def test_connection_refused_is_a_recorded_failure(monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = OpenAIBackend(f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV, timeout=TIMEOUT)
    client = LLMClient(backend, retry=RetryPolicy(max_attempts=2), sleep=RecordingSleep())
    response = client.run(make_requests(1))[0]
    assert not response.ok and response.attempts == 2 and "connection error" in response.error


def test_configuration_errors(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(LLMConfigError, match=f"{KEY_ENV} .* is not set"):
        OpenAIBackend("http://127.0.0.1:1/v1", api_key_env=KEY_ENV)
    with pytest.raises(LLMConfigError, match="NAME of an environment variable") as info:
        OpenAIBackend("http://127.0.0.1:1/v1", api_key_env=FAKE_KEY)
    assert FAKE_KEY not in str(info.value)
    assert OpenAIBackend("http://127.0.0.1:1/v1", api_key_env=None).api_key_env is None


def test_repeated_samples_are_sent_as_separate_calls(fresh, tmp_path):
    """Samples share one HTTP body (the index is not sent) but are separate calls and entries."""
    requests = make_requests(1, samples=3)
    with _client(fresh, tmp_path) as client:
        responses = client.run(requests)
    assert all(r.ok and not r.cached for r in responses)
    assert len(fresh.requests) == 3 and len({r.body_key for r in fresh.requests}) == 1
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert len(cache) == 3
