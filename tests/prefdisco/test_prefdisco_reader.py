"""What a careful reader of a PrefDisco result needs (issue 17, part 5): malformed ask replies
recorded as such, raw ask text and finish reasons kept, cost per episode, model and condition,
a warning when judge failures drop instances, and offline reports that say what they test."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from pb_prefdisco_helpers import run_cli, tiny_study

from prefduel.llm import LLMClient, ScriptedBackend, read_call_log
from prefduel.llm.prices import ModelPrice, PriceTable
from prefduel.prefdisco import (
    ReportConfig,
    RoleClients,
    build_report,
    default_handlers,
    run_study,
)
from prefduel.prefdisco.episode.prompts import ASK_FORMAT
from prefduel.prefdisco.report.build import render_markdown
from prefduel.prefdisco.report.render import OFFLINE_NOTE


def _rows(folder, name):
    return [json.loads(x) for x in (folder / name).read_text().splitlines()]


def _run(dataset, config, folder, handlers, **client):
    backend = LLMClient(ScriptedBackend(handlers), **client)
    with backend:
        return run_study(dataset, config.run, RoleClients.single(backend), folder)


def test_an_ask_reply_that_is_neither_a_question_nor_ready_is_malformed(tmp_path):
    config, dataset = tiny_study(tmp_path, instances=1, conditions=("discovery",))
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    seen = []

    def answers_at_once(request):
        seen.append(request)
        return "The answer is 35, because 5 x 7 = 35."

    handlers["ask"] = answers_at_once
    _run(dataset, config, tmp_path / "run", handlers)
    (transcript,) = _rows(tmp_path / "run", "transcripts.jsonl")
    assert transcript["stop"] == "malformed" and transcript["turns"] == []  # not READY
    assert [a["read"] for a in transcript["asks"]] == ["malformed"] * 2  # asked once more
    assert transcript["asks"][0]["text"] == "The answer is 35, because 5 x 7 = 35."
    assert transcript["asks"][0]["finish_reason"] == "stop"
    assert [r.sample for r in seen] == [0, 1] and ASK_FORMAT in seen[1].messages[-1].content
    (score,) = _rows(tmp_path / "run", "scores.jsonl")
    assert score["stop"] == "malformed"
    model = build_report([score])["models"][0]
    assert model["ask_phase"]["stops"] == {"malformed": 1}
    assert "discovery stopped: malformed 1" in render_markdown(build_report([score]))


def test_a_reformatted_reply_continues_the_phase(tmp_path):
    config, dataset = tiny_study(tmp_path, instances=1, conditions=("discovery",))
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    scripted = handlers["ask"]
    handlers["ask"] = lambda r: scripted(r) if r.sample else "Let me think about the user."
    _run(dataset, config, tmp_path / "run", handlers)
    (transcript,) = _rows(tmp_path / "run", "transcripts.jsonl")
    assert transcript["stop"] == "ready" and len(transcript["turns"]) == 3
    reads = [a["read"] for a in transcript["asks"]]
    assert reads == ["malformed", "question"] * 3 + ["malformed", "ready"]


class _CutAsks:
    """Reports every ask-phase answer as cut by the token limit."""

    def __init__(self, client):
        self.client = client
        self.prices = client.prices

    async def complete(self, request):
        response = await self.client.complete(request)
        if request.role == "ask":
            response = dataclasses.replace(response, finish_reason="length")
        return response


def test_finish_reasons_are_kept_and_summarised(tmp_path):
    config, dataset = tiny_study(tmp_path, instances=2)
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    client = LLMClient(ScriptedBackend(handlers))
    with client:
        run_study(dataset, config.run, RoleClients.single(_CutAsks(client)), tmp_path / "run")
    transcripts = _rows(tmp_path / "run", "transcripts.jsonl")
    asks = [a for t in transcripts for a in t["asks"]]
    assert asks and {a["finish_reason"] for a in asks} == {"length"}
    scores = _rows(tmp_path / "run", "scores.jsonl")
    discovery = [s for s in scores if s["condition"] == "discovery"]
    # 3 asks, READY, and the follow-up check's ask with the first reply altered
    assert all(s["finish_reasons"]["ask"] == {"length": 5} for s in discovery)
    assert all(s["finish_reasons"]["answer"] == {"stop": 1} for s in scores)
    md = render_markdown(build_report(scores))
    assert "finish reasons: answer: stop 6; ask: length 10; judge: stop" in md


PRICES = PriceTable({"scripted-ask3": ModelPrice(1.0, 4.0), "scripted-judge": ModelPrice(0.5, 2.0)})


def test_cost_per_episode_model_and_condition(tmp_path):
    config, dataset = tiny_study(tmp_path, instances=2)
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    folder = tmp_path / "run"
    cache, log = tmp_path / "c.sqlite", folder / "llm-calls.jsonl"
    _run(dataset, config, folder, handlers, prices=PRICES, cache=cache, call_log=log)
    transcripts = {t["episode_id"]: t for t in _rows(folder, "transcripts.jsonl")}
    scores = _rows(folder, "scores.jsonl")
    logged = {r["key"] for r in read_call_log(log)}
    for s in scores:
        calls = transcripts[s["episode_id"]]["calls"] + s["calls"]
        assert {c["key"] for c in calls} <= logged  # joinable to the call log
        for c in calls:
            price = PRICES.lookup(c["model"])
            expected = price.cost(c["prompt_tokens"], c["completion_tokens"])
            assert abs(c["cost"] - expected) < 1e-9
        assert s["usage"]["calls"] == len(calls) > 0
        assert abs(s["usage"]["cost"] - sum(c["cost"] for c in calls)) < 1e-9
    report = build_report(scores)
    usage = {u["condition"]: u for u in report["models"][0]["usage"]}
    assert set(usage) == {"baseline", "discovery", "oracle"}
    disc = [s for s in scores if s["condition"] == "discovery"]
    assert abs(usage["discovery"]["cost"] - sum(s["usage"]["cost"] for s in disc)) < 1e-9
    assert usage["discovery"]["calls"] > usage["baseline"]["calls"]  # the questions cost
    assert "scripted-ask3: calls and cost per condition" in render_markdown(report)
    # a resumed run, every answer from the cache, prices the episodes the same
    before = (folder / "scores.jsonl").read_text()
    (folder / "scores.jsonl").write_text("".join(before.splitlines(keepends=True)[:-2]))
    _run(dataset, config, folder, handlers, prices=PRICES, cache=cache, call_log=log)
    assert (folder / "scores.jsonl").read_text() == before


def _half_unreadable(judge):
    """The judge's replies: unreadable for half of the requests (by the request's key)."""

    def handler(request):
        unreadable = int(hashlib.sha256(request.key.encode()).hexdigest(), 16) % 2
        return "hmm" if unreadable else judge(request)

    return handler


def test_judge_failures_that_drop_instances_are_warned_about(tmp_path):
    config, dataset = tiny_study(tmp_path, instances=6)
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    handlers["judge"] = _half_unreadable(handlers["judge"])
    _run(dataset, config, tmp_path / "data", handlers)
    status, out, _ = run_cli(["report", str(tmp_path / "data"), "--bootstrap", "0"])
    assert status == 0
    report = json.loads((tmp_path / "data" / "report" / "report.json").read_text())
    model = report["models"][0]
    assert model["dropped"] > 0.1 * model["instances"] and model["warning"]
    n = model["norm_align"]["n"]
    assert n == model["instances"] - model["dropped"]
    assert f"(n = {n} of {model['instances']} instances)" in out
    assert "WARNING: scripted-ask3:" in out and "judgement is missing" in out
    md = (tmp_path / "data" / "report" / "report.md").read_text()
    assert f"n = {n} of {model['instances']} instances" in md and "- WARNING: scripted-ask3" in md
    # below the threshold: no warning
    quiet = build_report(_rows(tmp_path / "data", "scores.jsonl"), ReportConfig(warn_dropped=1))
    assert quiet["models"][0]["warning"] is None


def test_offline_reports_say_they_test_the_pipeline_not_a_model(tmp_path):
    tiny_study(tmp_path, instances=1)
    study = tmp_path / "data"
    assert run_cli(["run", str(study), "--no-progress"])[0] == 0
    status, out, _ = run_cli(["report", str(study), "--bootstrap", "0"])
    assert status == 0 and OFFLINE_NOTE in out
    assert OFFLINE_NOTE in (study / "report" / "report.md").read_text()
    rows = _rows(study, "scores.jsonl")
    run = json.loads((study / "run.json").read_text())
    run["settings"]["backends"] = {"model": "openai", "judge": "openai", "user": "openai"}
    assert OFFLINE_NOTE not in render_markdown(build_report(rows, run=run))
