"""Batch mode (``generate(..., batch=True)``, ``prefduel datagen --batch``) against the test
server's Batch API: the same world as an online run, split at the file limits, half the price,
mixing with online answers in one cache, failed and expired lines retried and counted, and a
dry run that prices both modes."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from pb_datagen_helpers import FAKE_KEY, KEY_ENV, cache_rows, files_containing, tiny_config

from prefduel.cli.main import main
from prefduel.datagen import ScriptedWorld, estimate, generate
from prefduel.llm.testserver import Fault, OpenAITestServer


def _config(tmp_path, **batch):
    # 3 personas, 1 topic with 1 concept: 3 questions, 2 students, 1 sample -> 87 calls
    config = tiny_config(
        tmp_path,
        personas={"builtin": True, "take": 3},
        topics=[{"id": "limits", "subject": "math", "chains": [{"concept": "limits"}]}],
        world={"arrivals": 4, "rounds": 3},
        batch={"poll": 0.01, **batch},
        asks=False,  # the four stages' batches (the ask stages': test_datagen_asks)
    )
    llm = dataclasses.replace(config.llm, backend="openai", api_key_env=KEY_ENV, timeout=5)
    return dataclasses.replace(config, llm=llm)


TOTAL = 3 + 9 + 3 + 2 * 3 * 3 * 4


def _run(config, server, **kwargs):
    llm = dataclasses.replace(config.llm, base_url=server.base_url)
    return generate(config, llm=llm, progress=False, **kwargs)


@pytest.fixture(scope="module")
def online(tmp_path_factory):
    """The online run of the config (its world and what it spent)."""
    config = _config(tmp_path_factory.mktemp("online"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, FAKE_KEY)
        with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
            result = _run(config, server)
    assert result.complete and result.world is not None
    return result


def _online_requests(server):
    return [r for r in server.requests if r.path != "batch"]


def test_a_batch_run_makes_the_online_world_at_half_the_price(tmp_path, monkeypatch, online):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path, max_requests=20, max_bytes=30_000)
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        server.batch.max_requests, server.batch.max_bytes = 20, 30_000  # larger files fail
        result = _run(config, server, batch=True)
        batches = server.batch.batches()
        assert server.batch.uploaded_lines == TOTAL and not _online_requests(server)
    assert result.complete, result.summary()
    assert result.world.digest() == online.world.digest()
    # split at the limits: every batch within them, the judge's 72 lines in several
    assert {b["status"] for b in batches} == {"completed"}
    assert sum(b["request_counts"]["total"] for b in batches) == TOTAL
    assert max(b["request_counts"]["total"] for b in batches) <= 20
    assert len(batches) >= 1 + 1 + 1 + math.ceil(72 / 20)
    # the same tokens at half the price, all of it spent in batches
    spend, paid = result.spend(), online.spend()["this_run"]
    assert spend["batch"] == pytest.approx(paid / 2) and spend["online"] == 0
    assert sum(s.batched for s in result.stages) == TOTAL
    text = result.summary()
    assert "in provider batches (87 answers, 50% of the online price)" in text
    assert f"batches: {len(batches)} started, 0 resumed" in text
    saved = json.loads((result.output / "datagen" / "summary.json").read_text())
    assert saved["spend"]["batch"] == pytest.approx(paid / 2)
    assert saved["batch"]["started"] == len(batches)
    state = json.loads((result.output / "datagen" / "batches.json").read_text())
    assert state["batches"] == {} and len(state["finished"]) == len(batches)
    assert files_containing(tmp_path, FAKE_KEY) == []


def test_batch_and_online_answers_share_the_cache(tmp_path, monkeypatch, online):
    """An online run stopped by its budget, then a batch run: only the missing calls are
    batched; a second batch run sends nothing."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        capped = dataclasses.replace(config.llm, base_url=server.base_url, budget=0.0005)
        stopped = generate(config, llm=capped, progress=False)
        sent = sum(s.sent for s in stopped.stages)
        assert not stopped.complete and 0 < sent < TOTAL
        resumed = _run(config, server, batch=True)
        assert server.batch.uploaded_lines == TOTAL - sent
        again = _run(config, server, batch=True)
        assert server.batch.uploaded_lines == TOTAL - sent
    assert resumed.complete and resumed.world.digest() == online.world.digest()
    assert sum(s.batched for s in resumed.stages) == TOTAL - sent
    assert sum(s.cached for s in again.stages) == TOTAL and again.spend()["this_run"] == 0
    assert cache_rows(config.llm.cache) == TOTAL


