"""``summary.json`` records the spend over every run that built the world (stopped by the
budget, interrupted, resumed) and the endpoint actually used; ``--no-api-key`` reaches a server
that needs no key."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pb_datagen_helpers import (
    FAKE_KEY,
    KEY_ENV,
    InterruptOnCall,
    expected_calls,
    files_containing,
    tiny_config,
    write_server_config,
)

from prefduel.cli.main import main
from prefduel.datagen import ScriptedWorld, generate, load_config
from prefduel.llm import LLMClient, ResponseCache, read_call_log
from prefduel.llm.openai_backend import NO_KEY, OpenAIBackend
from prefduel.llm.prices import load_prices
from prefduel.llm.testserver import OpenAITestServer


class InterruptingBackend(InterruptOnCall, OpenAIBackend):
    """Raises KeyboardInterrupt (Ctrl-C) on its k-th call."""

    def __init__(self, *args, k: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.k = k


def _config(tmp_path):
    config = tiny_config(
        tmp_path,
        personas={"builtin": True, "take": 3},
        topics=[{"id": "limits", "subject": "math", "chains": [{"concept": "limits"}]}],
        world={"arrivals": 4, "rounds": 3},
    )
    return dataclasses.replace(
        config, llm=dataclasses.replace(config.llm, backend="openai", api_key_env=KEY_ENV)
    )


def _summary(result):
    return json.loads((result.output / "datagen" / "summary.json").read_text())


def _logged_spend(call_log) -> float:
    return sum(r["cost"] for r in read_call_log(call_log) if r["status"] == "ok")


def test_summary_spend_is_cumulative_over_stopped_interrupted_and_resumed_runs(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)
    total_calls = sum(expected_calls(config).values())
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:

        def client(budget=None, k=None):
            kwargs = {"api_key_env": KEY_ENV, "timeout": 5}
            backend = (
                OpenAIBackend(server.base_url, **kwargs)
                if k is None
                else InterruptingBackend(server.base_url, k=k, **kwargs)
            )
            return LLMClient(
                backend,
                cache=config.llm.cache,
                call_log=config.llm.call_log,
                max_connections=4,
                budget=budget,
            )

        # run 1: stopped by the budget (incomplete: no world, no summary)
        with client(budget=0.0005) as capped:
            stopped = generate(config, client=capped, progress=False)
        assert not stopped.complete
        spent_1 = sum(s.cost for s in stopped.stages)
        assert spent_1 > 0
        # run 2: interrupted (Ctrl-C) mid-way: its spend is only in the cache and the call log
        sent_before = len(server.requests)
        with pytest.raises(KeyboardInterrupt), client(k=30) as interrupted:
            generate(config, client=interrupted, progress=False)
        assert len(server.requests) > sent_before
        # run 3: resumed to the end
        with client() as final:
            done = generate(config, client=final, progress=False)
        assert done.complete
        spent_3 = sum(s.cost for s in done.stages)
        summary_3 = _summary(done)  # run 4 rewrites it
        # run 4: everything cached, nothing spent
        with client() as again:
            rerun = generate(config, client=again, progress=False)

    with ResponseCache(config.llm.cache) as cache:
        assert len(cache) == total_calls
        cached_cost = cache.stats(load_prices()).cost  # the cache holds this world only
    logged = _logged_spend(config.llm.call_log)  # every reply received, over all runs
    assert logged > spent_1 + spent_3  # run 2 spent something too

    spend = summary_3["spend"]
    assert spend["currency"] == "USD"
    assert spend["this_run"] == pytest.approx(spent_3)
    assert spend["cumulative"] == pytest.approx(logged)
    assert spend["cumulative"] == pytest.approx(cached_cost)
    assert spend["earlier_runs"] == pytest.approx(logged - spent_3)
    stages = {s["stage"]: s for s in summary_3["stages"]}
    assert sum(s["cost"] + s["earlier_cost"] for s in stages.values()) == pytest.approx(logged)
    assert "spend:" in done.summary()

    again_spend = _summary(rerun)["spend"]
    assert again_spend["this_run"] == 0
    assert again_spend["cumulative"] == pytest.approx(logged)


def test_summary_records_the_endpoint_used_and_never_a_key(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    config = _config(tmp_path)
    with OpenAITestServer(answer=ScriptedWorld(config).http_answer) as server:
        llm = dataclasses.replace(config.llm, base_url=server.base_url)
        result = generate(config, llm=llm, progress=False)
        used = server.base_url
    summary = _summary(result)
    assert summary["backend"] == "openai"
    assert summary["base_url"] == used
    assert summary["config"]["llm"]["base_url"] == used  # the settings used, not the file's
    assert files_containing(tmp_path, FAKE_KEY) == []


def test_scripted_summary_has_no_endpoint_and_no_spend(tmp_path):
    result = generate(tiny_config(tmp_path), progress=False)
    summary = _summary(result)
    assert summary["backend"] == "scripted" and summary["base_url"] is None
    assert summary["spend"]["cumulative"] == 0 and summary["spend"]["this_run"] == 0


def test_cli_no_api_key_against_a_server_that_needs_none(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # the file names a key variable that is not set: --no-api-key must win
    path = write_server_config(tmp_path / "local.yaml", "local")
    out_dir = tmp_path / "world"
    flags = ["--cache", str(tmp_path / "c.sqlite"), "--out", str(out_dir), "--no-progress"]
    with OpenAITestServer(answer=ScriptedWorld(load_config(path)).http_answer) as server:
        args = ["datagen", str(path), "--base-url", server.base_url, *flags]
        assert main([*args, "--no-api-key"]) == 0, capsys.readouterr().err
        received = server.requests
        url = server.base_url
    assert received and {r.headers.get("authorization") for r in received} == {
        f"Bearer {NO_KEY}"
    }
    summary = json.loads((out_dir / "datagen" / "summary.json").read_text())
    assert summary["config"]["llm"]["api_key_env"] is None
    assert summary["base_url"] == url
    # without the flag the file's variable is required
    assert main(["datagen", str(path), "--base-url", url, *flags]) == 2
    assert f"environment variable {KEY_ENV}" in capsys.readouterr().err
