"""Structured outputs and logprob judges in datagen, over the real HTTP path to the test server:
the same world whether the server honours, ignores or refuses the schema; one logprob call per
judge configuration agrees with sampling in expectation, and falls back to sampling per call."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from pb_datagen_helpers import FAKE_KEY, KEY_ENV, tiny_config

from prefduel.datagen import ScriptedWorld, estimate, generate
from prefduel.datagen.judge import JudgeStage
from prefduel.llm import LLMClient
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import OpenAITestServer
from prefduel.worlds.tutorsim import JUDGE_CONFIGS

STRUCTURED = {"rater": {"structured": "auto"}, "judge": {"structured": "auto"}}


def _config(tmp_path, **overrides):
    # 3 personas, 3 questions, 2 students: 2 x 3 x 3 pairs x 4 = 72 judge configurations
    config = tiny_config(
        tmp_path,
        personas={"builtin": True, "take": 3},
        topics=[{"id": "limits", "subject": "math", "chains": [{"concept": "limits"}]}],
        world={"arrivals": 4, "rounds": 3},
        **overrides,
    )
    llm = dataclasses.replace(config.llm, backend="openai", api_key_env=KEY_ENV)
    return dataclasses.replace(config, llm=llm)


def _generate(config, **server_options):
    truth = ScriptedWorld(config)
    with OpenAITestServer(answer=truth.http_answer, **server_options) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5.0)
        with LLMClient(backend, cache=config.llm.cache, max_connections=8) as client:
            result = generate(config, client=client, progress=False)
        return result, server.requests


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


@pytest.fixture(scope="module")
def plain_world(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, FAKE_KEY)
        result, _ = _generate(_config(tmp_path_factory.mktemp("plain")))
    assert result.complete
    return result.world


@pytest.mark.parametrize("behaviour", ["honour", "ignore", "reject", "json_object"])
def test_the_same_world_whatever_the_server_does_with_the_schema(tmp_path, plain_world, behaviour):
    config = _config(tmp_path, models=STRUCTURED)
    assert config.models["judge"].max_tokens == 16  # a structured pick needs more than 4
    result, received = _generate(config, structured=behaviour)
    assert result.complete, result.summary()
    np.testing.assert_array_equal(result.world.P, plain_world.P)
    np.testing.assert_array_equal(result.world.Phi, plain_world.Phi)
    judge, rater = result.stage("judge"), result.stage("rater")
    sent = judge.calls - judge.structure_rejected  # each stage probes the ladder once first
    counts = {
        "honour": (judge.calls, 0, 0),
        "ignore": (0, judge.calls, 0),
        "reject": (0, 0, 2),
        "json_object": (sent, 0, 1),
    }[behaviour]
    assert (judge.structured, judge.structure_ignored, judge.structure_rejected) == counts
    assert rater.sent == 3 and rater.calls == 3 + rater.structure_rejected
    read = {"honour": 3, "ignore": 3, "reject": 0, "json_object": 3}[behaviour]
    assert rater.structured + rater.structure_ignored == read  # the rest answered plain
    assert result.stage("answers").structured == 0  # prose: auto sends no schema
    assert judge.failed == 0 and "structured output" in result.summary()
    formats = [r.body["response_format"] for r in received if "response_format" in r.body]
    names = {f["json_schema"]["name"] for f in formats if f["type"] == "json_schema"}
    # the students answer preference questions with the judge's settings: structured too
    assert names == {"pick", "scores", "level_answer", "pair_answer", "least_answer"}


def test_choice_mode_is_a_bare_enum_and_prose_can_be_wrapped(tmp_path, plain_world):
    models = {"judge": {"structured": "choice"}, "answer": {"structured": "json_schema"}}
    result, received = _generate(_config(tmp_path, models=models))
    assert result.complete and result.stage("judge").structured == result.stage("judge").calls
    np.testing.assert_array_equal(result.world.P, plain_world.P)
    enums = [
        r.body["response_format"]["json_schema"]["schema"]
        for r in received
        if "enum" in str(r.body.get("response_format"))
    ]
    # the judge picks A or B; the students (the judge's settings) pick their questions' labels
    assert {tuple(s["enum"]) for s in enums} == {
        ("A", "B"),
        ("0", "1", "2", "3", "4"),
        tuple(str(i + 1) for i in range(result.world.K)),
    }
    assert result.stage("answers").structured == result.stage("answers").calls


def test_logprob_judge_one_call_per_configuration_agrees_with_sampling(tmp_path):
    samples = 24
    lp_config = _config(tmp_path / "lp", samples=samples, judge={"mode": "logprobs"})
    truth = ScriptedWorld(lp_config)
    lp, _ = _generate(lp_config, distribution=truth.http_distribution)
    sampled_config = _config(tmp_path / "s", samples=samples)
    sampled, _ = _generate(sampled_config, distribution=truth.http_distribution)
    assert lp.complete and sampled.complete
    configurations = 2 * 3 * 3 * len(JUDGE_CONFIGS)
    assert lp.stage("judge").calls == configurations  # one call each
    assert sampled.stage("judge").calls == configurations * samples
    assert lp.diagnostics["from_logprobs"] == configurations
    assert lp.diagnostics["sampled_without_logprobs"] == 0 and lp.diagnostics["missing"] == 0
    tables = np.load(lp.output / "datagen" / "tables.npz")
    p = tables["judge_p"]
    picks = np.load(sampled.output / "datagen" / "tables.npz")["picks"]
    # sampled wins of the pair's first persona vs the logprob expectation p * samples
    wins = (picks == 1).sum(axis=-1)
    z = (wins - p * samples).sum() / math.sqrt((samples * p * (1 - p)).sum())
    assert abs(z) < 4, z
    assert np.all((p > 0) & (p < 1))
    assert "measured by logprobs" in lp.summary()
    # no pick was sampled: the summary says so rather than "0 valid, 0 missing"
    assert "judge: no sampled picks" in lp.summary() and "0 valid" not in lp.summary()
    assert "judge picks: " in sampled.summary()


def test_an_endpoint_without_logprobs_falls_back_to_sampling_per_call(tmp_path):
    samples = 2
    config = _config(tmp_path / "lp", samples=samples, judge={"mode": "logprobs"})
    truth = ScriptedWorld(config)
    result, _ = _generate(config, distribution=truth.http_distribution, logprobs=False)
    plain, _ = _generate(
        _config(tmp_path / "s", samples=samples), distribution=truth.http_distribution
    )
    configurations = 2 * 3 * 3 * len(JUDGE_CONFIGS)
    assert result.complete
    assert result.stage("judge").calls == configurations * (1 + samples)
    assert result.diagnostics["sampled_without_logprobs"] == configurations
    assert result.diagnostics["from_logprobs"] == 0
    np.testing.assert_array_equal(result.world.P, plain.world.P)  # the sampled requests


def test_the_dry_run_counts_one_logprob_call_per_configuration(tmp_path):
    config = _config(tmp_path, samples=8, judge={"mode": "logprobs"})
    plan = estimate(config)
    assert plan.stages[3].calls == 2 * 3 * 3 * len(JUDGE_CONFIGS)
    assert isinstance(JudgeStage, type)
