"""The stage engine: malformed replies asked again in waves, failures and budget stops recorded
(never raised), dry runs from the cache, resume with earlier spend priced, one-item asks,
bounded work on items, progress bars."""

from __future__ import annotations

import asyncio

import pytest
from pb_llm_helpers import FlakyBackend, make_requests

from prefduel.llm import LLMClient, LLMRequest, ResponseCache, ScriptedBackend, load_prices
from prefduel.llm.stages import (
    FAILED,
    MALFORMED,
    CacheSender,
    ClientSender,
    ProgressBar,
    Stage,
    StageEngine,
    StageReport,
    ask,
    each,
)


def _number_stage(tries: int = 3) -> Stage[int]:
    """Item n asks "n" at sample = tries so far; the reply parses when it is an integer."""
    return Stage(
        "numbers",
        request=lambda n, previous: LLMRequest.chat("m", str(n), role="num", sample=len(previous)),
        parse=lambda n, text: int(text) if text.isdigit() else None,
        placeholder=lambda n: -1,
        describe=lambda n: {"item": f"n{n}"},
        tries=tries,
    )


def _replier(request: LLMRequest) -> str:
    """Item n answers "n" from sample n % 3 on (item 0 at once, item 2 on its third try) and
    "??" before that."""
    n = int(request.messages[-1].content)
    return str(n) if request.sample >= n % 3 else "??"


def _run(engine: StageEngine, stage: Stage, items: list) -> list:
    return asyncio.run(engine.run(stage, items))


def test_malformed_replies_are_asked_again_in_waves_and_recorded(tmp_path):
    client = LLMClient(ScriptedBackend({"num": _replier}), cache=tmp_path / "c.sqlite")
    engine = StageEngine(ClientSender(client))
    with client:
        outcomes = _run(engine, _number_stage(tries=2), [0, 1, 2, 3])
    assert [o.value for o in outcomes] == [0, 1, MALFORMED, 3]
    assert [o.tries for o in outcomes] == [1, 2, 2, 1]
    assert outcomes[2].replies == ("??", "??") and outcomes[1].replies == ("??",)
    assert outcomes[2].request.sample == 1
    report = engine.reports["numbers"]
    counts = (report.calls, report.sent, report.malformed, report.retried, report.unusable)
    assert counts == (6, 6, 3, 2, 1)  # 4 first tries + 2 retries
    assert [(m["item"], m["sample"], m["try"], m["text"]) for m in engine.malformed] == [
        ("n1", 0, 0, "??"),
        ("n2", 0, 0, "??"),
        ("n2", 1, 1, "??"),
    ]
    assert engine.failures == []


def test_a_fallback_replaces_the_malformed_marker():
    stage = Stage(
        "s",
        request=lambda item, previous: LLMRequest.chat("m", item, role="x", sample=len(previous)),
        parse=lambda item, text: None,
        fallback=lambda item, replies: f"gave up after {len(replies)}",
        tries=3,
    )
    client = LLMClient(ScriptedBackend({"x": lambda r: "no"}))
    outcome = asyncio.run(ask(stage, "q", client))
    assert outcome.value == "gave up after 3" and outcome.tries == 3


def test_failed_calls_are_recorded_not_raised(tmp_path):
    def handler(request):
        if request.messages[-1].content == "1":
            raise RuntimeError("down")
        return request.messages[-1].content

    client = LLMClient(ScriptedBackend({"num": handler}), cache=tmp_path / "c.sqlite")
    engine = StageEngine(ClientSender(client))
    with client:
        outcomes = _run(engine, _number_stage(), [0, 1, 2])
    assert [o.value for o in outcomes] == [0, FAILED, 2]
    assert outcomes[1].failed and "RuntimeError: down" in outcomes[1].error
    assert [(f["stage"], f["item"], f["sample"]) for f in engine.failures] == [
        ("numbers", "n1", 0)
    ]
    assert "RuntimeError: down" in engine.failures[0]["error"]
    assert engine.reports["numbers"].failed == 1


def test_a_budget_stop_fails_the_calls_not_sent():
    client = LLMClient(FlakyBackend(), budget=0.0, max_connections=1)
    stage = Stage("s", request=lambda request, previous: request)
    engine = StageEngine(ClientSender(client))
    outcomes = _run(engine, stage, make_requests(3))
    assert all(o.failed and "budget of 0 USD reached" in o.error for o in outcomes)
    assert client.stats().attempts == 0 and len(engine.failures) == 3


