"""Honest errors and estimates: permanent endpoint errors exit 2 naming the base URL and the
server's words; an incomplete run still writes its summary and malformed answers; slow stages
show their calls per second; the structured-output and logprob counts are reported."""

from __future__ import annotations

import json
import socket
import threading

import pytest
from pb_datagen_helpers import FAKE_KEY, KEY_ENV, tiny_config

from prefduel.cli.main import main
from prefduel.datagen import (
    STAGES,
    DatagenResult,
    ScriptedWorld,
    StageReport,
    generate,
    split_config,
)
from prefduel.datagen.results import format_rate
from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.llm.testserver import Fault, OpenAITestServer, per_request_faults

CONFIG = (
    "topics: {builtin: dev, take: [derivatives]}\n"
    "students: {builtin: dev, take: [math_major]}\n"
    "personas: {builtin: true, take: 3}\n"
    "samples: 1\nworld: {arrivals: 4, rounds: 3}\n"
)


def _cli(tmp_path, base_url, *extra):
    path = tmp_path / "tiny.yaml"
    path.write_text(CONFIG)
    return main(
        [
            "datagen",
            str(path),
            "--backend",
            "openai",
            "--base-url",
            base_url,
            "--api-key-env",
            KEY_ENV,
            "--cache",
            str(tmp_path / "c.sqlite"),
            "--out",
            str(tmp_path / "w"),
            "--max-attempts",
            "1",
            "--no-progress",
            *extra,
        ]
    )


def test_an_invalid_key_exits_2_with_the_url_and_the_servers_detail(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    fault = Fault.http(401, body={"detail": "Invalid API key"})
    with OpenAITestServer(faults=per_request_faults(lambda body: [fault] * 9)) as server:
        url = server.base_url
        status = _cli(tmp_path, url)
    out = capsys.readouterr()
    text = out.out + out.err
    assert status == 2
    assert "Invalid API key" in text and url in text
    assert "re-run the same command to resume" not in text
    assert FAKE_KEY not in text


def test_a_missing_v1_exits_2_with_a_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with OpenAITestServer() as server:
        base = server.base_url.removesuffix("/v1") + "/api"
        status = _cli(tmp_path, base)
    text = capsys.readouterr().out
    assert status == 2 and "HTTP 404" in text and f"{base}/v1" in text


def test_a_wrong_port_exits_2_naming_the_url(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    assert _cli(tmp_path, url) == 2
    text = capsys.readouterr().out
    assert url in text and "is the server running" in text


def test_a_server_that_dies_mid_run_is_resumable_exit_1(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    # the first 5 bodies are answered, then every request is dropped (the server "died")
    seen = []

    def schedule(req):
        seen.append(req.body_key)
        return Fault.drop() if len(set(seen)) > 5 else None

    with OpenAITestServer(faults=schedule) as server:
        status = _cli(tmp_path, server.base_url)
    text = capsys.readouterr().out
    assert status == 1 and "re-run the same command to resume" in text


def _crash_after(answers: int, server_box: list) -> object:
    """A schedule that answers ``answers`` distinct bodies, then stops the server (as a crash:
    the request in flight gets no reply and the port refuses connections from then on)."""
    seen: set[str] = set()
    crashed = threading.Event()

    def schedule(req):
        seen.add(req.body_key)
        if len(seen) > answers and not crashed.is_set():
            crashed.set()
            threading.Thread(target=server_box[0].stop).start()
        return Fault.drop() if crashed.is_set() else None

    return schedule


def test_a_server_that_crashes_mid_run_is_named_as_gone_not_as_unreachable(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    box: list = []
    server = OpenAITestServer(faults=_crash_after(5, box))
    box.append(server)
    with server:
        url = server.base_url
        status = _cli(tmp_path, url)
    text = capsys.readouterr().out
    assert status == 1 and "re-run the same command to resume" in text
    assert f"the server at {url} answered 5 requests and then stopped answering" in text
    assert "it may have crashed; check its log" in text
    assert "cannot reach" not in text and "is the server running" not in text


def test_a_server_that_crashes_on_its_first_completion_is_not_called_unreachable(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    box: list = []
    server = OpenAITestServer(faults=_crash_after(0, box))
    box.append(server)
    with server:
        url = server.base_url
        status = _cli(tmp_path, url, "--max-attempts", "2")
    text = capsys.readouterr().out
    assert status == 2 and f"the server at {url} closed a connection without a reply" in text
    assert "it may have crashed; check its log" in text
    assert "cannot reach" not in text and "is the server running" not in text


def test_an_incomplete_run_writes_its_summary_and_malformed_answers(tmp_path):
    config = tiny_config(tmp_path, scripted={"rater_malformed": 0.5})
    broken = {"rater": lambda request: 1 / 0}
    handlers = {**ScriptedWorld(config).handlers(), **broken}
    with LLMClient(ScriptedBackend(handlers), cache=config.llm.cache) as client:
        result = generate(config, client=client, progress=False)
    assert not result.complete and result.world is None
    extra = tmp_path / "world" / "datagen"
    summary = json.loads((extra / "summary.json").read_text())
    # the rater's calls fail, and so do its scores of the style dimensions (the loadings)
    failed = result.stage("rater").failed + result.stage("loadings").failed
    assert summary["complete"] is False and summary["failed_calls"] == failed
    assert (extra / "malformed.jsonl").exists()
    failures = [json.loads(line) for line in (extra / "failures.jsonl").read_text().splitlines()]
    assert len(failures) == failed and failures[0]["stage"] == "rater"
    assert not (tmp_path / "world" / "world.json").exists()
    assert "datagen/summary.json" in result.summary()


@pytest.mark.parametrize(
    ("calls", "seconds", "shown"),
    [(12, 100.0, "0.12"), (130, 540.0, "0.24"), (5, 2.0, "2.5"), (40_000, 4.0, "10,000"),
     (3, 3000.0, "0.001"), (0, 0.0, "-")],
)
def test_calls_per_second_are_not_rounded_to_zero(calls, seconds, shown):
    assert format_rate(calls, seconds) == shown


def test_the_summary_table_shows_a_slow_stage_rate(tmp_path):
    config = tiny_config(tmp_path)
    stages = [StageReport(s, calls=12, sent=12, seconds=100.0) for s in STAGES]
    text = DatagenResult(split_config(config).run, True, None, None, stages).summary()
    assert " 0.12" in text.splitlines()[2]
