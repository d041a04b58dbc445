"""Kill a batch mid-way, re-run it: every call completes exactly once in the cache."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

from pb_llm_helpers import FAKE_KEY, KEY_ENV, RecordingSleep, make_requests

from prefduel.llm import LLMClient, ResponseCache, RetryPolicy, read_call_log
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import Fault, OpenAITestServer, body_key, random_faults

N = 80
BATCH = textwrap.dedent(
    f"""
    import sys
    sys.path.insert(0, {os.path.dirname(__file__)!r})
    from pb_llm_helpers import make_requests
    from prefduel.llm import LLMClient, RetryPolicy
    from prefduel.llm.openai_backend import OpenAIBackend
    base_url, cache, log = sys.argv[1:4]
    backend = OpenAIBackend(base_url, api_key_env={KEY_ENV!r}, timeout=5)
    retry = RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.02)
    with LLMClient(backend, cache=cache, call_log=log, max_connections=4, retry=retry) as client:
        client.run(make_requests({N}))
    """
)
FAULTS = [Fault.http(429, retry_after_ms=5), Fault.http(502), Fault.drop(), Fault.malformed()]


def _cached(path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def _body_key(request) -> str:
    return body_key(
        {
            "model": request.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            **request.params.to_json(),
        }
    )


def test_kill_and_resume_completes_every_call_exactly_once(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    cache_path, log_path = tmp_path / "cache.sqlite", tmp_path / "calls.jsonl"
    requests = make_requests(N)
    faults = random_faults(0.25, FAULTS, seed=3, max_faulty_attempts=2)
    with OpenAITestServer(faults=faults, latency=0.05) as server:
        proc = subprocess.Popen(
            [sys.executable, "-c", BATCH, server.base_url, str(cache_path), str(log_path)],
            env={**os.environ, KEY_ENV: FAKE_KEY},
        )
        deadline = time.monotonic() + 30
        try:
            while _cached(cache_path) < N // 4:
                assert proc.poll() is None, "the batch ended before it could be killed"
                assert time.monotonic() < deadline, "the batch made no progress"
                time.sleep(0.005)
        finally:
            os.kill(proc.pid, signal.SIGKILL)  # no cleanup, no flush: a real crash
            proc.wait()
        assert proc.returncode == -signal.SIGKILL

        with ResponseCache(cache_path) as cache:
            done_before = set(cache.keys())
        assert N // 4 <= len(done_before) < N
        assert done_before <= {r.key for r in requests}

        # resume in this process: cached answers are not sent again; the rest are
        server.reset()
        client = LLMClient(
            OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=5),
            cache=cache_path,
            call_log=log_path,
            max_connections=4,
            retry=RetryPolicy(max_attempts=5, base_delay=0.01),
            sleep=RecordingSleep(),
        )
        with client:
            responses = client.run(requests)
        resent = {r.body_key for r in server.requests}

    assert all(r.ok for r in responses)
    assert [r.cached for r in responses] == [r.key in done_before for r in requests]
    missing = [r for r in requests if r.key not in done_before]
    assert resent == {_body_key(r) for r in missing}
    assert set(server.answers().values()) == {1}  # each missing call answered exactly once
    with sqlite3.connect(cache_path) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM responses")]
    assert len(keys) == len(set(keys)) == N
    assert set(keys) == {r.key for r in requests}
    # the call log survived the crash (a torn last line is skipped) and was appended to
    lines = read_call_log(log_path)
    assert sum(x["status"] == "hit" for x in lines) == len(done_before)
    # one ok line per answer received, except perhaps the one being committed at the kill
    # (its answer is cached before its line is written)
    assert sum(x["status"] == "ok" for x in lines) >= N - 1