def test_a_rerun_is_served_from_the_cache_and_prices_what_earlier_runs_paid(tmp_path):
    requests = make_requests(5)
    stage = Stage("s", request=lambda request, previous: request)
    reports = []
    for _ in range(2):
        client = LLMClient(FlakyBackend(), cache=tmp_path / "c.sqlite")
        engine = StageEngine(ClientSender(client))
        with client:
            _run(engine, stage, [*requests, requests[0]])  # one request asked twice
        reports.append(engine.reports["s"])
    first, second = reports
    assert (first.sent, first.cached, second.sent, second.cached) == (5, 1, 0, 6)
    assert first.cost == pytest.approx(load_prices().cost("gpt-4o-mini", 50, 25))
    assert second.cost == 0 and second.earlier_cost == pytest.approx(first.cost)


def test_a_dry_run_reads_the_cache_only_and_estimates_the_rest(tmp_path):
    path = tmp_path / "c.sqlite"
    client = LLMClient(ScriptedBackend({"num": _replier}), cache=path)
    with client:
        _run(StageEngine(ClientSender(client)), _number_stage(tries=1), [0, 3])
    with ResponseCache(path) as cache:
        sender = CacheSender(cache, "scripted", load_prices(), billable=True, completion={"num": 7})
        engine = StageEngine(sender)
        outcomes = _run(engine, _number_stage(tries=1), [0, 3, 4, 5])
        assert len(cache) == 2  # nothing was sent
    assert [o.value for o in outcomes] == [0, 3, -1, -1]
    estimate = sender.estimate("numbers")
    assert (estimate.calls, estimate.cached, estimate.to_send) == (4, 2, 2)
    assert estimate.completion_tokens == 14 and estimate.unpriced == ("m",)


def test_batches_go_to_the_sender_in_chunks():
    sizes = []

    class Recording:
        def start(self, report, total):
            pass

        def grow(self, n):
            pass

        def finish(self, report):
            pass

        async def send(self, report, requests):
            sizes.append(len(requests))
            return [None] * len(requests)

    engine = StageEngine(Recording(), chunk=2)
    outcomes = _run(engine, _number_stage(), list(range(5)))
    assert sizes == [2, 2, 1] and [o.value for o in outcomes] == [-1] * 5


def test_ask_works_with_any_completer_and_passes_the_earlier_replies():
    seen = []

    class Plain:  # complete() only: no complete_many, no prices
        async def complete(self, request):
            seen.append(request)
            return await ScriptedBackend({"x": lambda r: f"reply {r.sample}"}).complete(request)

    stage = Stage(
        "s",
        request=lambda item, previous: LLMRequest.chat(
            "m", item + "".join(f" / {p}" for p in previous), role="x", sample=len(previous)
        ),
        parse=lambda item, text: text if text.endswith("2") else None,
        tries=3,
    )
    outcome = asyncio.run(ask(stage, "q", Plain()))
    assert outcome.value == "reply 2" and outcome.tries == 3
    assert [r.messages[-1].content for r in seen] == ["q", "q / reply 0", "q / reply 0 / reply 1"]


def test_each_bounds_the_items_in_flight_and_reports_progress():
    in_flight = peak = 0
    progress = []

    async def work(item):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001 * (item % 3))
        in_flight -= 1

    asyncio.run(
        each(list(range(10)), work, in_flight=3, progress=lambda d, t: progress.append((d, t)))
    )
    assert peak == 3 and progress == [(d, 10) for d in range(1, 11)]


def test_progress_bars_go_to_stderr_and_exist_only_once_shown(capsys):
    bar = ProgressBar("episodes", "episode")
    bar.close()  # never shown: nothing drawn
    assert capsys.readouterr().err == ""
    bar.show(2, 4, cost="0.1")
    bar.show(4, 4, cost="0.2")
    bar.close()
    err = capsys.readouterr().err
    assert "episodes: 100%" in err and "4/4" in err and "cost=0.2" in err
    quiet = ProgressBar("x", "call", enabled=False)
    quiet.show(1, 1)
    quiet.close()
    assert capsys.readouterr().err == ""


def test_a_client_sender_draws_one_bar_per_stage(capsys):
    client = LLMClient(ScriptedBackend({"num": _replier}))
    sender = ClientSender(client, progress=True)
    engine = StageEngine(sender)

    async def main():
        engine.start("numbers", 2)
        await engine.run(_number_stage(), [0, 1])
        engine.finish("numbers")

    asyncio.run(main())
    err = capsys.readouterr().err
    assert "numbers  : 100%" in err and "3/3" in err and "malformed=1" in err
    assert engine.reports["numbers"].seconds > 0


def test_reports_add_up_and_stages_need_a_try():
    total = StageReport.total([StageReport("a", calls=2, cost=0.5), StageReport("b", calls=3)])
    assert (total.stage, total.calls, total.cost) == ("total", 5, 0.5)
    with pytest.raises(ValueError, match="tries"):
        Stage("s", request=lambda item, previous: item, tries=0)
