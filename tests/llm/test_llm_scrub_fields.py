"""A hostile endpoint that plants the API key in any part of a reply (text, model, finish
reason, logprobs that were not asked for, usage, ids, or the error a reply without content
makes) gets it written nowhere: not in the response, the cache or the call log."""

from __future__ import annotations

import dataclasses

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, files_containing, make_requests

from prefduel.llm import LLMClient, ResponseCache, RetryPolicy, TokenLogprob
from prefduel.llm.openai_backend import REDACTED, OpenAIBackend
from prefduel.llm.request import LLMResponse, Usage
from prefduel.llm.testserver import Fault, OpenAITestServer

NEEDLES = (FAKE_KEY, FAKE_KEY.removeprefix("sk-pbtest-"))
#: Each part of a reply, and the echo fault that plants the key there.
PLANTED = {
    "text": Fault.echo("append"),
    "model": Fault.echo("append", model=True),
    "finish_reason": Fault.echo("append", fields=("finish_reason",)),
    "logprobs": Fault.echo("append", fields=("logprobs",)),
    "usage": Fault.echo("append", fields=("usage",)),
    "ids": Fault.echo("append", fields=("ids",)),
    "error": Fault.echo("append", fields=("null_content",)),
}


def _run(tmp_path, fault: Fault):
    with OpenAITestServer(faults=lambda req: fault) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5.0)
        cache = ResponseCache(tmp_path / "cache.sqlite", store_requests=True)
        with LLMClient(
            backend,
            cache=cache,
            call_log=tmp_path / "calls.jsonl",
            retry=RetryPolicy(max_attempts=2, base_delay=0.001),
        ) as client:
            (response,) = client.run(make_requests(1, tag="hostile"))
            (hit,) = client.run(make_requests(1, tag="hostile"))
        cache.close()
        received = server.requests
    return response, hit, received


@pytest.mark.parametrize("part", PLANTED)
def test_a_key_planted_in_any_part_of_a_reply_is_written_nowhere(tmp_path, monkeypatch, part):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    response, hit, received = _run(tmp_path, PLANTED[part])
    # the endpoint did send the key back (so the checks below mean something)
    assert received and all(r.fault == "echo" for r in received)
    for needle in NEEDLES:
        assert needle not in repr(response) and needle not in repr(hit)
        assert files_containing(tmp_path, needle) == []  # cache (+ WAL, SHM) and call log
    if part == "error":
        assert not response.ok and "finish_reason" in response.error
        assert "***" in response.error  # error messages are redacted
        return
    assert response.ok and hit.cached
    value = {
        "text": response.text,
        "model": response.model,
        "finish_reason": response.finish_reason,
        "logprobs": repr(response.logprobs),
        "usage": repr(response.usage),
        "ids": response.text,
    }[part]
    if part not in ("usage", "ids"):  # usage keeps its counts (text is not a count), ids are
        assert REDACTED in value      # not kept at all
        assert REDACTED in {"text": hit.text, "model": hit.model,
                            "finish_reason": hit.finish_reason,
                            "logprobs": repr(hit.logprobs)}[part]


def test_scrub_reply_covers_every_string_of_a_reply():
    """One function over the whole reply: every string field, nested ones included, the
    request (what was sent) left alone."""
    from prefduel.llm.openai_backend import scrub_reply

    request = make_requests(1, tag=f"mentions {FAKE_KEY}")[0]
    secret = f"k {FAKE_KEY} k"
    reply = LLMResponse(
        request=request,
        text=secret,
        model=secret,
        finish_reason=secret,
        usage=Usage(3, 4),
        error=secret,
        error_kind=secret,
        logprobs=(TokenLogprob(secret, -0.1, ((secret, -0.1), ("B", -2.0))),),
    )
    clean = scrub_reply(reply, [FAKE_KEY])
    assert clean.request is request
    strings = []
    for f in dataclasses.fields(clean):
        if f.name != "request":
            strings.append(repr(getattr(clean, f.name)))
    assert FAKE_KEY not in " ".join(strings)
    assert clean.text == clean.model == clean.finish_reason == clean.error == f"k {REDACTED} k"
    assert clean.logprobs == (TokenLogprob(f"k {REDACTED} k", -0.1,
                                           ((f"k {REDACTED} k", -0.1), ("B", -2.0))),)
    assert clean.usage == Usage(3, 4)
    # every field of the reply is visited: a new string field is covered without a change here
    assert {f.name for f in dataclasses.fields(LLMResponse)} >= {
        "text", "model", "finish_reason", "usage", "error", "logprobs"}


def test_an_unexpected_failure_that_quotes_the_key_is_redacted(tmp_path, monkeypatch):
    """A reply the backend cannot handle at all (here: its parser raises, quoting the key): the
    failure recorded in the response and the call log is redacted too."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)

    def broken(self, request, completion):
        raise ValueError(f"cannot read a reply that says {FAKE_KEY}")

    monkeypatch.setattr(OpenAIBackend, "_parse", broken)
    response, _, received = _run(tmp_path, Fault.echo("append"))
    assert received and not response.ok and "ValueError" in response.error
    for needle in NEEDLES:
        assert needle not in response.error
        assert files_containing(tmp_path, needle) == []
