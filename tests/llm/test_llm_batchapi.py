"""The Batch API protocol pieces: a line's body is what an online call sends, files are cut at
the limits, result lines read as online replies, and the price file's batch discount."""

from __future__ import annotations

import asyncio
import json

import pytest

from prefduel.llm import LLMClient, LLMRequest, Message
from prefduel.llm.batchapi import pack, read_line, request_line
from prefduel.llm.errors import PriceTableError
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.prices import load_prices
from prefduel.llm.testserver import OpenAITestServer


def _request(i: int, text: str = "hello") -> LLMRequest:
    return LLMRequest(
        model="gpt-4o-mini",
        messages=(Message("user", f"{text} {i}"),),
        params={"temperature": 0.7, "max_tokens": 5},
        seed=11,
        role="judge",
        sample=i,
    )


def test_a_line_carries_the_body_an_online_call_sends():
    request = _request(1)
    with OpenAITestServer() as server:
        with LLMClient(OpenAIBackend(server.base_url, api_key_env=None)) as client:
            assert client.complete_sync(request).ok
        (received,) = server.requests
    line = json.loads(request_line(request))
    assert line["custom_id"] == request.key and line["url"] == "/v1/chat/completions"
    assert line["body"] == received.body


def test_files_are_cut_at_the_request_and_byte_limits():
    requests = [_request(i) for i in range(7)]
    sizes = [len(request_line(r)) for r in requests]
    by_count = list(pack(requests, 3, 10**6))
    assert [len(group) for group, _ in by_count] == [3, 3, 1]
    assert b"".join(data for _, data in by_count) == b"".join(map(request_line, requests))
    by_bytes = list(pack(requests, 100, 2 * max(sizes)))
    assert all(len(data) <= 2 * max(sizes) for _, data in by_bytes)
    assert [len(group) for group, _ in by_bytes] == [2, 2, 2, 1]
    big = _request(0, "x" * 5000)
    alone = list(pack([big, requests[0]], 10, 4000))  # too large for any file: alone, no bytes
    assert alone == [([big], None), ([requests[0]], request_line(requests[0]))]


def test_result_lines_read_as_online_replies():
    request = _request(2)
    backend = OpenAIBackend("http://127.0.0.1:9/v1", api_key_env=None)
    body = {
        "model": "gpt-4o-mini-2024",
        "choices": [{"message": {"content": "A"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1},
    }

    lines = [
        {"custom_id": request.key, "response": {"status_code": 200, "body": body}},
        {"response": {"status_code": 429, "body": {"error": {"message": "slow"}}}},
        {"response": {"status_code": 401, "body": {}}},
        {"response": None, "error": {"code": "batch_expired", "message": "m"}},
    ]

    async def read_all():
        try:
            return [read_line(entry, request, backend, "batch_1") for entry in lines]
        finally:
            await backend.aclose()

    ok, busy, denied, late = asyncio.run(read_all())
    assert ok.ok and ok.text == "A" and ok.model == "gpt-4o-mini-2024"
    assert (ok.usage.prompt_tokens, ok.usage.completion_tokens) == (12, 1)
    assert not busy.ok and busy.status == 429 and busy.retryable and "slow" in busy.error
    assert not denied.ok and denied.retryable is False
    assert not late.ok and late.error_kind == "expired" and late.retryable


def test_the_batch_discount_comes_from_the_price_file(tmp_path):
    shipped = load_prices()
    assert shipped.batch_discount == 0.5
    assert shipped.batch_cost("gpt-4o-mini", 10**6, 0) == pytest.approx(0.15 / 2)
    own = tmp_path / "own.yaml"
    own.write_text("models: {my-model: {input: 1.0, output: 2.0}}\n")
    assert load_prices(own).batch_discount == 0.5  # the shipped discount stays
    own.write_text("batch_discount: 0.4\nmodels: {}\n")
    assert load_prices(own).batch_cost("gpt-4o-mini", 10**6, 0) == pytest.approx(0.15 * 0.6)
    for bad in ("1.0", "-0.1", "half", "true"):
        own.write_text(f"batch_discount: {bad}\nmodels: {{}}\n")
        with pytest.raises(PriceTableError, match="batch_discount must be a number in"):
            load_prices(own)
