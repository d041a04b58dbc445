"""Every size a user can type into PrefDisco (flags and config fields) has an upper bound,
checked with a named error before anything is allocated or any call is made."""

from __future__ import annotations

import pytest
from pb_prefdisco_helpers import run_cli

from prefduel.prefdisco.study import pipeline


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if generation samples anything."""

    def refuse(*args, **kwargs):
        raise AssertionError("work started before the sizes were checked")

    monkeypatch.setattr(pipeline, "sample_dataset", refuse)


@pytest.mark.parametrize(
    "flag",
    ["--personas", "--per-task", "--limit"],
)
def test_generate_flags_are_bounded(tmp_path, no_work, flag):
    status, _, err = run_cli(["generate", str(tmp_path / "d"), flag, "1000000000000"])
    assert status == 2 and "Traceback" not in err
    assert flag in err and "<=" in err


def test_run_max_turns_is_bounded(tmp_path):
    status, _, err = run_cli(["run", str(tmp_path / "d"), "--max-turns", "1000000"])
    assert status == 2 and "--max-turns" in err and "<=" in err


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("generate", "seed", "1000000000000"),
        ("generate", "personas", "1000000"),
        ("generate", "personas_per_task", "1000000000000"),
        ("generate", "k_max", "1000000"),
        ("generate", "max_per_family", "1000000000000"),
        ("generate", "relevance_power", "1000000.0"),
        ("run", "max_turns", "1000000"),
        ("run", "ask_attempts", "1000000"),
        ("run", "judge_attempts", "1000000"),
        ("run", "max_attributes_per_question", "1000000"),
        ("run", "ask_max_tokens", "1000000000000"),
        ("run", "answer_max_tokens", "1000000000000"),
        ("run", "judge_max_tokens", "1000000000000"),
        ("run", "episodes_in_flight", "1000000000"),
        ("run", "api_seed", "100000000000000000000000000000"),
        ("run", "tfidf_threshold", "1000000000000"),
        ("report", "bootstrap", "1000000000"),
        ("report", "seed", "1000000000000"),
    ],
)
def test_config_sizes_are_bounded(tmp_path, no_work, section, key, value):
    config = tmp_path / "c.yaml"
    config.write_text(f"{section}:\n  {key}: {value}\n", encoding="utf-8")
    status, _, err = run_cli(["generate", str(tmp_path / "d"), "--config", str(config)])
    assert status == 2 and "Traceback" not in err, err
    assert f"{section}.{key}" in err and "<=" in err, err


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("personas", "1000000"),
        ("max_turns", "1000000"),
        ("iterations", "1000000000"),
        ("classes", "1000000"),
        ("phrase_attempts", "1000000"),
    ],
)
def test_interviewer_sizes_are_bounded(tmp_path, no_work, key, value):
    inner = (
        f"{{prior: {{{key}: {value}}}}}"
        if key in ("personas", "iterations", "classes")
        else (f"{{{key}: {value}}}")
    )
    config = tmp_path / "c.yaml"
    config.write_text(f"run:\n  interviewer: {inner}\n", encoding="utf-8")
    status, _, err = run_cli(["generate", str(tmp_path / "d"), "--config", str(config)])
    assert status == 2 and "Traceback" not in err, err
    assert key in err and "<=" in err, err


def test_a_task_limit_in_the_config_is_bounded(tmp_path, no_work):
    config = tmp_path / "c.yaml"
    config.write_text(
        "generate:\n  tasks: [{format: builtin, limit: 1000000000000}]\n", encoding="utf-8"
    )
    status, _, err = run_cli(["generate", str(tmp_path / "d"), "--config", str(config)])
    assert status == 2 and "limit" in err and "<=" in err, err


def test_too_many_instances_are_refused_before_any_persona_is_drawn(tmp_path, monkeypatch):
    from prefduel.prefdisco.dataset import folder as dataset

    def refuse(*args, **kwargs):
        raise AssertionError("personas were drawn before the instances were counted")

    monkeypatch.setattr(dataset, "sample_personas", refuse)
    monkeypatch.setattr(dataset, "MAX_INSTANCES", 10)
    status, _, err = run_cli(
        ["generate", str(tmp_path / "d"), "--personas", "4", "--per-task", "3", "--limit", "4"]
    )
    assert status == 2 and "Traceback" not in err, err
    assert "12 instances" in err and "10" in err, err


def test_the_flags_share_the_config_bounds():
    from prefduel.cli import prefdisco_cmd
    from prefduel.prefdisco import config

    for name in ("MAX_PERSONAS", "MAX_TASK_ITEMS", "MAX_TURNS", "MAX_BOOTSTRAP"):
        assert getattr(prefdisco_cmd, name) == getattr(config, name), name
