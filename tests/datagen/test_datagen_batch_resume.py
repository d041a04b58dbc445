"""Kill ``prefduel datagen --batch`` while its batches run, re-run: the batches in flight are
collected, not sent again (the test server counts the request lines uploaded), also one whose
id the kill kept from being recorded, and the world is the online run's."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from pb_datagen_helpers import FAKE_KEY, KEY_ENV, write_server_config

from prefduel.cli.main import main
from prefduel.datagen import ScriptedWorld, generate, load_config
from prefduel.llm.batchstate import BatchState
from prefduel.llm.testserver import OpenAITestServer
from prefduel.worlds.world import load_world

TOTAL = 3 + 9 + 3 + 2 * 3 * 3 * 4


def _batch_config(tmp_path):
    """The server config with batches polled every 20 ms."""
    path = write_server_config(tmp_path / "server.yaml", "server")
    data = yaml.safe_load(path.read_text())
    data["batch"] = {"poll": 0.02}
    data["asks"] = False  # the four stages' batches (the ask stages': test_datagen_asks)
    path.write_text(yaml.safe_dump(data))
    return path


def _online_digest(config, tmp_path):
    """The world of an online run of ``config``."""
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        llm = dataclasses.replace(
            config.llm, base_url=server.base_url, cache=str(tmp_path / "online.sqlite")
        )
        return generate(config, llm=llm, output=tmp_path / "online", progress=False).world.digest()


def _in_flight(state_path):
    """The batches the state file lists as started and running (empty while it is written)."""
    try:
        state = json.loads(state_path.read_text())
    except (OSError, ValueError):
        return []
    return [b for b in state["batches"].values() if b["id"] and b["status"] == "in_progress"]


def test_sigkill_while_a_batch_runs_then_resume_without_resending(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    path = _batch_config(tmp_path)
    config = load_config(path)
    out, cache = tmp_path / "world", tmp_path / "cache.sqlite"
    args = ["datagen", str(path), "--batch", "--out", str(out), "--cache", str(cache)]
    state_path = out / "datagen" / "batches.json"
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        server.batch.hold.set()  # batches stay in_progress until released
        command = [sys.executable, "-m", "prefduel.cli.main", *args, "--no-progress"]
        proc = subprocess.Popen([*command, "--base-url", server.base_url])
        deadline = time.monotonic() + 60
        try:
            while not _in_flight(state_path):  # the questions stage's batch
                assert proc.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline, "no batch started"
                time.sleep(0.02)
        finally:
            os.kill(proc.pid, signal.SIGKILL)  # no cleanup: a real crash
            proc.wait()
        assert server.batch.uploaded_lines == 3 and len(server.batch.batches()) == 1

        server.batch.release()
        assert main([*args, "--no-progress", "--base-url", server.base_url]) == 0
        batches = server.batch.batches()
        uploaded = server.batch.uploaded_lines
        assert not [r for r in server.requests if r.path != "batch"]
    assert uploaded == TOTAL  # no request uploaded twice
    assert len(batches) == 4 and sum(b["request_counts"]["total"] for b in batches) == TOTAL
    summary = json.loads((out / "datagen" / "summary.json").read_text())
    assert summary["complete"] and summary["batch"]["resumed"] == 1
    assert summary["batch"]["started"] == 3
    assert json.loads(state_path.read_text())["batches"] == {}
    assert load_world(out).digest() == _online_digest(config, tmp_path)


def test_a_kill_before_the_batch_id_is_recorded_finds_the_batch(tmp_path, monkeypatch):
    """The run stops right after ``batches.create`` answered, before the id reached the state
    file: the re-run finds the batch by its input file instead of starting a second one."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = load_config(_batch_config(tmp_path))
    update = BatchState.update

    def killed_after_create(self, record, **fields):
        if fields.get("id") is not None and record["stage"] == "answers":
            raise KeyboardInterrupt  # the moment after the provider started the batch
        update(self, record, **fields)

    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        llm = dataclasses.replace(
            config.llm, base_url=server.base_url, cache=str(tmp_path / "cache.sqlite")
        )
        monkeypatch.setattr(BatchState, "update", killed_after_create)
        with pytest.raises(KeyboardInterrupt):
            generate(config, llm=llm, output=tmp_path / "world", progress=False, batch=True)
        monkeypatch.setattr(BatchState, "update", update)
        assert len(server.batch.batches()) == 2 and server.batch.uploaded_lines == 3 + 9
        result = generate(config, llm=llm, output=tmp_path / "world", progress=False, batch=True)
        batches = server.batch.batches()
        assert server.batch.uploaded_lines == TOTAL
    assert result.complete and result.batch["resumed"] == 1 and result.batch["started"] == 2
    assert len(batches) == 4  # questions, answers (found again), rater, judge
    assert result.world.digest() == _online_digest(config, tmp_path)
