"""`OpenAIBackend.endpoint`: the base URL requests actually go to, with nothing secret in it."""

from __future__ import annotations

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, make_requests

from prefduel.llm import LLMClient
from prefduel.llm.openai_backend import SDK_DEFAULT_BASE_URL, OpenAIBackend, public_url
from prefduel.llm.testserver import OpenAITestServer


@pytest.mark.parametrize(
    ("url", "public"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
        ("https://user:sk-secret@api.example.com/v1?api-key=sk-secret#x", "https://api.example.com/v1"),
        ("http://[::1]:9/v1", "http://[::1]:9/v1"),
    ],
)
def test_public_url_keeps_no_credentials(url, public):
    assert public_url(url) == public


def test_endpoint_before_and_after_sending(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIBackend(api_key_env=KEY_ENV).endpoint == SDK_DEFAULT_BASE_URL
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.example:1/v1/")
    assert OpenAIBackend(api_key_env=KEY_ENV).endpoint == "http://env.example:1/v1"
    with OpenAITestServer() as server:
        # the environment's URL loses to the one given; the SDK's resolved URL is recorded
        backend = OpenAIBackend(server.base_url + "/", api_key_env=KEY_ENV, timeout=5)
        with LLMClient(backend, max_connections=2) as client:
            assert all(r.ok for r in client.run(make_requests(2)))
        assert backend.endpoint == server.base_url
