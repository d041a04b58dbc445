"""The real client path: datagen -> openai SDK -> HTTP -> the local test server, with faults.

The server answers with the scripted roles (:meth:`ScriptedWorld.http_answer`) and injects 429s
with retry-after, 500s (one echoing the Authorization header), timeouts, malformed and
truncated bodies. The pipeline completes, every call is in the cache exactly once, and the fake
API key appears in no file written.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

from pb_datagen_helpers import (
    FAKE_KEY,
    KEY_ENV,
    cache_rows,
    expected_calls,
    files_containing,
    ok_per_key,
    tiny_config,
    write_server_config,
)

from prefduel.cli.main import main
from prefduel.datagen import ScriptedWorld, estimate, generate, load_config
from prefduel.llm import LLMClient, Message, RetryPolicy, read_call_log
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import Fault, OpenAITestServer, random_faults

FAULTS = [
    Fault.http(429, retry_after_ms=5),
    Fault.http(429, retry_after="0"),
    Fault.http(500),
    Fault.http(503, echo_auth=True),
    Fault.timeout(1.5),
    Fault.malformed(),
    Fault.truncated(),
]


def _config(tmp_path):
    # 3 personas, 1 topic with 1 concept: 3 questions, 2 students, 1 sample -> 90 calls
    config = tiny_config(
        tmp_path,
        personas={"builtin": True, "take": 3},
        topics=[{"id": "limits", "subject": "math", "chains": [{"concept": "limits"}]}],
        world={"arrivals": 4, "rounds": 3},
    )
    llm = dataclasses.replace(config.llm, backend="openai", api_key_env=KEY_ENV)
    return dataclasses.replace(config, llm=llm)


def test_pipeline_completes_through_faults_and_keeps_the_key_secret(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)
    expected = expected_calls(config)
    total = sum(expected.values())
    # the four stages, then 8 style loadings and 2 students x (8 level + 3 pair + 3 least)
    assert total == 3 + 9 + 3 + 2 * 3 * 3 * 4 + 8 + 2 * (8 + 3 + 3)
    faults = random_faults(0.35, FAULTS, seed=11, max_faulty_attempts=2)
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer, faults=faults) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=0.5)
        retry = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)
        client = LLMClient(
            backend,
            cache=config.llm.cache,
            call_log=config.llm.call_log,
            max_connections=8,
            retry=retry,
        )
        with client:
            result = generate(config, client=client, progress=False)
        received = server.requests
        answers = server.answers()
    assert result.complete, result.summary()
    assert {s.stage: s.calls for s in result.stages} == expected
    assert {s.stage: s.sent for s in result.stages} == expected
    assert {r.fault for r in received} >= {"http", "timeout", "malformed", "truncated"}
    assert all(r.headers.get("authorization") == f"Bearer {FAKE_KEY}" for r in received)

    # every call exactly once: one normal answer per request, one cache row, one ok log line
    assert sum(answers.values()) == total
    assert cache_rows(config.llm.cache) == total
    counts = ok_per_key(config.llm.call_log)
    assert len(counts) == total and set(counts.values()) == {1}
    log = read_call_log(config.llm.call_log)
    statuses = Counter(r["status"] for r in log)
    assert statuses["retry"] > 0 and statuses["failed"] == 0
    assert any("HTTP 503" in (r.get("error") or "") for r in log)

    # the key is in no file: world, datagen tables, cache, call log
    assert result.output is not None and (result.output / "world.json").is_file()
    assert files_containing(tmp_path, FAKE_KEY) == []
    summary = json.loads((result.output / "datagen" / "summary.json").read_text())
    assert summary["config"]["llm"]["api_key_env"] == KEY_ENV

    # resumed dry run: everything cached (no key needed to estimate)
    monkeypatch.delenv(KEY_ENV)
    plan = estimate(config)
    assert plan.total.calls == total and plan.total.to_send == 0
    assert plan.backend == "openai" and all(s.exact for s in plan.stages)


def test_dry_run_prices_a_real_endpoint(tmp_path):
    config = _config(tmp_path)
    plan = estimate(config)  # nothing cached: estimates with placeholder answers
    assert plan.total.to_send == sum(expected_calls(config).values())
    assert plan.total.cost > 0 and plan.currency == "USD"
    judge = plan.stages[3]
    # judge prompts hold two placeholder answers of expected_tokens (250) tokens each
    assert judge.prompt_tokens > judge.calls * 500
    assert judge.completion_tokens == judge.calls * config.models["judge"].completion_estimate()
    text = plan.format()
    assert "est. cost" in text and "budget" not in text
    capped = dataclasses.replace(config.llm, budget=plan.total.cost / 2)
    assert "EXCEEDS" in estimate(config, llm=capped).format()


def test_cli_against_the_test_server(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)
    path = write_server_config(tmp_path / "server.yaml", "server")
    faults = random_faults(0.2, [Fault.http(429, retry_after_ms=5)], seed=2)
    out_dir = tmp_path / "cli-world"
    flags = ["--cache", str(tmp_path / "cli.sqlite"), "--call-log", str(tmp_path / "cli.jsonl")]
    truth = ScriptedWorld(load_config(path))
    with OpenAITestServer(answer=truth.http_answer, faults=faults) as server:
        args = ["datagen", str(path), "--base-url", server.base_url, "--out", str(out_dir)]
        assert main([*args, "--no-progress", *flags]) == 0
    out = capsys.readouterr().out
    assert "world " + str(out_dir) in out and "INCOMPLETE" not in out
    assert cache_rows(tmp_path / "cli.sqlite") == sum(expected_calls(config).values())
    assert files_containing(tmp_path, FAKE_KEY) == []

    monkeypatch.delenv(KEY_ENV)  # the key is needed to send, not to estimate
    assert main(["datagen", str(path), "--dry-run", *flags]) == 0
    assert main(["datagen", str(path), "--out", str(out_dir), *flags]) == 2
    assert f"environment variable {KEY_ENV}" in capsys.readouterr().err


def test_budget_cap_stops_sending_and_a_higher_budget_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)
    total = sum(expected_calls(config).values())
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:

        def client(budget):
            backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5)
            return LLMClient(backend, cache=config.llm.cache, max_connections=1, budget=budget)

        with client(0.0005) as capped:
            stopped = generate(config, client=capped, progress=False)
        assert not stopped.complete and stopped.world is None
        sent = sum(s.sent for s in stopped.stages)
        assert 0 < sent < total and cache_rows(config.llm.cache) == sent
        assert "budget of 0.0005 USD reached" in stopped.summary()
        assert sum(s.cost for s in stopped.stages) >= 0.0005

        with client(None) as unlimited:
            resumed = generate(config, client=unlimited, progress=False)
    assert resumed.complete
    assert sum(s.sent for s in resumed.stages) == total - sent
    assert cache_rows(config.llm.cache) == total


def test_an_endpoint_that_echoes_the_key_gets_it_written_nowhere(tmp_path, monkeypatch):
    """Every successful reply echoes the Authorization header, some with the token in the
    model name: appended to questions and answers (the scripted judge reads the persona marker
    at the start of answers), appended, prepended or as the whole answer for the judge
    (malformed picks) and as the whole answer for the rater's first attempt (malformed scores,
    asked again). The world, the datagen tables, malformed.jsonl, the cache and the call log
    never hold the key."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)
    world = ScriptedWorld(config)
    places = ("append", "prepend", "replace")

    def hostile(request):
        messages = tuple(Message(m["role"], m["content"]) for m in request.body["messages"])
        role = world.role_of(messages)
        pick = int(request.body_key[:2], 16)
        where = "append"
        if role == "judge":
            where = places[pick % 3]
        elif role == "rater" and request.attempt == 0:
            where = "replace"
        return Fault.echo(where, model=pick % 2 == 0)

    with OpenAITestServer(answer=world.http_answer, faults=hostile) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5)
        client = LLMClient(
            backend, cache=config.llm.cache, call_log=config.llm.call_log, max_connections=8
        )
        with client:
            result = generate(config, client=client, progress=False)
        received = server.requests
    # every reply echoed the key (so the checks below mean something)
    assert received and {r.fault for r in received} == {"echo"}
    assert all(r.headers.get("authorization") == f"Bearer {FAKE_KEY}" for r in received)
    assert result.complete, result.summary()
    out = result.output
    assert out is not None and (out / "world.json").is_file()
    assert {m["stage"] for m in result.malformed} == {"judge", "rater", "loadings"}
    echo = "[echo Authorization: Bearer [REDACTED]; token: [REDACTED]]"
    for name in ("world.json", "datagen/questions.jsonl", "datagen/malformed.jsonl"):
        assert echo in (out / name).read_text(encoding="utf-8"), name
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert {
        "cache.sqlite",
        "calls.jsonl",
        "world/world.json",
        "world/datagen/summary.json",
        "world/datagen/tables.npz",
        "world/datagen/questions.jsonl",
        "world/datagen/malformed.jsonl",
    } <= written
    for needle in (FAKE_KEY, FAKE_KEY.removeprefix("sk-pbdatagen-")):
        assert files_containing(tmp_path, needle) == []
