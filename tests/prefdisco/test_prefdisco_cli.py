"""The prefdisco command: configs, flags, errors naming file and key, dry run."""

from __future__ import annotations

import json

import pytest
from pb_prefdisco_helpers import run_cli

from prefduel.prefdisco import ConfigError, PrefDiscoConfig, load_config
from prefduel.prefdisco.config import config_from_json


def test_config_round_trip_and_relative_paths(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "generate:\n  tasks: [{format: medqa, path: data/medqa.jsonl, limit: 5}]\n"
        "run:\n  models: [a, b]\n  router: llm\n"
        "llm_roles:\n  judge: {backend: openai, base_url: 'http://x/v1'}\n"
    )
    config = load_config(path)
    assert config.generate.tasks[0].path == str(tmp_path / "data" / "medqa.jsonl")
    assert config.run.models == ("a", "b") and config.run.router_model_name == "scripted-judge"
    assert (
        config.llm_for("judge").backend == "openai"
        and config.llm_for("model").backend == "scripted"
    )
    assert config_from_json(json.loads(json.dumps(config.to_json()))) == config
    assert load_config(None) == PrefDiscoConfig()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("generat: {}\n", "unknown sections ['generat']"),
        ("generate: {personas: 0}\n", "generate.personas: expected an integer >= 1"),
        ("generate: {seeds: 1}\n", "unknown keys ['seeds']"),
        ("generate: {k_min: 5, k_max: 3}\n", "k_max (3) must be >= k_min (5)"),
        ("generate: {tasks: [{format: gsm8k, path: x}]}\n", "tasks.format"),
        ("generate: {tasks: [{format: medqa}]}\n", "needs a path"),
        ("run: {conditions: [baseline, better]}\n", "run.conditions"),
        ("run: {models: gpt-4o}\n", "run.models: expected a list"),
        ("run: {router: magic}\n", "run.router"),
        ("report: {min_gap: 0}\n", "report.min_gap"),
        ("llm: {backend: magic}\n", "backend"),
        ("llm_roles: {jury: {}}\n", "unknown group 'jury'"),
        ("llm_roles: {judge: {colour: red}}\n", "unknown keys ['colour']"),
        ("- a list\n", "expected a mapping"),
    ],
)
def test_bad_configs_name_file_and_key(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert fragment in str(info.value) and "bad.yaml" in str(info.value)


def test_cli_errors_exit_2_with_a_message(tmp_path):
    status, _, err = run_cli(["run", str(tmp_path / "nowhere")])
    assert status == 2 and "manifest" in err and "does not exist" in err
    status, _, err = run_cli(["generate", str(tmp_path / "d"), "--tasks", "gsm8k:x.jsonl"])
    assert status == 2 and "--tasks gsm8k:x.jsonl" in err
    status, _, err = run_cli(["generate", str(tmp_path / "d"), "--tasks", "medqa:nope.jsonl"])
    assert status == 2 and "nope.jsonl does not exist" in err
    (tmp_path / "bad.yaml").write_text("run: {max_turns: -1}\n")
    status, _, err = run_cli(
        ["generate", str(tmp_path / "d"), "--config", str(tmp_path / "bad.yaml")]
    )
    assert status == 2 and "run.max_turns" in err
    status, _, err = run_cli(["report", str(tmp_path)])
    assert status == 2 and "run.json" in err
    status, _, _ = run_cli(["run"])  # usage error
    assert status == 2


def test_flags_dry_run_and_guards(tmp_path, monkeypatch):
    folder = tmp_path / "d"
    status, out, err = run_cli(
        [
            "generate",
            str(folder),
            "--personas",
            "3",
            "--per-task",
            "1",
            "--tasks",
            "builtin",
            "--limit",
            "2",
            "--seed",
            "5",
        ]
    )
    assert status == 0, err
    assert "3 personas" in out and "2 tasks, 2 instances" in out
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["config"]["generate"]["seed"] == 5 and manifest["counts"]["instances"] == 2
    status, out, _ = run_cli(
        ["run", str(folder), "--dry-run", "--models", "m1,m2", "--max-turns", "3"]
    )
    assert status == 0 and "12 episodes, 12 to run (0 already scored)" in out
    assert "no price for" in out and not (folder / "scores.jsonl").exists()
    # a real endpoint cannot serve the scripted default models
    monkeypatch.setenv("PREFDUEL_FAKE_KEY", "sk-pbtest-guard-000000")
    status, _, err = run_cli(
        [
            "run",
            str(folder),
            "--backend",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key-env",
            "PREFDUEL_FAKE_KEY",
        ]
    )
    assert (
        status == 2 and "scripted models ['scripted-ask1', 'scripted-ask3', 'scripted-ask5']" in err
    )
    # settings are tied to the run folder
    assert run_cli(["run", str(folder), "--no-progress"])[0] == 0
    status, _, err = run_cli(["run", str(folder), "--no-progress", "--max-turns", "2"])
    assert status == 2 and "changed: max_turns" in err
    status, out, _ = run_cli(
        ["run", str(folder), "--no-progress", "--max-turns", "2", "--out", str(tmp_path / "r2")]
    )
    assert status == 0 and "0 already scored" in out
    status, out, _ = run_cli(
        ["report", str(tmp_path / "r2"), "--bootstrap", "0", "--out", str(tmp_path / "rep")]
    )
    assert status == 0 and (tmp_path / "rep" / "report.html").is_file()


def test_sampling_parameters_per_role():
    from prefduel.prefdisco import RunConfig

    default = RunConfig()  # caps raised (issue 17) so reasoning models are not cut
    assert default.params("ask") == {"temperature": 0.0, "max_tokens": 1024}
    assert default.params("judge") == {"temperature": 0.0, "max_tokens": 512}
    reasoning = RunConfig(
        temperature=None, max_tokens_param="max_completion_tokens", answer_max_tokens=None
    )
    assert reasoning.params("answer") == {}
    assert reasoning.params("ask") == {"max_completion_tokens": 1024}
    assert reasoning.params("router") == {"temperature": 0.0, "max_completion_tokens": 512}
    with pytest.raises(ConfigError, match="max_tokens_param"):
        RunConfig(max_tokens_param="tokens")


def test_a_finished_study_shows_no_empty_progress_bar(tmp_path, capsys):
    """prefdisco run on a finished study printed empty progress bars (issue 15)."""
    from prefduel.cli.main import main

    study = str(tmp_path / "study")
    assert main(["prefdisco", "generate", study]) == 0
    assert main(["prefdisco", "run", study]) == 0
    capsys.readouterr()
    assert main(["prefdisco", "run", study]) == 0
    captured = capsys.readouterr()
    assert "prefdisco:" not in captured.err and "episode/s" not in captured.err
    assert "0 run now" in captured.out


def test_the_local_model_example_names_real_roles_and_plans_its_calls(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "prefdisco_local.yaml"
    config = load_config(example)
    run = config.run
    names = [*run.models, run.judge_model, run.grader_model_name, run.router_model_name]
    assert not [n for n in names if n.startswith("scripted-")]
    assert run.answer_max_tokens == 2048 and run.judge_structured == "auto"
    assert config.llm.backend == "openai" and config.llm.max_connections == 1
    status, _, err = run_cli(["generate", str(tmp_path / "local"), "--config", str(example)])
    assert status == 0, err
    status, out, _ = run_cli(["run", str(tmp_path / "local"), "--dry-run"])
    assert status == 0 and "9 episodes" in out and "at most" in out
