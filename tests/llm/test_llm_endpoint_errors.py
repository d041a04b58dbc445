"""Honest endpoint errors: the base URL, the server's own detail text, a hint at a missing /v1,
and which failures are permanent (re-running cannot fix them)."""

from __future__ import annotations

import socket

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep, make_requests

from prefduel.llm import LLMClient, RetryPolicy
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import Fault, OpenAITestServer, per_request_faults


def _run(base_url, *, attempts=2):
    backend = OpenAIBackend(base_url, api_key_env=KEY_ENV, timeout=5.0)
    client = LLMClient(backend, retry=RetryPolicy(max_attempts=attempts), sleep=RecordingSleep())
    return client.run(make_requests(1))[0]


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


def test_the_servers_detail_text_is_kept_and_the_base_url_named(key):
    fault = Fault.http(401, body={"detail": "Invalid API key"})
    with OpenAITestServer(faults=per_request_faults(lambda body: [fault])) as server:
        url = server.base_url
        response = _run(url)
    assert not response.ok and response.status == 401 and response.retryable is False
    assert "HTTP 401" in response.error and "Invalid API key" in response.error
    assert url in response.error and f"${KEY_ENV}" in response.error
    assert FAKE_KEY not in response.error


def test_a_fastapi_validation_detail_and_a_plain_text_body_are_kept(key):
    detail = {"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}
    faults = iter([Fault.http(422, body=detail), Fault.http(403, body="forbidden here")])
    plan = {}
    with OpenAITestServer(
        faults=per_request_faults(lambda body: plan.setdefault(body["messages"][0]["content"],
                                                               [next(faults)]))
    ) as server:
        first = _run(server.base_url)
        second = LLMClient(
            OpenAIBackend(server.base_url, api_key_env=KEY_ENV), sleep=RecordingSleep()
        ).run(make_requests(1, tag="other"))[0]
    assert "field required" in first.error and "body.messages" in first.error
    assert "forbidden here" in second.error


def test_a_404_without_v1_hints_at_the_missing_v1(key):
    # the test server, like llama-cpp-python's, answers 404 on paths other than its own
    with OpenAITestServer() as server:
        base = server.base_url.removesuffix("/v1") + "/api"
        response = _run(base)
    assert not response.ok and response.status == 404 and response.retryable is False
    assert base in response.error and f"{base}/v1" in response.error


def test_a_404_with_v1_gives_no_v1_hint(key):
    with OpenAITestServer(faults=per_request_faults(lambda body: [Fault.http(404)])) as server:
        response = _run(server.base_url)
    assert response.status == 404 and "usually ends in /v1" not in response.error


def test_connection_refused_names_the_url(key):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    response = _run(url)
    assert not response.ok and response.error_kind == "connection"
    assert url in response.error and "connection error" in response.error
