"""``prefduel cache stats|clear`` through the handler functions."""

from __future__ import annotations

import argparse
import io
import json

import pytest
from pb_llm_helpers import make_requests

from prefduel.cli import cache_cmd
from prefduel.llm import CacheError, LLMResponse, ResponseCache, Usage


def _parse(argv):
    parser = argparse.ArgumentParser(prog="prefduel")
    commands = cache_cmd.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return commands[args.command], args


def _run(*argv):
    handler, args = _parse(list(argv))
    out = io.StringIO()
    status = handler(args, out)
    return status, out.getvalue()


@pytest.fixture
def cache_file(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        for model, role, n, usage in (
            ("gpt-4o-mini", "judge", 6, Usage(1_000_000, 0)),
            ("gpt-4o", "rater", 2, Usage(0, 1_000_000)),
            ("local-model", "answer", 3, Usage(10, 10)),
        ):
            for r in make_requests(n, role=role, model=model):
                cache.put(LLMResponse(request=r, text="x", usage=usage), "openai")
    return path


def test_stats_text(cache_file):
    status, text = _run("cache", "stats", "--cache", str(cache_file))
    assert status == 0
    assert f"cache: {cache_file}" in text and "KB on disk" in text
    assert "entries: 11" in text and "prompt tokens: 6,000,030" in text
    assert f"{6 * 0.15 + 2 * 10.0:.4f} USD" in text
    model_table = text[text.index("\nmodel ") :]
    assert "gpt-4o-mini" in model_table and "local-model" in model_table
    assert "\nrole " in text and "judge" in text and "rater" in text
    assert "no price for: local-model" in text
    assert "\nbackend " not in text  # one backend only


def test_stats_json_and_user_prices(cache_file, tmp_path):
    prices = tmp_path / "p.yaml"
    prices.write_text("models:\n  local-model: {input: 1000000, output: 0}\n")
    status, text = _run(
        "cache", "stats", "--cache", str(cache_file), "--prices", str(prices), "--format", "json"
    )
    data = json.loads(text)
    assert status == 0 and data["entries"] == 11 and data["unpriced_models"] == []
    assert data["cost"] == pytest.approx(6 * 0.15 + 2 * 10.0 + 3 * 10)
    assert {g["role"]: g["entries"] for g in data["by_role"]} == {
        "judge": 6,
        "answer": 3,
        "rater": 2,
    }
    assert {g["model"] for g in data["by_model"]} == {"gpt-4o-mini", "gpt-4o", "local-model"}
    assert data["size_bytes"] > 0


def test_clear_needs_yes_and_honours_filters(cache_file):
    status, text = _run("cache", "clear", "--cache", str(cache_file), "--role", "judge")
    assert status == 1 and "would delete 6 of 11 entries matching role 'judge'" in text
    assert "--yes" in text
    with ResponseCache(cache_file) as cache:
        assert len(cache) == 11
    status, text = _run(
        "cache",
        "clear",
        "--cache",
        str(cache_file),
        "--model",
        "gpt-4o*",
        "--role",
        "judge",
        "--yes",
    )
    assert status == 0 and "deleted 6 entries" in text and "5 left" in text
    status, text = _run(
        "cache", "clear", "--cache", str(cache_file), "--backend", "scripted", "--yes"
    )
    assert status == 0 and "nothing to clear" in text
    status, text = _run("cache", "clear", "--cache", str(cache_file), "--yes")
    assert status == 0 and "deleted 5 entries" in text and "0 left" in text
    status, text = _run("cache", "stats", "--cache", str(cache_file))
    assert "entries: 0" in text


def test_default_path_from_environment(cache_file, monkeypatch):
    monkeypatch.setenv("PREFDUEL_LLM_CACHE", str(cache_file))
    status, text = _run("cache", "stats")
    assert status == 0 and "entries: 11" in text


def test_missing_cache_is_an_error_and_is_not_created(tmp_path):
    missing = tmp_path / "none.sqlite"
    for action in ("stats", "clear"):
        with pytest.raises(CacheError, match="does not exist"):
            _run("cache", action, "--cache", str(missing))
    assert not missing.exists()


def test_action_is_required():
    with pytest.raises(SystemExit):
        _parse(["cache"])
