"""The API key is sent to the endpoint and appears nowhere else: files, messages, reprs, logs."""

from __future__ import annotations

import asyncio
import logging
import traceback

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep, files_containing, make_requests

from prefduel.llm import LLMCallError, LLMClient, ResponseCache, RetryPolicy
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import Fault, OpenAITestServer, per_request_faults

# the key, and its random part alone (a partly masked key must not leak either)
NEEDLES = (FAKE_KEY, FAKE_KEY.removeprefix("sk-pbtest-"))
PLANS = {
    "q 0": [Fault.http(401, echo_auth=True)],  # not retryable: the failure message echoes it
    "q 1": [Fault.http(500, echo_auth=True)] * 5,  # retried until exhausted
    "q 2": [Fault.http(429, retry_after=0, echo_auth=True)],  # retried, then answered
    "q 3": [Fault.drop(), Fault.truncated(), Fault.malformed()],
}


def _assert_clean(text: str) -> None:
    for needle in NEEDLES:
        assert needle not in text


def test_the_key_never_leaves_the_request(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    caplog.set_level(logging.DEBUG)
    faults = per_request_faults(lambda body: PLANS.get(body["messages"][-1]["content"], []))
    with OpenAITestServer(faults=faults) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=2.0)
        cache = ResponseCache(tmp_path / "cache.sqlite", store_requests=True)
        client = LLMClient(
            backend,
            cache=cache,
            call_log=tmp_path / "calls.jsonl",
            retry=RetryPolicy(max_attempts=4, base_delay=0.001),
            sleep=RecordingSleep(),
        )
        responses = client.run(make_requests(6))
        with pytest.raises(LLMCallError) as info:
            responses[0].unwrap()

        async def direct():
            try:
                return await backend.complete(make_requests(1, tag="direct")[0])
            finally:
                await backend.aclose()

        server.faults = per_request_faults(lambda body: [Fault.http(403, echo_auth=True)])
        with pytest.raises(LLMCallError) as direct_info:
            asyncio.run(direct())
        client.close()
        cache.close()
        received = server.requests

    # the key did reach the endpoint (so the checks below are meaningful) ...
    assert all(r.headers["authorization"] == f"Bearer {FAKE_KEY}" for r in received)
    # ... and the endpoint echoed it back in error bodies
    assert [r.ok for r in responses] == [False, False, True, True, True, True]
    assert "HTTP 401" in responses[0].error and "Bearer ***" in responses[0].error
    # nowhere on disk: cache database (+ WAL, SHM), call log
    assert sorted(p.name for p in tmp_path.iterdir()) >= ["cache.sqlite", "calls.jsonl"]
    for needle in NEEDLES:
        assert files_containing(tmp_path, needle) == []
    # not in messages, tracebacks, reprs or log records
    for response in responses:
        _assert_clean(repr(response))
    for exc in (info.value, direct_info.value):
        _assert_clean(str(exc))
        _assert_clean("".join(traceback.format_exception(exc)))
    assert direct_info.value.status == 403 and not direct_info.value.retryable
    _assert_clean(repr(backend) + repr(client) + repr(vars(backend)) + repr(vars(client)))
    _assert_clean("\n".join(r.getMessage() for r in caplog.records))


def test_missing_key_error_names_the_variable_not_a_value(monkeypatch):
    monkeypatch.setenv("PREFDUEL_SOME_OTHER_VAR", FAKE_KEY)
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(Exception, match=KEY_ENV) as info:
        OpenAIBackend("http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    _assert_clean(str(info.value))


def test_redaction_of_key_like_strings(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    backend = OpenAIBackend("http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    text = f"key={FAKE_KEY}; header 'Authorization: Bearer abc.def-123'; other sk-live1234567890"
    redacted = backend.redact(text)
    _assert_clean(redacted)
    assert "abc.def-123" not in redacted and "sk-live1234567890" not in redacted
    assert redacted.count("***") == 3
