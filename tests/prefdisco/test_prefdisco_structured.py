"""Structured output for the judge and the grader (issue 17, part 1), through the real client
path against the test server, which honours, ignores or rejects ``response_format``."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest
from pb_prefdisco_helpers import tiny_study

from prefduel.llm import LLMClient, RetryPolicy, ScriptedBackend
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.prices import UnknownModelPriceWarning
from prefduel.llm.testserver import OpenAITestServer
from prefduel.prefdisco import RoleClients, default_handlers, run_study, server_answer
from prefduel.prefdisco.config import PrefDiscoConfig
from prefduel.prefdisco.study.pipeline import estimate_run

KEY_ENV = "PREFDUEL_PREFDISCO_STRUCTURED_KEY"
STRUCTURED = {"judge_structured": "auto", "grader_structured": "json_schema"}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("structured")
    config, dataset = tiny_study(root, instances=4, models=("scripted-ask3",))
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    handlers["answer"] = _no_final_line(handlers["answer"])  # the grader is asked too
    offline = LLMClient(ScriptedBackend(handlers))
    with offline:
        run_study(dataset, config.run, RoleClients.single(offline), root / "offline")
    return dataset, config, handlers, root


def _no_final_line(answer):
    return lambda request: answer(request).replace("Final answer:", "So:")


def _rows(folder, name):
    rows = [json.loads(x) for x in (folder / name).read_text().splitlines()]
    for row in rows:
        for key in ("settings", "calls"):  # cache keys differ: response_format is a parameter
            row.pop(key)
    return rows


def _http_run(study, tmp_path, monkeypatch, mode):
    dataset, config, handlers, _ = study
    monkeypatch.setenv(KEY_ENV, "sk-pbtest-structured-0000")
    settings = dataclasses.replace(config.run, **STRUCTURED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownModelPriceWarning)
        with OpenAITestServer(answer=server_answer(handlers), structured=mode) as server:
            backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5)
            retry = RetryPolicy(max_attempts=2, base_delay=0.001, max_delay=0.01)
            client = LLMClient(backend, retry=retry, max_connections=8)
            with client:
                summary = run_study(dataset, settings, RoleClients.single(client), tmp_path)
            received = [r.body for r in server.requests]
    assert summary.failed == ()
    return received


def _formats(received, system):
    return [
        b.get("response_format") for b in received if b["messages"][0]["content"].startswith(system)
    ]


def test_an_endpoint_that_ignores_the_schema_is_read_by_the_text_parser(
    study, tmp_path, monkeypatch
):
    received = _http_run(study, tmp_path, monkeypatch, "ignore")
    judge = _formats(received, "You are a careful, impartial grader")
    grader = _formats(received, "You check whether a response")
    assert judge and all(f["json_schema"]["name"] == "score" for f in judge)
    assert grader and all(f["json_schema"]["name"] == "verdict" for f in grader)
    # free text came back and the text parser read it: the offline results, row for row
    offline = study[3] / "offline"
    for name in ("transcripts.jsonl", "scores.jsonl"):
        assert _rows(tmp_path, name) == _rows(offline, name)


def test_an_endpoint_that_honours_the_schema_answers_in_it(study, tmp_path, monkeypatch):
    received = _http_run(study, tmp_path, monkeypatch, "honour")
    assert _formats(received, "You are a careful, impartial grader")
    scores = _rows(tmp_path, "scores.jsonl")
    offline = {r["episode_id"]: r for r in _rows(study[3] / "offline", "scores.jsonl")}
    # a constrained answer always parses: no judgement is asked twice
    assert all(n == 1 for s in scores for n in s["judge_attempts"].values())
    assert any(n > 1 for s in offline.values() for n in s["judge_attempts"].values())
    same = [
        (attr, s["scores"][attr], offline[s["episode_id"]]["scores"][attr])
        for s in scores
        for attr, n in offline[s["episode_id"]]["judge_attempts"].items()
        if n == 1
    ]
    assert same and all(a == b for _, a, b in same)  # the schema carried the same scores
    assert any(s["accuracy_method"] == "grader" for s in scores)
    assert [s["correct"] for s in scores] == [offline[s["episode_id"]]["correct"] for s in scores]


def test_an_endpoint_that_refuses_the_schema_is_asked_again_without_it(
    study, tmp_path, monkeypatch
):
    received = _http_run(study, tmp_path, monkeypatch, "reject")
    judge = _formats(received, "You are a careful, impartial grader")
    assert None in judge and any(judge)  # refused, then sent plain
    rows = _rows(tmp_path, "scores.jsonl")
    refused = sum(r["finish_reasons"]["judge"].get("failed", 0) for r in rows)
    judgements = sum(len(r["weights"]) for r in rows)
    # the first judgement probes json_schema, then json_object, both refused, while the others
    # wait; every later judgement (and re-ask of a malformed one) is sent plain at once
    assert refused == 2 == len(judge) - judge.count(None)
    assert judge.count(None) >= judgements
    offline = _rows(study[3] / "offline", "scores.jsonl")
    for row in (*rows, *offline):  # the refused calls count as calls (they were sent)
        del row["usage"], row["finish_reasons"]
    assert rows == offline


def test_the_dry_run_bound_counts_a_refused_schema_twice(study, tmp_path):
    dataset, config, _, _ = study
    plain = estimate_run(dataset, config, tmp_path)
    structured = PrefDiscoConfig(run=dataclasses.replace(config.run, **STRUCTURED))
    both = estimate_run(dataset, structured, tmp_path)
    assert both["calls"] == plain["calls"] and both["max_calls"] > plain["max_calls"]
