"""Offline end to end with the scripted backend: CLI, runner, determinism, dry run, malformed
answers, failed calls."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
from pb_datagen_helpers import SMALL, cache_rows, expected_calls, tiny_config

from prefduel.cli.main import main
from prefduel.datagen import (
    ASK_STAGES,
    STAGES,
    ScriptedWorld,
    estimate,
    generate,
    make_datagen_client,
)
from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.worlds.world import load_world


def test_cli_builds_the_example_world_and_the_runner_scores_it(tmp_path, capsys):
    world_dir, cache = tmp_path / "small", tmp_path / "cache.sqlite"
    common = ["--cache", str(cache), "--call-log", str(tmp_path / "calls.jsonl")]
    assert main(["datagen", str(SMALL), "--out", str(world_dir), "--no-progress", *common]) == 0
    out = capsys.readouterr().out
    assert "11,520" in out and f"world {world_dir}: N=40 arrivals x S=24 rounds" in out
    world = load_world(world_dir)
    assert (world.N, world.S, world.K, world.d) == (40, 24, 6, 7)
    assert world.info["generator"] == "datagen" and world.info["samples"] == 4
    assert sorted(np.bincount(world.student_index)) == [20, 20]
    assert {q["kind"] for q in world.questions} == {"definition", "computation", "why"}
    assert all(q["text"].endswith(q["cue_text"]) for q in world.questions)
    for name in ("summary.json", "questions.jsonl", "tables.npz", "battles.jsonl"):
        assert (world_dir / "datagen" / name).is_file()
    battles = (world_dir / "datagen" / "battles.jsonl").read_text().splitlines()
    assert len(battles) == 11_520 and set(json.loads(battles[0])) >= {
        "model_a",
        "model_b",
        "winner",
        "judge",
    }

    # the dry run now finds every call in the cache
    assert main(["datagen", str(SMALL), "--dry-run", "--format", "json", *common]) == 0
    plan = json.loads(capsys.readouterr().out)
    # the four stages' 11,712, then 8 style loadings and 2 students x 26 preference questions
    assert plan["total"]["calls"] == 11_712 + 8 + 2 * 26 and plan["total"]["to_send"] == 0

    results = tmp_path / "results.jsonl"
    run = ["run", "--worlds", str(world_dir), "--policies", "random,notransfer", "--seeds", "0-1"]
    assert main([*run, "--out", str(results), "--jobs", "1", "--no-progress"]) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    score = {
        p: np.mean([r["score"] for r in rows if r["policy"] == p])
        for p in {r["policy"] for r in rows}
    }
    assert abs(score["random"]) < 10
    assert score["ref:oracle-user"] > 60  # a per-user oracle beats random pairs clearly
    assert score["notransfer"] > 10


def test_same_config_gives_identical_worlds(tmp_path):
    a = generate(tiny_config(tmp_path / "a"), progress=False)
    b = generate(tiny_config(tmp_path / "b"), progress=False)
    assert a.complete and b.complete
    assert a.world.digest() == b.world.digest()
    assert (a.output / "world.json").read_bytes() == (b.output / "world.json").read_bytes()
    other = generate(tiny_config(tmp_path / "c", seed=4), progress=False)
    assert other.world.digest() != a.world.digest()


def test_dry_run_counts_equal_the_calls_made(tmp_path):
    config = tiny_config(tmp_path)
    before = estimate(config)
    expected = expected_calls(config)
    assert {s.stage: s.calls for s in before.stages} == expected
    assert all(s.cached == 0 for s in before.stages)
    # the ask stages' prompts need no earlier answer: exact
    assert [s.exact for s in before.stages] == [True, False, False, False, True, True]
    assert before.total.prompt_tokens > 0 and before.total.cost == 0  # scripted: free
    assert "~" in before.format()

    result = generate(config, progress=False)
    made = {s.stage: s.calls for s in result.stages}
    assert made == expected
    assert {s.stage: s.sent for s in result.stages} == {s.stage: s.to_send for s in before.stages}
    assert cache_rows(config.llm.cache) == sum(expected.values())

    after = estimate(config)
    assert all(s.exact and s.cached == s.calls and s.to_send == 0 for s in after.stages)
    assert [s.calls for s in after.stages] == [expected[s] for s in (*STAGES, *ASK_STAGES)]

    again = generate(config, progress=False)  # everything from the cache, nothing sent
    assert all(s.sent == 0 and s.cached == s.calls for s in again.stages)
    assert again.world.digest() == result.world.digest()


def test_malformed_answers_are_counted_reported_and_retried(tmp_path):
    config = tiny_config(tmp_path, scripted={"judge_malformed": 0.1, "rater_malformed": 0.4})
    result = generate(config, progress=False)
    assert result.complete
    judge, rater = result.stage("judge"), result.stage("rater")
    picks = np.load(result.output / "datagen" / "tables.npz")["picks"]
    assert judge.malformed > 0 and judge.malformed == int((picks < 0).sum())
    assert judge.retried == 0 and judge.unusable == judge.malformed
    assert result.diagnostics["missing"] == judge.malformed
    assert judge.calls == expected_calls(config)["judge"]
    # rater: a malformed answer is asked again with the next sample index (2 retries)
    assert rater.malformed > 0 and rater.retried == rater.malformed - rater.unusable
    assert rater.calls == config.n_questions + rater.retried
    logged = [json.loads(line) for line in (result.output / "datagen" / "malformed.jsonl").open()]
    loadings = result.stage("loadings")  # the rater's scores of the style dimensions
    assert Counter(m["stage"] for m in logged) == {
        "judge": judge.malformed,
        "rater": rater.malformed,
        "loadings": loadings.malformed,
    }
    assert all("text" in m and "sample" in m for m in logged)
    text = result.summary()
    assert f"{judge.malformed:,d} missing (malformed)" in text
    assert "malformed answers:" in text
    summary = json.loads((result.output / "datagen" / "summary.json").read_text())
    assert summary["malformed"] == {
        "judge": judge.malformed,
        "rater": rater.malformed,
        "loadings": loadings.malformed,
    }
    # the dry run of the same config knows the cached malformed answers and their retries
    plan = estimate(config)
    assert [s.to_send for s in plan.stages] == [0] * 6
    assert plan.stages[2].calls == rater.calls


def test_failed_calls_leave_the_run_incomplete_and_a_rerun_resumes(tmp_path):
    config = tiny_config(tmp_path)
    handlers = ScriptedWorld(config).handlers()

    def flaky_judge(request):
        if "Which answer" in request.messages[-1].content and request.messages[0].content.count(
            "mathematics"
        ):
            raise RuntimeError("endpoint down for this student")
        return handlers["judge"](request)

    client = LLMClient(ScriptedBackend({**handlers, "judge": flaky_judge}), cache=config.llm.cache)
    with client:
        broken = generate(config, client=client, progress=False)
    assert not broken.complete and broken.world is None
    failed = broken.stage("judge").failed
    assert failed == expected_calls(config)["judge"] // 2  # every call of one of 2 students
    assert "INCOMPLETE" in broken.summary() and "RuntimeError" in broken.summary()
    # no world; only the incomplete run's summary, failures and malformed answers (issue 17)
    assert broken.output == tmp_path / "world"
    assert sorted(p.name for p in (tmp_path / "world").rglob("*") if p.is_file()) == [
        "failures.jsonl",
        "malformed.jsonl",
        "summary.json",
    ]
    summary = json.loads((tmp_path / "world" / "datagen" / "summary.json").read_text())
    assert summary["complete"] is False and summary["failed_calls"] == failed

    fixed = generate(config, progress=False)
    assert fixed.complete
    assert fixed.stage("judge").sent == failed  # only the missing calls were sent
    assert sum(s.sent for s in fixed.stages) == failed


def test_cli_exit_status_when_incomplete(tmp_path, capsys, monkeypatch):
    config = tiny_config(tmp_path)
    path = tmp_path / "tiny.yaml"
    path.write_text(
        "topics: {builtin: dev, take: [derivatives]}\n"
        "students: {builtin: dev, take: [math_major]}\nsamples: 1\nworld: {rounds: 6}\n"
    )

    def failing_client(cfg, llm=None):
        client = make_datagen_client(cfg, llm)
        client.backend.handlers["rater"] = lambda request: 1 / 0
        return client

    monkeypatch.setattr("prefduel.datagen.pipeline.make_datagen_client", failing_client)
    args = ["datagen", str(path), "--cache", config.llm.cache, "--out", str(tmp_path / "w")]
    assert main([*args, "--no-progress"]) == 1
    assert "INCOMPLETE" in capsys.readouterr().out
