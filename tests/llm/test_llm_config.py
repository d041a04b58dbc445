"""Shared LLM settings: YAML section, command-line flags, and the client they build."""

from __future__ import annotations

import argparse

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, make_requests

from prefduel.llm import (
    LLMConfig,
    LLMConfigError,
    ScriptedBackend,
    add_llm_arguments,
    config_from_args,
    make_client,
)
from prefduel.llm.openai_backend import OpenAIBackend


def _args(*argv):
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    return parser.parse_args(list(argv))


def test_flags_override_the_yaml_section_which_overrides_defaults(tmp_path):
    section = {"backend": "openai", "base_url": "http://a/v1", "max_connections": 8, "budget": 5}
    base = LLMConfig.from_mapping(section, source="run.yaml")
    assert config_from_args(_args(), base) == base
    config = config_from_args(
        _args("--base-url", "http://b/v1", "--max-attempts", "2", "--no-cache"), base
    )
    assert (config.backend, config.base_url, config.max_connections) == ("openai", "http://b/v1", 8)
    assert (config.max_attempts, config.use_cache, config.budget) == (2, False, 5)
    assert LLMConfig() == config_from_args(_args())


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ({"model": "x"}, "unknown LLM settings ['model']"),
        ({"backend": "anthropic"}, "backend: expected one of"),
        ({"max_connections": 0}, "max_connections: expected an integer >= 1"),
        ({"timeout": "fast"}, "timeout: expected seconds"),
        ({"budget": -1}, "budget: expected an amount >= 0"),
    ],
)
def test_bad_sections_name_the_source(section, fragment):
    with pytest.raises(LLMConfigError) as info:
        LLMConfig.from_mapping(section, source="run.yaml")
    assert str(info.value).startswith("run.yaml: ") and fragment in str(info.value)


def test_make_client(tmp_path, monkeypatch):
    config = LLMConfig(cache=str(tmp_path / "c.sqlite"), call_log=str(tmp_path / "log.jsonl"))
    with make_client(config, handlers={"judge": lambda r: "B"}) as client:
        assert isinstance(client.backend, ScriptedBackend)
        assert client.run(make_requests(2))[0].text == "B"
    assert (tmp_path / "c.sqlite").is_file() and (tmp_path / "log.jsonl").is_file()
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    real = LLMConfig(
        backend="openai", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV, use_cache=False
    )
    client = make_client(real)
    assert isinstance(client.backend, OpenAIBackend) and client.cache is None
    assert FAKE_KEY not in str(real.to_json()) and real.to_json()["api_key_env"] == KEY_ENV
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(LLMConfigError, match=KEY_ENV):
        make_client(real)
