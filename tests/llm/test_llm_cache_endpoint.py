"""The cache records the endpoint of each answer: another endpoint serving the same model alias
misses (with a warning) and replaces it; entries without an endpoint (older caches, scripted
answers) stay usable everywhere."""

from __future__ import annotations

import sqlite3
import warnings

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep, make_requests

from prefduel.llm import CacheEndpointWarning, LLMClient, LLMResponse, ResponseCache, Usage
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import OpenAITestServer

#: The responses table as schema 1 was first released (no endpoint, no logprobs columns).
LEGACY = """
CREATE TABLE responses (
    namespace TEXT NOT NULL, key TEXT NOT NULL, role TEXT NOT NULL, model TEXT NOT NULL,
    sample INTEGER NOT NULL, response_model TEXT NOT NULL, text TEXT NOT NULL,
    finish_reason TEXT, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    latency REAL NOT NULL, created REAL NOT NULL, request TEXT,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', '1');
"""


def _answer(request, text):
    return LLMResponse(request=request, text=text, model="gpt-4o-mini", usage=Usage(3, 1))


def test_an_older_cache_is_upgraded_and_its_entries_serve_every_endpoint(tmp_path):
    path = tmp_path / "old.sqlite"
    request = make_requests(1)[0]
    db = sqlite3.connect(path)
    db.executescript(LEGACY)
    db.execute(
        "INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        ("openai", request.key, "judge", "gpt-4o-mini", 0, "gpt-4o-mini", "A", "stop", 3, 1,
         0.1, 1.0, None),
    )
    db.commit()
    db.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ResponseCache(path) as cache:
            hit = cache.get(request, "openai", "http://127.0.0.1:1/v1")
            assert hit is not None and hit.text == "A"
            assert cache.stats().endpoints == ((None, 1),)
    with ResponseCache(path) as cache:  # opened again: the upgrade happens once
        assert cache.get(request, "openai", "http://elsewhere/v1").text == "A"


def test_another_endpoint_misses_warns_once_and_replaces(tmp_path):
    requests = make_requests(2)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        for r in requests:
            assert cache.put(_answer(r, "from one"), "openai", "http://one/v1")
        assert cache.get(requests[0], "openai", "http://one/v1").text == "from one"
        assert cache.get(requests[0], "openai").text == "from one"  # endpoint unknown: any
        with pytest.warns(CacheEndpointWarning, match="http://one/v1 are not reused for http"):
            assert cache.get(requests[0], "openai", "http://two/v1") is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the same pair warns once
            assert cache.get(requests[1], "openai", "http://two/v1") is None
            assert cache.cached_keys([r.key for r in requests], "openai", "http://two/v1") == set()
        assert cache.put(_answer(requests[0], "from two"), "openai", "http://two/v1")
        assert not cache.put(_answer(requests[0], "again"), "openai", "http://two/v1")
        assert cache.get(requests[0], "openai", "http://two/v1").text == "from two"
        assert cache.count(endpoint="http://one/v1") == 1
        assert dict(cache.stats().endpoints) == {"http://one/v1": 1, "http://two/v1": 1}


def test_a_client_on_another_server_asks_again(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    requests = make_requests(3)
    cache = tmp_path / "c.sqlite"
    texts = {}
    for name in ("first", "second"):
        with OpenAITestServer(answer=lambda body, name=name: f"{name} server") as server:
            backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV)
            with LLMClient(backend, cache=cache, sleep=RecordingSleep()) as client:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    texts[name] = [r.text for r in client.run(requests)]
                    sent = len(server.requests)
        assert sent == 3  # a different port: nothing reused
        assert any(w.category is CacheEndpointWarning for w in caught) == (name == "second")
    assert texts == {"first": ["first server"] * 3, "second": ["second server"] * 3}


def test_cache_stats_lists_endpoints_and_clear_filters_by_one(tmp_path):
    import argparse
    import io

    from prefduel.cli import cache_cmd

    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        for i, r in enumerate(make_requests(3)):
            cache.put(_answer(r, "x"), "openai", "http://one/v1" if i else None)

    def run(*argv):
        parser = argparse.ArgumentParser(prog="prefduel")
        commands = cache_cmd.register(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args(["cache", *argv, "--cache", str(path)])
        out = io.StringIO()
        return commands["cache"](args, out), out.getvalue()

    status, text = run("stats")
    assert status == 0 and "http://one/v1" in text and "not recorded" in text
    status, text = run("clear", "--endpoint", "http://one/v1", "--yes")
    assert status == 0 and "deleted 2 entries matching endpoint 'http://one/v1'" in text
    with ResponseCache(path) as cache:
        assert len(cache) == 1
