"""Kill ``prefdisco run`` against an OpenAI-compatible endpoint, re-run it: no paid call repeats."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pb_prefdisco_helpers import run_cli

from prefduel.llm import LLMClient, ResponseCache, ScriptedBackend, read_call_log
from prefduel.llm.testserver import Fault, OpenAITestServer, per_request_faults
from prefduel.prefdisco import (
    RoleClients,
    default_handlers,
    load_dataset,
    run_study,
    server_answer,
)

KEY_ENV = "PREFDUEL_PREFDISCO_RESUME_KEY"
HERE = Path(__file__).resolve().parent
CHILD = textwrap.dedent(
    f"""
    import sys
    sys.path.insert(0, {str(HERE)!r})
    from pb_prefdisco_helpers import run_cli
    status, out, err = run_cli(sys.argv[1:])
    sys.stdout.write(out); sys.stderr.write(err)
    sys.exit(status)
    """
)


def _cached(path: Path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _config(path: Path, base_url: str) -> Path:
    path.write_text(
        "generate:\n"
        "  seed: 1\n  personas: 2\n  personas_per_task: 2\n"
        "  tasks: [{format: builtin, limit: 4}]\n"
        "run:\n  models: [test-ask2]\n  judge_model: test-judge\n"
        f"llm:\n  backend: openai\n  base_url: {base_url}\n  api_key_env: {KEY_ENV}\n"
        "  max_connections: 2\n  max_attempts: 4\n  timeout: 10\n",
        encoding="utf-8",
    )
    return path


def _rows(folder: Path, name: str) -> list[dict]:
    rows = [json.loads(line) for line in (folder / name).read_text().splitlines()]
    for row in rows:
        row.pop("settings")
    return rows


@pytest.mark.filterwarnings("ignore::prefduel.llm.prices.UnknownModelPriceWarning")
def test_kill_and_resume_repeats_no_paid_call(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-pbtest-resume-0123456789")
    folder = tmp_path / "study"
    with OpenAITestServer(latency=0.02) as server:
        config = _config(tmp_path / "study.yaml", server.base_url)
        status, _, err = run_cli(["generate", str(folder), "--config", str(config)])
        assert status == 0, err
        dataset = load_dataset(folder)
        handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
        server.answer = server_answer(handlers)
        # every request's first attempt is rate limited (retry-after-ms: a short wait)
        server.faults = per_request_faults(lambda body: [Fault.http(429, retry_after_ms=5)])
        args = ["run", str(folder), "--config", str(config), "--no-progress"]
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, *args], env={**os.environ, KEY_ENV: "sk-pbtest-x"}
        )
        cache = folder / "llm-cache.sqlite"
        deadline = time.monotonic() + 60
        try:
            while _cached(cache) < 25:
                assert proc.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline, "the run made no progress"
                time.sleep(0.01)
        finally:
            os.kill(proc.pid, signal.SIGKILL)  # a real crash: no cleanup
            proc.wait()
        with ResponseCache(cache) as c:
            paid_before = set(c.keys())
        log = folder / "llm-calls.jsonl"
        start = len(read_call_log(log))
        status, out, err = run_cli(args)
        answers = server.answers()
    assert status == 0, err + out
    assert "0 failed" in out
    resumed = read_call_log(log)[start:]
    sent = [x["key"] for x in resumed if x["status"] == "ok"]
    assert sent and not set(sent) & paid_before  # nothing already paid for was sent again
    assert len(sent) == len(set(sent))
    assert {x["key"] for x in resumed if x["status"] == "hit"} <= paid_before | set(sent)
    # at most the calls in flight at the kill (max_connections) were answered twice
    assert sum(n - 1 for n in answers.values()) <= 2
    # the resumed endpoint run equals an uninterrupted offline run
    offline = LLMClient(ScriptedBackend(handlers), cache=tmp_path / "offline.sqlite")
    with offline:
        run_study(dataset, dataset.config.run, RoleClients.single(offline), tmp_path / "offline")
    for name in ("transcripts.jsonl", "scores.jsonl"):
        assert _rows(folder, name) == _rows(tmp_path / "offline", name)
