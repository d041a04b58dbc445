"""A base URL that cannot reach an OpenAI-compatible endpoint is refused when the backend is
configured (a named error, exit 2, at once), not retried for half a minute."""

from __future__ import annotations

import time

import pytest
import yaml

from prefduel.cli.main import main
from prefduel.llm import LLMConfig, LLMConfigError
from prefduel.llm.openai_backend import OpenAIBackend

BAD = {
    "ftp://example.com/v1": "http:// or https://",
    "localhost:8000": "http://localhost:8000",
    "127.0.0.1:8000/v1": "http://127.0.0.1:8000/v1",
    "": "http:// or https://",
    "   ": "http:// or https://",
    "http://": "no host",
    "https:///v1": "no host",
    "http://localhost:99999/v1": "port",
    "http://local host:8000/v1": "spaces",
    "http://localhost:8000/v1\n": "spaces",
}
GOOD = (
    "http://127.0.0.1:8000/v1",
    "https://api.example.com/v1",
    "http://[::1]:8080/v1",
    "HTTP://LOCALHOST:8000/v1",
)


@pytest.mark.parametrize("url", BAD)
def test_a_bad_base_url_is_refused_by_the_settings(url):
    with pytest.raises(LLMConfigError) as info:
        LLMConfig(backend="openai", base_url=url)
    message = str(info.value)
    assert "base_url" in message and BAD[url] in message, message


@pytest.mark.parametrize("url", BAD)
def test_a_bad_base_url_is_refused_by_the_backend(url):
    with pytest.raises(LLMConfigError, match="base URL"):
        OpenAIBackend(url, api_key_env=None)


@pytest.mark.parametrize("url", GOOD)
def test_good_base_urls_are_kept(url):
    assert LLMConfig(backend="openai", base_url=url).base_url == url
    assert OpenAIBackend(url, api_key_env=None).base_url == url


def test_a_bad_openai_base_url_variable_is_refused(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    with pytest.raises(LLMConfigError, match=r"\$OPENAI_BASE_URL.*http://localhost:8000"):
        OpenAIBackend(None, api_key_env=None)


@pytest.mark.parametrize("url", ["ftp://example.com/v1", "localhost:8000", ""])
@pytest.mark.parametrize("dry", [True, False])
def test_datagen_refuses_a_bad_base_url_at_once(tmp_path, monkeypatch, capsys, url, dry):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "topics": {"builtin": "dev", "take": ["derivatives"]},
        "students": {"builtin": "dev", "take": ["math_major"]},
        "samples": 1,
        "world": {"arrivals": 2, "rounds": 2},
    }))
    started = time.monotonic()
    code = main(["datagen", "c.yaml", "--backend", "openai", "--base-url", url, "--no-api-key",
                 "--no-progress", *(["--dry-run"] if dry else [])])
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("prefduel: error: ") and "base_url" in err, err
    assert took < 10 and not (tmp_path / "worlds").exists()


def test_a_bad_base_url_in_the_config_file_names_the_field(tmp_path):
    from prefduel.datagen import DatagenConfigError, config_from_mapping

    data = {
        "topics": {"builtin": "dev", "take": ["derivatives"]},
        "students": {"builtin": "dev", "take": ["math_major"]},
        "llm": {"backend": "openai", "base_url": "localhost:8000"},
    }
    with pytest.raises(DatagenConfigError, match=r"c\.yaml: llm\.base_url: .*http://localhost"):
        config_from_mapping(data, source="c.yaml")
