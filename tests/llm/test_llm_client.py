"""The client: cache hits, retries, failures, concurrency, costs, budget and the call log."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from pb_llm_helpers import FlakyBackend, RecordingSleep, make_requests, transient

from prefduel.llm import (
    CallLog,
    LLMCallError,
    LLMClient,
    LLMRequest,
    ModelPrice,
    PriceTable,
    RequestError,
    ResponseCache,
    RetryPolicy,
    ScriptedBackend,
    UnknownModelPriceWarning,
    Usage,
    estimate_cost,
    read_call_log,
)

PRICES = PriceTable({"gpt-4o-mini": ModelPrice(input=1.0, output=2.0)}, source="test")
FAST = RetryPolicy(max_attempts=4, base_delay=0.5, multiplier=2.0, max_delay=3.0, jitter=0.25)


def _client(backend, tmp_path, **kwargs):
    kwargs.setdefault("prices", PRICES)
    kwargs.setdefault("retry", FAST)
    kwargs.setdefault("sleep", RecordingSleep())
    return LLMClient(
        backend, cache=tmp_path / "c.sqlite", call_log=tmp_path / "calls.jsonl", **kwargs
    )


def test_hits_cost_nothing_and_are_not_sent(tmp_path):
    backend = FlakyBackend(usage=Usage(1000, 500))
    requests = make_requests(4, samples=2)
    with _client(backend, tmp_path) as client:
        first = client.run(requests)
        second = client.run(requests)
        stats = client.stats()
    assert [r.text for r in first] == [r.text for r in second]
    assert all(not r.cached for r in first) and all(r.cached for r in second)
    assert sum(backend.attempts.values()) == 8  # each once, never again
    # 1000 input tokens at 1.0 + 500 output tokens at 2.0 per million
    assert all(r.cost == pytest.approx(0.002) for r in first)
    assert all(r.cost == 0 and r.usage == Usage(1000, 500) for r in second)
    assert stats.cost == pytest.approx(8 * 0.002)
    assert (stats.requests, stats.hits, stats.answered, stats.attempts) == (16, 8, 8, 8)
    assert (stats.prompt_tokens, stats.completion_tokens) == (8000, 4000)


def test_retries_then_success_with_backoff_and_jitter(tmp_path):
    backend = FlakyBackend(lambda r: [transient(503), transient(None), transient(500)])
    sleep = RecordingSleep()
    request = make_requests(1)[0]
    with _client(backend, tmp_path, sleep=sleep) as client:
        response = client.run([request])[0]
    assert response.ok and response.attempts == 4 and not response.cached
    # backoff 0.5, 1.0, 2.0, each reduced by at most 25% jitter
    for delay, nominal in zip(sleep.delays, (0.5, 1.0, 2.0), strict=True):
        assert 0.75 * nominal <= delay <= nominal
    # the jitter is a pure function of (seed, key, attempt): the same again
    assert [FAST.delay(n, key=request.key) for n in (1, 2, 3)] == sleep.delays
    assert FAST.delay(9, key=request.key) <= FAST.max_delay


def test_retry_after_is_honoured(tmp_path):
    backend = FlakyBackend(lambda r: [transient(429, retry_after=7.5), transient(429, 0.0)])
    sleep = RecordingSleep()
    with _client(backend, tmp_path, sleep=sleep) as client:
        assert client.run(make_requests(1))[0].ok
    assert sleep.delays == [7.5, 0.0]
    capped = RetryPolicy(max_retry_after=2.0)
    assert capped.delay(1, retry_after=3600) == 2.0


def test_exhausted_retries_are_recorded_not_fatal_and_retried_on_rerun(tmp_path):
    bad = {"q 1", "q 3"}
    backend = FlakyBackend(lambda r: [transient(503)] * 4 if r.messages[-1].content in bad else [])
    requests = make_requests(5)
    with _client(backend, tmp_path) as client:
        responses = client.run(requests)
        assert [r.ok for r in responses] == [True, False, True, False, True]
        failed = responses[1]
        assert failed.text is None and failed.attempts == 4 and "HTTP 503" in failed.error
        with pytest.raises(LLMCallError, match="failed after 4 attempt"):
            failed.unwrap()
        assert client.stats().failed == 2
        # re-run: the three answers are hits, the two failures are sent again (and now succeed)
        again = client.run(requests)
    assert all(r.ok for r in again)
    assert [r.cached for r in again] == [True, False, True, False, True]
    assert backend.attempts[requests[1].key] == 5 and backend.attempts[requests[0].key] == 1
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert len(cache) == 5


def test_permanent_errors_and_backend_bugs_are_not_retried(tmp_path):
    plans = {
        "q 0": [LLMCallError("HTTP 400: bad request", kind="http", status=400, retryable=False)],
        "q 1": [ZeroDivisionError("bug in the backend")],
    }
    backend = FlakyBackend(lambda r: plans.get(r.messages[-1].content, []))
    requests = make_requests(3)
    with _client(backend, tmp_path) as client:
        responses = client.run(requests)
    assert [r.ok for r in responses] == [False, False, True]
    assert "HTTP 400" in responses[0].error and "not retryable" in responses[0].error
    assert "ZeroDivisionError: bug in the backend" in responses[1].error
    assert backend.attempts[requests[0].key] == backend.attempts[requests[1].key] == 1


def test_concurrency_is_bounded(tmp_path):
    backend = FlakyBackend(latency=0.01)
    with _client(backend, tmp_path, max_connections=5) as client:
        responses = client.run(make_requests(60))
    assert all(r.ok for r in responses)
    assert backend.max_in_flight == 5


def test_identical_requests_in_flight_are_sent_once(tmp_path):
    backend = FlakyBackend(latency=0.02)
    request = make_requests(1)[0]
    twin = LLMRequest.chat("gpt-4o-mini", "q 0", role="judge", temperature=1, max_tokens=8.0)
    with _client(backend, tmp_path) as client:
        responses = client.run([request, twin, request])
        stats = client.stats()
    assert backend.attempts[request.key] == 1
    assert len({r.text for r in responses}) == 1
    assert sum(r.cost for r in responses) == pytest.approx(responses[0].cost)
    assert stats.requests == 3 and stats.answered == 1


def test_budget_cap_stops_sending(tmp_path):
    backend = FlakyBackend(usage=Usage(1_000_000, 0))  # 1.0 per call
    with _client(backend, tmp_path, max_connections=1, budget=2.5) as client:
        responses = client.run(make_requests(5))
    assert [r.ok for r in responses] == [True, True, True, False, False]
    assert "budget of 2.5 USD reached" in responses[3].error
    assert sum(backend.attempts.values()) == 3
    skipped = [
        line for line in read_call_log(tmp_path / "calls.jsonl") if line["status"] == "skipped"
    ]
    assert len(skipped) == 2


@pytest.mark.parametrize(("connections", "most"), [(1, 3), (3, 5)])
def test_budget_cap_holds_for_calls_queued_behind_slow_ones(tmp_path, connections, most):
    """Calls waiting for a connection check the budget when they get one: with one connection
    exactly the calls that fit are sent; with more, only those already in flight overshoot."""
    backend = FlakyBackend(latency=0.01, usage=Usage(1_000_000, 0))  # 1.0 per call
    with _client(backend, tmp_path, max_connections=connections, budget=2.5) as client:
        responses = client.run(make_requests(20))
    sent = sum(backend.attempts.values())
    assert 3 <= sent <= most
    assert sum(r.ok for r in responses) == sent
    assert all("budget of 2.5 USD reached" in r.error for r in responses if not r.ok)


def test_call_log_lines(tmp_path):
    backend = FlakyBackend(lambda r: [transient(429, retry_after=1.0)] if r.sample == 0 else [])
    requests = make_requests(1, samples=2)
    with _client(backend, tmp_path) as client:
        client.run(requests)
        client.run(requests[:1])
    lines = read_call_log(tmp_path / "calls.jsonl")
    assert sorted((x["status"], x["sample"], x["attempt"]) for x in lines[:3]) == [
        ("ok", 0, 2),
        ("ok", 1, 1),
        ("retry", 0, 1),
    ]
    retry = next(x for x in lines if x["status"] == "retry")
    assert retry["http_status"] == 429 and retry["retry_in"] == 1.0 and "HTTP 429" in retry["error"]
    ok = next(x for x in lines if x["status"] == "ok" and x["sample"] == 0)
    assert ok["key"] == requests[0].key and ok["role"] == "judge" and ok["model"] == "gpt-4o-mini"
    assert ok["cached"] is False and ok["cost"] == pytest.approx(20 / 1e6)
    assert (ok["prompt_tokens"], ok["completion_tokens"]) == (10, 5) and ok["latency"] >= 0
    hit = lines[-1]
    assert hit["status"] == "hit" and hit["cached"] is True and hit["cost"] == 0
    assert all(x["namespace"] == "flaky" and x["time"].endswith("Z") for x in lines)


def test_unknown_models_cost_zero_with_one_warning(tmp_path):
    backend = FlakyBackend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _client(backend, tmp_path) as client:
            responses = client.run(make_requests(5, model="my-local-model"))
    assert all(r.ok and r.cost == 0 for r in responses)
    unknown = [w for w in caught if issubclass(w.category, UnknownModelPriceWarning)]
    assert len(unknown) == 1 and "my-local-model" in str(unknown[0].message)


def test_scripted_answers_are_free(tmp_path):
    with _client(ScriptedBackend(), tmp_path) as client:
        responses = client.run(make_requests(3))
    assert all(r.ok and r.cost == 0 and r.usage.prompt_tokens > 0 for r in responses)


def test_async_api_callback_and_sync_inside_a_running_loop(tmp_path):
    seen = []
    requests = make_requests(10)

    async def main():
        async with _client(FlakyBackend(), tmp_path) as client:
            responses = await client.complete_many(requests, on_result=seen.append, window=3)
            single = await client.complete(requests[0])
            sync_in_loop = client.complete_sync(requests[1])  # runs on a worker thread
            return responses, single, sync_in_loop

    responses, single, sync_in_loop = asyncio.run(main())
    assert [r.request for r in responses] == requests
    assert sorted(r.key for r in seen) == sorted(r.key for r in requests)
    assert single.cached and sync_in_loop.cached


def test_attempt_timeout(tmp_path):
    backend = FlakyBackend(latency=1.0)
    policy = RetryPolicy(max_attempts=2)
    with _client(backend, tmp_path, attempt_timeout=0.05, retry=policy) as client:
        response = client.run(make_requests(1))[0]
    assert (
        not response.ok and response.attempts == 2 and "no answer within 0.05 s" in response.error
    )


def test_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="max_connections"):
        LLMClient(FlakyBackend(), max_connections=0)
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(RequestError, match="expected an LLMRequest"):
        LLMClient(FlakyBackend(), prices=PRICES).complete_sync("hello")  # type: ignore[arg-type]


def test_call_log_refuses_unknown_fields(tmp_path):
    log = CallLog(tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="unknown fields"):
        log.write({"prompt": "secret"})


def test_dry_run_estimate(tmp_path):
    requests = make_requests(4)  # max_tokens=8
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with _client(FlakyBackend(), tmp_path) as client:
            client.run(requests[:1])
        estimate = estimate_cost(requests, prices=PRICES, cache=cache, namespace="flaky")
    assert (estimate.calls, estimate.cached, estimate.to_send) == (4, 1, 3)
    assert estimate.completion_tokens == 3 * 8 and estimate.prompt_tokens == 3
    assert estimate.cost == pytest.approx((3 * 1.0 + 24 * 2.0) / 1e6)
    unpriced = estimate_cost(make_requests(2, model="x"), prices=PRICES, completion_tokens=100)
    assert unpriced.unpriced_models == ("x",) and unpriced.completion_tokens == 200
