"""Honest runs (issue 17, part 3): the dry run's bound holds with every re-ask, a failed call
leaves no task running, failure lines name the episode once, an undefined NormAlign prints its
reason on the command line."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
from pb_prefdisco_helpers import run_cli, tiny_study

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.llm.request import LLMResponse
from prefduel.prefdisco import RoleClients, default_handlers, run_study
from prefduel.prefdisco.study.pipeline import estimate_run

_dataset = tiny_study


def _garbage(role_handler):
    """A handler whose every reply is unreadable (so every stage asks again until it gives up)."""
    return lambda request: "I would rather not say."


@pytest.mark.parametrize("router", ["keyword", "llm"])
def test_the_dry_run_bound_holds_when_every_reply_is_asked_again(tmp_path, router):
    config, dataset = _dataset(tmp_path, router=router)
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    for role in ("judge", "grader", "router"):
        handlers[role] = _garbage(handlers[role])
    handlers["answer"] = lambda request: "No final line here."  # the grader is always asked
    estimate = estimate_run(dataset, config, tmp_path / "run")
    client = LLMClient(ScriptedBackend(handlers))
    with client:
        summary = run_study(dataset, config.run, RoleClients.single(client), tmp_path / "run")
    sent = client.stats().requests
    assert summary.failed == ()
    assert estimate["calls"] <= sent <= estimate["max_calls"]
    status, out, _ = run_cli(["run", str(tmp_path / "data"), "--dry-run", "--router", router])
    assert status == 0 and f"at most {estimate['max_calls']:,} calls" in out


def test_the_dry_run_calls_its_lower_figure_an_estimate(tmp_path):
    _dataset(tmp_path)
    status, out, _ = run_cli(["run", str(tmp_path / "data"), "--dry-run"])
    assert status == 0
    assert "calls if every reply is well formed" in out and "at most" in out


class _FailFastHangSlow:
    """Judge calls: the first of each response hangs (and, like network code, turns its
    cancellation into a failed call); the others fail at once."""

    def __init__(self, inner):
        self.inner = inner
        self.seen = set()
        self.cancelled = 0

    async def complete(self, request):
        if request.role not in ("judge", "grader"):
            return await self.inner.complete(request)
        response = request.messages[-1].content.split("<response>")[-1].split("</response>")[0]
        if response not in self.seen:
            self.seen.add(response)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled += 1
                return LLMResponse(request, None, ok=False, error="connection reset")
        return LLMResponse(request, None, ok=False, error="connection refused")


def test_a_failed_judgement_cancels_and_awaits_its_siblings(tmp_path, caplog):
    config, dataset = _dataset(tmp_path, instances=1, conditions=("baseline",))
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    inner = LLMClient(ScriptedBackend(handlers))
    judge = _FailFastHangSlow(inner)
    clients = RoleClients(inner, inner, judge, inner)
    caplog.set_level(logging.ERROR, logger="asyncio")
    start = time.monotonic()
    summary = run_study(dataset, config.run, clients, tmp_path / "run")
    assert time.monotonic() - start < 20
    assert len(summary.failed) == 1 and judge.cancelled == 1
    assert not [r for r in caplog.records if "shutdown" in r.getMessage()]


def test_failure_lines_name_the_episode_once(tmp_path):
    config, dataset = _dataset(tmp_path, instances=1, conditions=("baseline", "oracle"))
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))

    def down(request):
        raise ConnectionError("connection refused")

    handlers["answer"] = down
    client = LLMClient(ScriptedBackend(handlers))
    with client:
        summary = run_study(dataset, config.run, RoleClients.single(client), tmp_path / "run")
    assert len(summary.failed) == 2
    for episode, error in summary.failed:
        assert episode not in error and error.startswith("answer call failed")
    from prefduel.cli.prefdisco_cmd import failure_lines

    lines = failure_lines(summary.failed)
    assert len(lines) == 1  # the same error twice: one line, naming how many and the first
    assert "2 episodes" in lines[0] and summary.failed[0][0] in lines[0]
    assert lines[0].count("|baseline|") + lines[0].count("|oracle|") == 1


def test_the_report_command_prints_an_undefined_norm_align_with_its_reason(tmp_path):
    config, dataset = _dataset(tmp_path, instances=2)
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    handlers["judge"] = _garbage(handlers["judge"])
    client = LLMClient(ScriptedBackend(handlers))
    with client:
        run_study(dataset, config.run, RoleClients.single(client), tmp_path / "data")
    status, out, err = run_cli(["report", str(tmp_path / "data"), "--bootstrap", "0"])
    assert status == 0, err
    line = next(x for x in out.splitlines() if x.startswith("scripted-ask3:"))
    assert "NormAlign undefined (no instance scored in all three conditions)" in line
    assert "PrefAlign ;" not in line and "PrefAlign no episode scored" in line
    report = json.loads((tmp_path / "data" / "report" / "report.json").read_text())
    assert report["models"][0]["norm_align"]["n"] == 0


def test_a_router_check_without_a_server_is_a_failed_call_to_retry(tmp_path, monkeypatch):
    """The router check (``auto`` on a real endpoint) fails like an episode: one named line,
    exit 1, re-run to resume."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "c.yaml"
    config.write_text(
        "generate: {personas: 1, personas_per_task: 1, tasks: [{format: builtin, limit: 1}]}\n"
        "run: {models: [m], judge_model: j}\n"
        f"llm: {{backend: openai, base_url: 'http://127.0.0.1:{port}/v1', api_key_env: null,"
        " max_attempts: 1, timeout: 5}\n"
    )
    assert run_cli(["generate", str(tmp_path / "d"), "--config", str(config)])[0] == 0
    status, out, err = run_cli(["run", str(tmp_path / "d"), "--no-progress"])
    assert status == 1, err + out
    assert "Traceback" not in err + out
    assert "router check failed" in out and "router call failed" in out
    assert "re-run the same command" in out