def _faulty(received):
    """The first try of every fifth body fails with HTTP 500."""
    if received.attempt == 0 and int(received.body_key[:4], 16) % 5 == 0:
        return Fault.http(500)
    return None


@pytest.mark.parametrize("retry", ["online", "batch"])
def test_failed_and_expired_lines_are_retried_and_counted(tmp_path, monkeypatch, online, retry):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path, retry=retry)
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        server.batch.faults = _faulty
        server.batch.expire = lambda index, lines: 20 if lines == 72 else None  # the judge's
        result = _run(config, server, batch=True)
        failed = sum(1 for r in server.requests if r.fault == "http")
        answers = server.answers()
        online_calls = len(_online_requests(server))
        batches = server.batch.batches()
    assert result.complete, result.summary()
    assert result.world.digest() == online.world.digest()
    assert failed > 0 and sum(answers.values()) == TOTAL  # each request answered once
    assert sum(s.batch_failed for s in result.stages) == failed
    expired = result.stage("judge").batch_expired
    assert expired == 72 - 20 and any(b["status"] == "expired" for b in batches)
    retried = failed + expired
    if retry == "online":
        assert online_calls == retried and result.batch["retried_online"] == retried
        assert sum(s.batched for s in result.stages) == TOTAL - retried
    else:
        assert online_calls == 0 and result.batch["retried_batch"] == retried
        assert len(batches) > 4 and sum(s.batched for s in result.stages) == TOTAL
    assert f"{failed:,d} failed and {expired:,d} expired line(s)" in result.summary()


def test_a_batch_that_fails_validation_leaves_the_run_incomplete(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)  # OpenAI's limits, but this provider takes 2 lines a file
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        server.batch.max_requests = 2
        result = _run(config, server, batch=True)
        assert not _online_requests(server)  # sending it again online would not help
    assert not result.complete and len(result.failures) == 3  # the questions stage
    assert "too_large" in result.failures[0]["error"]
    assert result.failures[0].get("permanent") is True


def test_dry_run_prints_both_prices(tmp_path, monkeypatch, capsys):
    config = _config(tmp_path)
    plan = estimate(config)
    assert plan.total.cost > 0 and plan.total.batch_cost == pytest.approx(plan.total.cost / 2)
    assert plan.to_json()["total"]["batch_cost"] == pytest.approx(plan.total.cost / 2)
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: USD\nbatch_discount: 0.25\nmodels: {}\n")
    cheaper = estimate(config, llm=dataclasses.replace(config.llm, prices=str(prices)))
    assert cheaper.total.batch_cost == pytest.approx(0.75 * cheaper.total.cost)

    path = tmp_path / "c.yaml"
    path.write_text(
        "topics: [{id: limits, chains: [limits]}]\n"
        "personas: {builtin: true, take: 3}\n"
        "students: {builtin: dev, take: [math_major]}\n"
        "llm: {backend: openai}\n"
    )
    assert main(["datagen", str(path), "--dry-run", "--cache", str(tmp_path / "c.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "est. cost" in out and "batch cost" in out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    online_cost, batch_cost = (float(x) for x in total.split() if "." in x)
    assert batch_cost == pytest.approx(online_cost / 2, abs=1e-4)
