"""The SQLite answer cache: hits, misses, samples, namespaces, concurrent writers, stats, clear."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest
from pb_llm_helpers import make_requests

from prefduel.llm import (
    CacheError,
    LLMClient,
    LLMResponse,
    ResponseCache,
    ScriptedBackend,
    Usage,
    load_prices,
)


def _answer(request, text="A", usage=None):
    usage = usage or Usage(10, 2)
    return LLMResponse(request=request, text=text, model="gpt-4o-mini-2024", usage=usage)


def test_miss_then_hit_with_everything_stored(tmp_path):
    request = make_requests(1)[0]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.get(request, "openai") is None
        stored = _answer(request, "B")
        assert cache.put(stored, "openai") is True
        hit = cache.get(request, "openai")
    assert hit is not None
    assert (hit.text, hit.model, hit.usage, hit.finish_reason) == (
        "B",
        "gpt-4o-mini-2024",
        Usage(10, 2),
        None,
    )
    assert hit.cached and hit.cost == 0.0 and hit.attempts == 0 and hit.created > 0
    assert hit.request == request


def test_sample_indices_are_separate_entries(tmp_path):
    requests = make_requests(1, samples=4)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        for i, request in enumerate(requests):
            cache.put(_answer(request, f"pick {i}"), "openai")
        assert len(cache) == 4
        assert [cache.get(r, "openai").text for r in requests] == [f"pick {i}" for i in range(4)]


def test_namespaces_never_mix(tmp_path):
    request = make_requests(1)[0]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put(_answer(request, "scripted"), "scripted")
        assert cache.get(request, "openai") is None
        assert cache.get(request, "scripted").text == "scripted"


def test_first_answer_wins_and_failures_are_not_cached(tmp_path):
    request = make_requests(1)[0]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.put(_answer(request, "first"), "openai")
        assert not cache.put(_answer(request, "second"), "openai")
        assert cache.get(request, "openai").text == "first"
        with pytest.raises(ValueError, match="only answers are cached"):
            cache.put(LLMResponse(request=request, text=None, ok=False, error="x"), "openai")
        assert len(cache) == 1


def test_wal_mode_and_persistence(tmp_path):
    path = tmp_path / "sub" / "c.sqlite"
    requests = make_requests(3)
    with ResponseCache(path) as cache:
        for r in requests:
            cache.put(_answer(r), "openai")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with ResponseCache(path, create=False) as again:
        assert again.cached_keys([r.key for r in requests] + ["0" * 64], "openai") == {
            r.key for r in requests
        }


def test_missing_or_foreign_files_are_refused(tmp_path):
    with pytest.raises(CacheError, match="does not exist"):
        ResponseCache(tmp_path / "none.sqlite", create=False)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CacheError, match=r"junk\.sqlite"):
        ResponseCache(junk)
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema', '0')")
    with pytest.raises(CacheError, match="schema '0'"):
        ResponseCache(old)


def test_concurrent_threads_each_key_once(tmp_path):
    path = tmp_path / "c.sqlite"
    requests = make_requests(60)
    ResponseCache(path).close()

    def writer(offset: int) -> None:
        with ResponseCache(path) as cache:
            for r in requests[offset:] + requests[:offset]:
                cache.put(_answer(r, f"from {offset}"), "openai")

    threads = [threading.Thread(target=writer, args=(k * 20,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ResponseCache(path) as cache:
        assert sorted(cache.keys()) == sorted(r.key for r in requests)


WRITER = textwrap.dedent(
    """
    import sys
    from prefduel.llm import LLMClient, LLMRequest, ScriptedBackend
    path, start, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    requests = [LLMRequest.chat("m", f"q {i}", role="judge", sample=i % 3)
                for i in range(start, stop)]
    with LLMClient(ScriptedBackend(), cache=path, max_connections=8) as client:
        responses = client.run(requests)
    assert all(r.ok for r in responses)
    """
)


def test_concurrent_processes_fill_one_cache(tmp_path):
    """Three processes write overlapping ranges at once: every key exactly once, none lost."""
    path = tmp_path / "c.sqlite"
    ranges = [(0, 300), (100, 400), (200, 500)]
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(a), str(b)])
        for a, b in ranges
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    from prefduel.llm import LLMRequest

    expected = {LLMRequest.chat("m", f"q {i}", role="judge", sample=i % 3).key for i in range(500)}
    with ResponseCache(path) as cache:
        keys = list(cache.keys("scripted"))
        assert len(keys) == len(set(keys)) == 500
        assert set(keys) == expected


def test_stats_by_model_and_role(tmp_path):
    prices = load_prices()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        for r in make_requests(3, role="judge", model="gpt-4o-mini"):
            cache.put(_answer(r, usage=Usage(1_000_000, 0)), "openai")
        for r in make_requests(2, role="rater", model="gpt-4o"):
            cache.put(_answer(r, usage=Usage(0, 1_000_000)), "openai")
        for r in make_requests(2, role="rater", model="mystery-model"):
            cache.put(_answer(r, usage=Usage(5, 5)), "openai")
        for r in make_requests(4, role="judge", model="gpt-4o"):
            cache.put(_answer(r, usage=Usage(1_000_000, 1_000_000)), "scripted")
        stats = cache.stats(prices)
    assert stats.entries == 11
    assert stats.prompt_tokens == 3_000_000 + 10 + 4_000_000
    assert stats.completion_tokens == 2_000_000 + 10 + 4_000_000
    # 3 x 0.15 (gpt-4o-mini input) + 2 x 10.00 (gpt-4o output); scripted answers cost nothing
    assert stats.cost == pytest.approx(3 * 0.15 + 2 * 10.0)
    assert stats.unpriced_models == ("mystery-model",)
    assert stats.size_bytes > 0 and stats.oldest <= stats.newest
    by_role = {g.role: g.entries for g in stats.by("role")}
    by_model = {g.model: g.entries for g in stats.by("model")}
    assert by_role == {"judge": 7, "rater": 4}
    assert by_model == {"gpt-4o-mini": 3, "gpt-4o": 6, "mystery-model": 2}
    assert {g.namespace for g in stats.by("namespace")} == {"openai", "scripted"}


def test_clear_with_filters(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        for r in make_requests(3, role="judge", model="gpt-4o-mini"):
            cache.put(_answer(r), "openai")
        for r in make_requests(2, role="rater", model="gpt-4o"):
            cache.put(_answer(r), "openai")
        assert cache.count(model="gpt-4o*") == 5
        assert cache.count(role="rater", model="gpt-4o") == 2
        assert cache.clear(role="judge", model="gpt-4o") == 0
        assert cache.clear(role="judge") == 3
        assert len(cache) == 2
        assert cache.clear() == 2
        assert len(cache) == 0


def test_client_reads_what_another_client_wrote(tmp_path):
    requests = make_requests(5, samples=2)
    path = tmp_path / "c.sqlite"
    with LLMClient(ScriptedBackend(), cache=path) as first:
        answers = [r.text for r in first.run(requests)]
    with LLMClient(ScriptedBackend(handlers={"judge": lambda r: "changed"}), cache=path) as again:
        responses = again.run(requests)
    assert [r.text for r in responses] == answers
    assert all(r.cached for r in responses) and again.stats().attempts == 0
