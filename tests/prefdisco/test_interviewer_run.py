"""The interviewer as a strategy of ``prefdisco run``: chosen by the config or ``--strategies``,
its settings and prior in run.json (tied to the folder), resumable through the cache, counted
by ``--dry-run``, through the HTTP client path, and reported like the ask strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pb_prefdisco_helpers import interviewer_study, jsonl_rows, run_cli

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import OpenAITestServer
from prefduel.prefdisco import (
    RoleClients,
    Transcript,
    default_handlers,
    load_config,
    load_dataset,
    run_study,
    server_answer,
)
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.interviewer.strategy import STOP_REASONS
from prefduel.prefdisco.study.estimate import estimate_run

KEY_ENV = "PREFDUEL_INTERVIEWER_TEST_KEY"


def _study(root: Path, *, strategies: str = "[ask, interviewer]", run: str = "") -> Path:
    """A small offline study (6 built-in tasks, one persona each) with the interviewer."""
    interviewer = "{phrasing: llm, prior: {personas: 40}}"
    return interviewer_study(root, strategies=strategies, interviewer=interviewer, run=run)


def test_the_config_chooses_the_interviewer_for_the_model_under_test(tmp_path):
    config = _study(tmp_path)
    status, out, err = run_cli(["run", str(tmp_path / "data"), "--config", str(config)])
    assert status == 0, err + out
    transcripts = jsonl_rows(tmp_path / "data" / "transcripts.jsonl")
    mine = [t for t in transcripts if t["strategy"] == "interviewer"]
    assert len(mine) == 6 and {t["condition"] for t in mine} == {"discovery"}
    assert all(t["episode_id"].split("|")[1] == "discovery:interviewer" for t in mine)
    assert {t["stop"] for t in mine} <= set(STOP_REASONS)
    for t in mine:
        roles = [c["role"] for c in t["calls"]]
        # the model under test words every question and writes the final answer; it asks nothing
        assert roles.count("phrase") == len(t["interview"]["steps"]) and "ask" not in roles
        assert roles[-1] == "answer" and {c["model"] for c in t["calls"]} == {"scripted-ask3"}
        pairs = [(turn["question"], turn["reply"]) for turn in t["turns"]]
        assert t["info"] == prompts.info_discovery(pairs)  # the same final request as ask's
        assert Transcript.from_json(t).to_json() == t
    # baseline and oracle episodes are shared: one per instance, not one per strategy
    assert sum(t["condition"] == "baseline" for t in transcripts) == 6


def test_the_strategies_flag_overrides_the_config_and_bad_values_are_named(tmp_path):
    config = _study(tmp_path, strategies="[ask]")
    args = ["run", str(tmp_path / "data"), "--config", str(config), "--no-progress"]
    status, out, err = run_cli([*args, "--strategies", "interviewer"])
    assert status == 0, err + out
    strategies = {t["strategy"] for t in jsonl_rows(tmp_path / "data" / "transcripts.jsonl")}
    assert strategies == {None, "interviewer"}
    status, _, err = run_cli([*args, "--strategies", "interview", "--out", str(tmp_path / "x")])
    assert status == 2 and "run.strategies" in err and "'interviewer'" in err


def test_run_json_records_the_interviewer_and_ties_it_to_the_folder(tmp_path):
    config = _study(tmp_path)
    data = tmp_path / "data"
    assert run_cli(["run", str(data), "--config", str(config), "--no-progress"])[0] == 0
    run = json.loads((data / "run.json").read_text())
    assert run["settings"]["interviewer"] == load_config(config).to_json()["run"]["interviewer"]
    prior = run["interviewer_prior"]
    assert prior["seed"] == 1 and prior["training_personas"] == 40
    assert prior["evaluation_personas_checked_disjoint"] == 6
    assert (data / prior["file"]).exists()
    changed = tmp_path / "changed.yaml"
    changed.write_text(config.read_text().replace("phrasing: llm", "phrasing: template"))
    status, _, err = run_cli(["run", str(data), "--config", str(changed), "--no-progress"])
    assert status == 2 and "changed: interviewer" in err
    same_seed = tmp_path / "same.yaml"
    same_seed.write_text(config.read_text().replace("personas: 40", "personas: 40, seed: 0"))
    status, _, err = run_cli(
        ["run", str(data), "--config", str(same_seed), "--out", str(tmp_path / "r2")]
    )
    assert status == 2 and "run.interviewer.prior.seed" in err


class _Counting:
    """Scripted handlers that count their calls per role (what the backend was asked)."""

    def __init__(self, handlers, fail=()):
        self.calls: dict[str, int] = {}
        self.fail = set(fail)
        self.handlers = {role: self._wrap(role, fn) for role, fn in handlers.items()}

    def _wrap(self, role, fn):
        def handler(request):
            if role in self.fail:
                raise ConnectionError("connection refused")
            self.calls[role] = self.calls.get(role, 0) + 1
            return fn(request)

        return handler


def test_a_failed_run_resumes_through_the_cache_without_paying_twice(tmp_path):
    config = load_config(_study(tmp_path, strategies="[interviewer]"))
    dataset = load_dataset(tmp_path / "data")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    cache = tmp_path / "cache.sqlite"
    down = _Counting(handlers, fail=("answer",))  # the server dies before any final answer
    with LLMClient(ScriptedBackend(down.handlers), cache=cache) as client:
        summary = run_study(dataset, config.run, RoleClients.single(client), tmp_path / "run")
    assert len(summary.failed) == 18 and down.calls["phrase"] > 0
    up = _Counting(handlers)
    with LLMClient(ScriptedBackend(up.handlers), cache=cache) as client:
        summary = run_study(dataset, config.run, RoleClients.single(client), tmp_path / "run")
    assert summary.failed == () and summary.ran == 18
    assert "phrase" not in up.calls  # every question was worded already: answered by the cache
    with LLMClient(ScriptedBackend(handlers)) as client:
        run_study(dataset, config.run, RoleClients.single(client), tmp_path / "fresh")
    for name in ("transcripts.jsonl", "scores.jsonl"):
        assert jsonl_rows(tmp_path / "run" / name) == jsonl_rows(tmp_path / "fresh" / name)


def _garbage(request):
    return "I would rather not say."


@pytest.mark.parametrize("phrasing", ["llm", "template"])
def test_the_dry_run_counts_the_interviewer_episodes(tmp_path, phrasing):
    config_path = _study(tmp_path, strategies="[interviewer]", run="  router: llm\n")
    text = config_path.read_text().replace("phrasing: llm", f"phrasing: {phrasing}")
    config_path.write_text(text)
    config = load_config(config_path)
    dataset = load_dataset(tmp_path / "data")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    for role in ("judge", "grader", "router", "phrase"):
        handlers[role] = _garbage
    handlers["answer"] = lambda request: "No final line here."
    estimate = estimate_run(dataset, config, tmp_path / "run")
    counting = _Counting(handlers)
    with LLMClient(ScriptedBackend(counting.handlers)) as client:
        summary = run_study(dataset, config.run, RoleClients.single(client), tmp_path / "run")
        sent = client.stats().requests
    assert summary.failed == ()
    assert estimate["calls"] <= sent <= estimate["max_calls"]
    phrase_calls = counting.calls.get("phrase", 0)
    scores = jsonl_rows(tmp_path / "run" / "scores.jsonl")
    questions = sum(row["questions"] for row in scores if row["strategy"])
    # with llm phrasing each question is asked twice (phrase_attempts), then the template
    assert phrase_calls == (2 * questions if phrasing == "llm" else 0) and questions > 0
    args = ["run", str(tmp_path / "data"), "--config", str(config_path), "--dry-run"]
    status, out, _ = run_cli(args)
    assert status == 0 and f"at most {estimate['max_calls']:,} calls" in out


@pytest.mark.filterwarnings("ignore::prefduel.llm.prices.UnknownModelPriceWarning")
def test_an_endpoint_run_reproduces_the_offline_run(tmp_path, monkeypatch):
    """The interviewer's phrasing requests through the openai SDK and HTTP (the test server
    recognises the phrase role), row for row as offline."""
    monkeypatch.setenv(KEY_ENV, "sk-pbtest-interviewer-0123456789")
    config = load_config(_study(tmp_path, strategies="[interviewer]"))
    dataset = load_dataset(tmp_path / "data")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    with OpenAITestServer(answer=server_answer(handlers)) as server:
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5)
        with LLMClient(backend) as client:
            summary = run_study(dataset, config.run, RoleClients.single(client), tmp_path / "http")
    assert summary.failed == ()
    with LLMClient(ScriptedBackend(handlers)) as client:
        run_study(dataset, config.run, RoleClients.single(client), tmp_path / "offline")
    for name in ("transcripts.jsonl", "scores.jsonl"):
        http = jsonl_rows(tmp_path / "http" / name)
        offline = jsonl_rows(tmp_path / "offline" / name)
        for row in http + offline:
            row.pop("settings")
        assert http == offline
