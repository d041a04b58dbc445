"""Datagen worlds can be asked: the students answer the preference questions through the stage
engine (cached, resumable, counted by the dry run), the rater's scores are the loadings, and
the world runs on an ask track."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from pb_datagen_helpers import (
    FAKE_KEY,
    KEY_ENV,
    InterruptOnCall,
    expected_calls,
    tiny_config,
    write_server_config,
)

from prefduel.cli.main import main
from prefduel.datagen import ScriptedWorld, estimate, generate, load_config
from prefduel.datagen.asks import parse_choice
from prefduel.datagen.settings import split_config
from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.llm.testserver import OpenAITestServer
from prefduel.worlds.world import load_world


def test_a_datagen_world_carries_the_students_answers_and_the_raters_loadings(tmp_path):
    config = tiny_config(tmp_path)
    result = generate(config, progress=False)
    assert result.complete
    world = load_world(result.output)
    asks = world.asks
    m, k, kinds = len(config.style), config.K, len(config.kinds)
    assert len(asks.questions) == m + k * (k - 1) // 2 + kinds
    assert asks.answers.shape == (world.N, len(asks.questions))
    # arrivals replay students: two arrivals of one student answer alike
    table = np.load(result.output / "datagen" / "tables.npz")["ask_answers"]
    assert np.array_equal(asks.answers, table[world.student_index])
    levels = [q for q in asks.questions if q.kind == "level"]
    assert len(levels) == m and all(0 <= x <= 1 for q in levels for x in q.loadings)
    assert any(len(set(q.loadings)) > 1 for q in levels)  # the rater tells personas apart
    assert world.info["asks"]["dropped"] == []
    assert {"loadings", "asks"} <= {s.stage for s in result.stages}
    assert result.stage("asks").calls == len(config.students) * len(asks.questions)
    assert result.stage("loadings").calls == m


def test_the_scripted_students_answer_by_their_hidden_utilities(tmp_path):
    """The offline student follows the published answer model on the judge's own utilities:
    the persona a student judges best is the one it prefers in its pair questions."""
    config = tiny_config(tmp_path, samples=4)
    world = ScriptedWorld(config)
    texts = list(world._questions)
    for i in range(len(config.students)):
        v = np.mean([world.utilities(i, t) for t in texts], axis=0)
        settings = split_config(config, scripted=True).asks
        best, worst = int(np.argmax(v)), int(np.argmin(v))
        a, b = sorted((best, worst))
        pair = next(q for q in settings.bank() if q.kind == "pair" and q.pair == (a, b))
        probs = world.answer_probabilities(i, pair)
        assert probs[int(a == best)] > 0.5


def test_dry_run_counts_the_ask_calls_and_a_rerun_sends_none(tmp_path):
    config = tiny_config(tmp_path)
    expected = expected_calls(config)
    before = {s.stage: s for s in estimate(config).stages}
    assert {name: s.calls for name, s in before.items()} == expected
    assert before["asks"].exact and before["loadings"].exact  # their prompts need no answer
    generate(config, progress=False)
    after = estimate(config).stages
    assert all(s.cached == s.calls and s.to_send == 0 for s in after)


def test_asks_can_be_turned_off(tmp_path):
    config = tiny_config(tmp_path, asks={"enabled": False})
    result = generate(config, progress=False)
    assert load_world(result.output).asks is None
    assert [s.stage for s in result.stages] == ["questions", "answers", "rater", "judge"]
    assert tiny_config(tmp_path, asks=False).asks is False


def test_a_killed_run_resumes_without_asking_answered_questions_again(tmp_path):
    config = tiny_config(tmp_path)
    calls = expected_calls(config)
    before_asks = sum(calls.values()) - calls["asks"]

    class Killed(InterruptOnCall, ScriptedBackend):
        k = before_asks + calls["asks"] // 2  # half-way through the students' answers

    client = LLMClient(Killed(ScriptedWorld(config).handlers()), cache=config.llm.cache)
    with pytest.raises(KeyboardInterrupt), client:
        generate(config, client=client, progress=False)
    again = generate(config, progress=False)
    asks = again.stage("asks")
    assert again.complete and asks.calls == calls["asks"]
    assert 0 < asks.cached < asks.calls and asks.sent == asks.calls - asks.cached
    assert sum(s.sent for s in again.stages) == asks.sent  # nothing else was sent again


def test_a_datagen_world_runs_on_an_ask_track(tmp_path, capsys):
    result = generate(tiny_config(tmp_path), progress=False)
    out = tmp_path / "rows.jsonl"
    args = ["run", "--worlds", f"{result.output}+ask2", "--policies", "notransfer-ask"]
    assert main([*args, "--seeds", "0", "--out", str(out), "--jobs", "1", "--no-progress"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    asked = [r for r in rows if r["policy"] == "notransfer-ask"]
    assert asked and all(r["asked"] > 0 for r in asked)


def test_a_reply_names_one_choice():
    assert parse_choice("**3** - a lot", ("0", "1", "2", "3", "4")) == "3"
    assert parse_choice("3 or 4", ("0", "1", "2", "3", "4")) is None
    assert parse_choice("I want tutor 12 least", tuple(str(i) for i in range(1, 13))) == "12"
    assert parse_choice("none of them", ("1", "2")) is None


def test_over_http_online_and_in_batches_the_students_answer_alike(tmp_path, monkeypatch):
    """The test server plays the students too (it tells their prompts from the judge's); a
    batch run asks them in provider batches and builds the same bank."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = load_config(write_server_config(tmp_path / "server.yaml", "server"))
    config = dataclasses.replace(config, batch=dataclasses.replace(config.batch, poll=0.01))
    banks = []
    for mode in ("online", "batch"):
        with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
            llm = dataclasses.replace(
                config.llm, base_url=server.base_url, cache=str(tmp_path / f"{mode}.sqlite")
            )
            result = generate(
                config, llm=llm, output=tmp_path / mode, progress=False, batch=mode == "batch"
            )
        assert result.complete and result.stage("asks").calls == 2 * (8 + 3 + 3)
        banks.append(result.world.asks)
    assert banks[0].to_json() == banks[1].to_json()
