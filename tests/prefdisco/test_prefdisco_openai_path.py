"""The same study through the real client path (openai SDK -> HTTP -> test server), with faults.

The test server answers with the scripted roles (:func:`server_answer`), so a run through HTTP,
with retried faults, must reproduce the offline run row for row.
"""

from __future__ import annotations

import json
import secrets
import warnings

import pytest
from pb_prefdisco_helpers import small_config

from prefduel.llm import LLMClient, RetryPolicy, ScriptedBackend
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.prices import UnknownModelPriceWarning
from prefduel.llm.testserver import Fault, OpenAITestServer, random_faults
from prefduel.prefdisco import (
    RoleClients,
    default_handlers,
    generate_dataset,
    load_config,
    load_dataset,
    run_study,
    server_answer,
)

KEY_ENV = "PREFDUEL_PREFDISCO_TEST_KEY"
FAULTS = [Fault.http(429, retry_after_ms=5), Fault.http(500), Fault.drop(), Fault.malformed()]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("openai")
    config = load_config(small_config(root / "c.yaml", models="[model-ask2]"))
    generate_dataset(config, root / "data", _offline(root))
    return load_dataset(root / "data")


def _offline(root):
    from prefduel.prefdisco import builtin_tasks, load_taxonomy

    handlers = default_handlers(load_taxonomy(), builtin_tasks())
    return RoleClients.single(LLMClient(ScriptedBackend(handlers), cache=root / "gen.sqlite"))


def _rows(folder, name):
    rows = [json.loads(line) for line in (folder / name).read_text().splitlines()]
    for row in rows:
        row.pop("settings")
    return rows


def _http_client(server, tmp_path):
    backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5)
    retry = RetryPolicy(max_attempts=5, base_delay=0.005, max_delay=0.01)
    return LLMClient(
        backend,
        cache=tmp_path / "http.sqlite",
        retry=retry,
        max_connections=8,
        call_log=tmp_path / "calls.jsonl",
    )


def test_an_endpoint_run_reproduces_the_offline_run(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-pbtest-0123456789abcdef")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    offline = LLMClient(ScriptedBackend(handlers), cache=tmp_path / "offline.sqlite")
    run = dataset.config.run
    with offline:
        run_study(dataset, run, RoleClients.single(offline), tmp_path / "offline")
    faults = random_faults(0.15, FAULTS, seed=5, max_faulty_attempts=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownModelPriceWarning)
        with OpenAITestServer(answer=server_answer(handlers), faults=faults) as server:
            client = _http_client(server, tmp_path)
            with client:
                summary = run_study(dataset, run, RoleClients.single(client), tmp_path / "http")
            injected = sum(1 for r in server.requests if r.fault)
    assert summary.failed == () and summary.episodes == 36
    assert injected > 5 and summary.stats["retries"] >= injected
    for name in ("transcripts.jsonl", "scores.jsonl"):
        assert _rows(tmp_path / "http", name) == _rows(tmp_path / "offline", name)


def test_failed_calls_leave_episodes_to_retry(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-pbtest-0123456789abcdef")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    task = next(iter(dataset.tasks.values()))

    def refuse_one_task(request):
        body = request.body or {}
        text = json.dumps(body.get("messages"))
        return Fault.http(400) if task.question[:40] in text else None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownModelPriceWarning)
        with OpenAITestServer(answer=server_answer(handlers), faults=refuse_one_task) as server:
            client = _http_client(server, tmp_path)
            with client:
                first = run_study(dataset, dataset.config.run, RoleClients.single(client), tmp_path)
            assert first.failed and all(task.id in e for e, _ in first.failed)
            assert "HTTP 400" in first.failed[0][1] and "not retryable" in first.failed[0][1]
            server.faults = None
            client = _http_client(server, tmp_path)
            with client:
                second = run_study(
                    dataset, dataset.config.run, RoleClients.single(client), tmp_path
                )
    assert second.failed == () and second.reused == 36 - len(first.failed)
    assert second.ran == len(first.failed)


def test_an_endpoint_that_echoes_the_key_gets_it_written_nowhere(dataset, tmp_path, monkeypatch):
    """A hostile endpoint echoes the Authorization header in successful replies (and the token
    in the model name): transcripts, scores, the run's cache and call log never hold the key."""
    key = "sk-pbtest-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, key)
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    places = ("append", "prepend")

    def hostile(request):
        pick = int(request.body_key[:2], 16)
        return Fault.echo(places[pick % 2], model=pick % 3 == 0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownModelPriceWarning)
        with OpenAITestServer(answer=server_answer(handlers), faults=hostile) as server:
            client = _http_client(server, tmp_path)
            with client:
                summary = run_study(
                    dataset, dataset.config.run, RoleClients.single(client), tmp_path
                )
            received = server.requests
    # every reply echoed the key (so the checks below mean something)
    assert received and {r.fault for r in received} == {"echo"}
    assert all(r.headers["authorization"] == f"Bearer {key}" for r in received)
    assert summary.failed == () and summary.episodes == 36
    transcripts = (tmp_path / "transcripts.jsonl").read_text(encoding="utf-8")
    assert "[echo Authorization: Bearer [REDACTED]; token: [REDACTED]]" in transcripts
    written = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert {"transcripts.jsonl", "scores.jsonl", "http.sqlite", "calls.jsonl"} <= set(written)
    for needle in (key, key.removeprefix("sk-pbtest-")):
        leaks = [
            p for p in tmp_path.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()
        ]
        assert leaks == []
