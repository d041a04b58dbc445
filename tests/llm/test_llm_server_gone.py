"""A server that answered and then went away (crashed, was stopped) is reported as such, with
how many requests it answered, never as an address that cannot be reached; a reply cut off
mid-body says it was cut off. Only an endpoint that never answered or accepted a connection in
the run gets "cannot reach ... is the server running?"."""

from __future__ import annotations

import socket

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep, make_requests

from prefduel.llm import LLMClient, RetryPolicy
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import Fault, OpenAITestServer, fault_sequence

NOT_RUNNING = "is the server running"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


def _client(base_url: str, attempts: int = 2) -> LLMClient:
    backend = OpenAIBackend(base_url, api_key_env=KEY_ENV, timeout=5.0)
    return LLMClient(backend, retry=RetryPolicy(max_attempts=attempts), sleep=RecordingSleep())


def test_a_server_stopped_after_answering_is_reported_as_gone_with_its_answer_count():
    server = OpenAITestServer().start()
    url = server.base_url
    client = _client(url)
    try:
        assert all(r.ok for r in client.run(make_requests(3)))
    finally:
        server.stop()  # as a crash would: the port now refuses connections
    later = client.run(make_requests(2, tag="after the crash"))
    for response in later:
        assert not response.ok and response.error_kind == "connection" and response.retryable
        assert f"the server at {url} answered 3 requests and then stopped answering" in (
            response.error
        )
        assert "it may have crashed; check its log" in response.error
        assert "cannot reach" not in response.error and NOT_RUNNING not in response.error


def test_a_server_that_closes_the_connection_after_answering_is_reported_as_gone():
    # answered once, then the connection is closed without a reply (a crash mid-request)
    with OpenAITestServer(faults=fault_sequence([None, Fault.drop(), Fault.drop()])) as server:
        url = server.base_url
        client = _client(url)
        first = client.run(make_requests(1))[0]
        second = client.run(make_requests(1, tag="next"))[0]
    assert first.ok and not second.ok and second.error_kind == "connection"
    assert f"the server at {url} answered 1 request and then stopped answering" in second.error
    assert "closed the connection without a reply" in second.error
    assert "cannot reach" not in second.error


def test_a_truncated_reply_is_reported_as_cut_off_not_unreachable():
    faults = fault_sequence([Fault.truncated(), Fault.truncated()])
    with OpenAITestServer(faults=faults) as server:
        url = server.base_url
        response = _client(url).run(make_requests(1))[0]
    assert not response.ok and response.error_kind == "connection" and response.retryable
    assert f"the reply from {url} was cut off" in response.error
    assert "cannot reach" not in response.error and NOT_RUNNING not in response.error


def test_a_server_that_drops_its_first_request_and_then_refuses_is_not_called_unreachable():
    # the crash of the local-model server on its first completion: the connection is accepted,
    # closed without a reply, and the next attempt finds the port closed
    server = OpenAITestServer(faults=lambda request: Fault.drop()).start()
    url = server.base_url
    backend = OpenAIBackend(url, api_key_env=KEY_ENV, timeout=5.0)

    class StopAfterFirst(RecordingSleep):
        async def __call__(self, seconds: float) -> None:
            server.stop()
            await super().__call__(seconds)

    client = LLMClient(backend, retry=RetryPolicy(max_attempts=2), sleep=StopAfterFirst())
    try:
        response = client.run(make_requests(1))[0]
    finally:
        server.stop()
    assert len(server.requests) == 1 and not response.ok
    assert f"the server at {url} closed a connection without a reply" in response.error
    assert "it may have crashed; check its log" in response.error
    assert "cannot reach" not in response.error and NOT_RUNNING not in response.error


def test_an_endpoint_never_reached_still_asks_whether_the_server_runs():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    response = _client(url).run(make_requests(1))[0]
    assert f"cannot reach {url}" in response.error and NOT_RUNNING in response.error
