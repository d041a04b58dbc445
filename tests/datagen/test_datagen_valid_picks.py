"""A world is built only from enough valid judge picks (``judge.min_valid``, default half of
them): below that, the run names the counts, writes no world, and keeps every answer cached, so
a re-run with a fixed judge sends only the judge's calls."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from pb_datagen_helpers import (
    FAKE_KEY,
    KEY_ENV,
    cache_rows,
    expected_calls,
    tiny_config,
    tiny_mapping,
)

from prefduel.cli.main import main
from prefduel.datagen import (
    DatagenConfigError,
    DatagenError,
    ScriptedWorld,
    config_from_mapping,
    generate,
)
from prefduel.llm.testserver import OpenAITestServer


def test_a_judge_without_one_valid_pick_writes_no_world(tmp_path):
    config = tiny_config(tmp_path, scripted={"judge_malformed": 1.0})
    calls = expected_calls(config)
    with pytest.raises(DatagenError) as info:
        generate(config, progress=False)
    message = str(info.value)
    picks = calls["judge"]
    assert f"only 0 of {picks:,} judge picks are valid (0%); at least 50% must be" in message
    assert f"{picks:,} missing after {picks:,} malformed replies" in message
    assert "judge.min_valid" in message and "cache clear --role judge" in message
    world = tmp_path / "world"
    assert not (world / "world.json").exists() and not (world / "arrays.npz").exists()
    summary = json.loads((world / "datagen" / "summary.json").read_text())
    assert summary["complete"] is False and summary["refused"] == message
    malformed = (world / "datagen" / "malformed.jsonl").read_text().splitlines()
    assert len(malformed) == picks
    # every answer is cached: nothing paid for is lost
    assert cache_rows(config.llm.cache) == sum(calls.values())


def _with_judge(config, model: str):
    judge = dataclasses.replace(config.models["judge"], model=model)
    return dataclasses.replace(config, models={**config.models, "judge": judge})


def test_a_rerun_with_a_fixed_judge_sends_only_the_judges_calls(tmp_path, monkeypatch):
    """An endpoint whose judge model never answers with a letter; the re-run names another."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = tiny_config(tmp_path, personas={"builtin": True, "take": 3})
    llm = dataclasses.replace(config.llm, backend="openai", api_key_env=KEY_ENV)
    config = dataclasses.replace(config, llm=llm)
    world = ScriptedWorld(config)

    def answer(body):
        if body["model"] == "gpt-4o":
            return "Both answers have their merits, and I would rather not choose."
        return world.http_answer(body)

    calls = expected_calls(config)
    with OpenAITestServer(answer=answer) as server:
        llm = dataclasses.replace(config.llm, base_url=server.base_url)
        broken = dataclasses.replace(_with_judge(config, "gpt-4o"), llm=llm)
        with pytest.raises(DatagenError, match="only 0 of"):
            generate(broken, progress=False)
        # the broken model plays the students too: each answer malformed, asked again
        retried = config.ask_retries * calls["asks"]
        assert cache_rows(config.llm.cache) == sum(calls.values()) + retried
        result = generate(dataclasses.replace(_with_judge(config, "gpt-4o-mini"), llm=llm),
                          progress=False)
    assert result.complete and result.world is not None
    sent = {s.stage: s.sent for s in result.stages}
    # the students answer preference questions with the judge's model: asked again too
    assert sent == {
        "questions": 0,
        "answers": 0,
        "rater": 0,
        "judge": calls["judge"],
        "loadings": 0,
        "asks": calls["asks"],
    }
    assert cache_rows(config.llm.cache) == (
        sum(calls.values()) + retried + calls["judge"] + calls["asks"]
    )


def test_the_share_of_valid_picks_is_a_setting(tmp_path):
    # about 40% of the picks valid: refused at the default half, accepted at 30%
    with pytest.raises(DatagenError, match=r"judge picks are valid \(4\d%\); at least 50%"):
        generate(tiny_config(tmp_path / "a", scripted={"judge_malformed": 0.6}), progress=False)
    config = tiny_config(
        tmp_path / "b", scripted={"judge_malformed": 0.6}, judge={"min_valid": 0.3}
    )
    result = generate(config, progress=False)
    assert result.complete and result.world is not None
    assert 0.3 < result.diagnostics["valid"] / expected_calls(config)["judge"] < 0.5


@pytest.mark.parametrize("value", [0, -0.1, 1.5, "half"])
def test_min_valid_is_a_share(value):
    """A share in (0, 1]: a world always needs some valid pick."""
    with pytest.raises(DatagenConfigError, match=r"judge\.min_valid"):
        config_from_mapping(tiny_mapping(judge={"min_valid": value}), source="c.yaml")


def test_the_command_prints_the_summary_and_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(
        yaml.safe_dump(tiny_mapping(scripted={"judge_malformed": 1.0}))
    )
    assert main(["datagen", "c.yaml", "--no-progress", "--cache", "c.sqlite"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("prefduel: error: only 0 of ") and "Traceback" not in err
    assert "judge" in out and "NO WORLD" in out
    for word in ("nan", "inf"):
        assert word not in out.lower().replace("information", "")
