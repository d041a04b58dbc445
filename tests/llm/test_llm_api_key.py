"""The API key is sent to the endpoint and appears nowhere else: files, messages, reprs, logs."""

from __future__ import annotations

import asyncio
import logging
import traceback

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep, files_containing, make_requests

from prefduel.llm import LLMCallError, LLMClient, ResponseCache, RetryPolicy
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import Fault, OpenAITestServer, default_answer, per_request_faults

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


# -- an endpoint that echoes the key inside SUCCESSFUL replies ------------------------------

ECHO_PLANS = {
    "e 0": Fault.echo("append"),
    "e 1": Fault.echo("prepend", model=True),
    "e 2": Fault.echo("replace"),
    "e 3": Fault.echo("append", model=True),
}
SCRUBBED_ECHO = "[echo Authorization: Bearer [REDACTED]; token: [REDACTED]]"


def _echo_faults(req):
    body = req.body if isinstance(req.body, dict) else {}
    return ECHO_PLANS.get(body.get("messages", [{}])[-1].get("content"))


def test_replies_that_echo_the_key_are_scrubbed_before_they_are_cached(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    requests = make_requests(4, tag="e")
    with OpenAITestServer(faults=_echo_faults) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5.0)
        cache = ResponseCache(tmp_path / "cache.sqlite", store_requests=True)
        with LLMClient(backend, cache=cache, call_log=tmp_path / "calls.jsonl") as client:
            responses = client.run(requests)
            hits = client.run(requests)  # from the cache
        cache.close()
        received = server.requests
        answers = server.answers()
    # the hostile endpoint did echo the key in 200 replies (so the checks below mean something)
    assert [r.fault for r in received] == ["echo"] * 4
    assert sum(answers.values()) == 4
    assert all(r.ok for r in responses + hits) and all(r.cached for r in hits)
    for response in responses + hits:
        _assert_clean(repr(response))
        assert SCRUBBED_ECHO in response.text
    # only the secret is replaced: the rest of the answer and model name are intact
    bodies = {r.body["messages"][-1]["content"]: r.body for r in received}
    by_tag = {r.request.messages[-1].content: r for r in responses}
    assert by_tag["e 0"].text == f"{default_answer(bodies['e 0'])} {SCRUBBED_ECHO}"
    assert by_tag["e 1"].text == f"{SCRUBBED_ECHO} {default_answer(bodies['e 1'])}"
    assert by_tag["e 2"].text == SCRUBBED_ECHO
    assert by_tag["e 3"].model == "gpt-4o-mini+[REDACTED]"
    assert [h.text for h in hits] == [r.text for r in responses]
    assert [h.model for h in hits] == [r.model for r in responses]
    # nowhere on disk: cache database (+ WAL, SHM), call log
    for needle in NEEDLES:
        assert files_containing(tmp_path, needle) == []


def test_a_custom_authorization_header_and_a_short_key_are_scrubbed(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k3y")
    with OpenAITestServer(faults=lambda req: Fault.echo("append", model=True)) as server:
        short = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5.0)
        custom = OpenAIBackend(
            server.base_url,
            api_key_env=None,
            timeout=5.0,
            headers={"Authorization": "Token custom-secret-42", "X-Title": "answer"},
        )

        async def both():
            request = make_requests(1, tag="short")[0]
            try:
                return [await short.complete(request), await custom.complete(request)]
            finally:
                await short.aclose()
                await custom.aclose()

        first, second = asyncio.run(both())
        received = server.requests
    assert received[0].headers["authorization"] == "Bearer k3y"
    assert received[1].headers["authorization"] == "Token custom-secret-42"
    for response in (first, second):
        assert "k3y" not in response.text + response.model
        assert "custom-secret-42" not in response.text + response.model
        assert response.text.startswith("answer ")  # non-secret header values are kept
    assert SCRUBBED_ECHO in first.text and first.model == "gpt-4o-mini+[REDACTED]"
    assert "[echo Authorization: [REDACTED]; token: [REDACTED]]" in second.text


def test_no_key_means_nothing_to_scrub(monkeypatch):
    """Local servers with no key get the placeholder key ``EMPTY``: not a secret, not scrubbed."""
    with OpenAITestServer(faults=lambda req: Fault.echo("append", model=True)) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=None, timeout=5.0)
        with LLMClient(backend) as client:
            (response,) = client.run(make_requests(1, tag="EMPTY"))
    assert response.ok and "[REDACTED]" not in response.text + response.model
    assert response.text.endswith("[echo Authorization: Bearer EMPTY; token: EMPTY]")
    assert response.model == "gpt-4o-mini+EMPTY" and "EMPTY 0" in response.text


def test_scrub_replaces_only_the_exact_secrets():
    from prefduel.llm.openai_backend import REDACTED, scrub

    text = f"use 'Authorization: Bearer <token>' or sk-live1234567890; yours is {FAKE_KEY}."
    # unlike error messages, answers keep key-like text that is not the secret itself
    assert scrub(text, [FAKE_KEY]) == (
        f"use 'Authorization: Bearer <token>' or sk-live1234567890; yours is {REDACTED}."
    )
    assert scrub(text, ["", None]) == text
    assert scrub("", [FAKE_KEY]) == "" and scrub(None, [FAKE_KEY]) is None
    # the longest secret first: a key that contains another secret is replaced whole
    assert scrub("x abc-def y", ["abc", "abc-def"]) == f"x {REDACTED} y"
