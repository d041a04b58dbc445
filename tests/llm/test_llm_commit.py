"""A reply is committed to the cache in the event-loop step in which the backend returns it.

So a kill at any moment loses only the replies the backend had not returned yet (requests in
flight); every reply received before the kill is in the cache and is not sent again on resume.

* In process: a probe task runs between the other tasks' steps (once per loop iteration) and
  checks, through its own read-only SQLite connection, that every reply the backend has
  returned so far is committed. Any gap between "returned" and "committed" in which another
  task can run (an extra task, a batched write, a write after a gather) is caught.
* A real kill: a batch in a subprocess against the test server is SIGKILLed from inside, at a
  loop iteration right after N replies arrived; every reply received is in the cache, none is
  sent again on resume, and only the replies in flight (at most ``max_connections``) were
  answered by the server without reaching the cache.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from pb_llm_helpers import FAKE_KEY, KEY_ENV, make_requests

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.llm.openai_backend import OpenAIBackend
from prefduel.llm.testserver import OpenAITestServer, body_key

TIMEOUTS = [None, 30.0]  # attempt_timeout: none, and one that wraps each attempt


class Recording:
    """Wraps a backend; records the key of each reply as the backend returns it."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.namespace = inner.namespace
        self.billable = inner.billable
        self.returned: list[str] = []

    async def complete(self, request):
        answer = await self.inner.complete(request)
        self.returned.append(request.key)
        return answer

    async def aclose(self) -> None:
        await self.inner.aclose()


def _committed(db: sqlite3.Connection) -> set[str]:
    return {k for (k,) in db.execute("SELECT key FROM responses")}


async def _batch_with_probe(client: LLMClient, backend: Recording, requests, cache_path):
    """Run the batch; after each loop iteration check that returned replies are committed."""
    gaps: list[int] = []
    checks = 0
    done = False
    db = sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True, timeout=5)

    async def probe() -> None:
        nonlocal checks
        while not done:
            missing = set(backend.returned) - _committed(db)
            checks += 1
            if missing:
                gaps.append(len(missing))
            await asyncio.sleep(0)

    watcher = asyncio.create_task(probe())
    try:
        responses = await client.complete_many(requests)
    finally:
        done = True
        await watcher
        db.close()
    return responses, gaps, checks


@pytest.mark.parametrize("attempt_timeout", TIMEOUTS)
def test_every_reply_is_committed_before_any_other_task_runs_scripted(tmp_path, attempt_timeout):
    cache_path = tmp_path / "cache.sqlite"
    backend = Recording(ScriptedBackend(latency=0.002))
    requests = make_requests(150)
    client = LLMClient(
        backend, cache=cache_path, max_connections=16, attempt_timeout=attempt_timeout
    )

    async def main():
        async with client:
            return await _batch_with_probe(client, backend, requests, cache_path)

    responses, gaps, checks = asyncio.run(main())
    assert all(r.ok for r in responses) and len(backend.returned) == len(requests)
    assert checks > 20  # the probe ran between the replies
    assert gaps == [], f"replies returned but not committed at {len(gaps)} loop iterations"


@pytest.mark.parametrize("attempt_timeout", TIMEOUTS)
def test_every_reply_is_committed_before_any_other_task_runs_http(
    tmp_path, monkeypatch, attempt_timeout
):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    cache_path = tmp_path / "cache.sqlite"
    requests = make_requests(60)
    with OpenAITestServer(latency=0.005) as server:
        backend = Recording(OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=10))
        client = LLMClient(
            backend, cache=cache_path, max_connections=8, attempt_timeout=attempt_timeout
        )

        async def main():
            async with client:
                return await _batch_with_probe(client, backend, requests, cache_path)

        responses, gaps, checks = asyncio.run(main())
    assert all(r.ok for r in responses) and len(backend.returned) == len(requests)
    assert checks > 20
    assert gaps == [], f"replies returned but not committed at {len(gaps)} loop iterations"


KILLED = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys
    sys.path.insert(0, {here!r})
    from pb_llm_helpers import make_requests
    from prefduel.llm import LLMClient
    from prefduel.llm.openai_backend import OpenAIBackend
    from test_llm_commit import Recording

    base_url, cache, record, after, timeout = sys.argv[1:6]
    after = int(after)
    backend = Recording(OpenAIBackend(base_url, api_key_env={key_env!r}, timeout=10))
    client = LLMClient(backend, cache=cache, max_connections={connections},
                       attempt_timeout=None if timeout == "none" else float(timeout))

    async def kill_after_replies():
        # runs once per loop iteration: SIGKILL at the first one after `after` replies
        while len(backend.returned) < after:
            await asyncio.sleep(0)
        with open(record, "w") as fh:
            json.dump(backend.returned, fh)
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush: a real crash

    async def main():
        killer = asyncio.create_task(kill_after_replies())
        await client.complete_many(make_requests({n}))
        await killer

    asyncio.run(main())
    """
)
N = 120
CONNECTIONS = 8


@pytest.mark.parametrize("attempt_timeout", TIMEOUTS)
def test_a_kill_right_after_replies_arrive_resends_none_of_them(
    tmp_path, monkeypatch, attempt_timeout
):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    cache_path, record = tmp_path / "cache.sqlite", tmp_path / "returned.json"
    script = KILLED.format(
        here=os.path.dirname(__file__), key_env=KEY_ENV, connections=CONNECTIONS, n=N
    )
    requests = make_requests(N)
    body_of = {
        r.key: body_key(
            {
                "model": r.model,
                "messages": [{"role": m.role, "content": m.content} for m in r.messages],
                **r.params.to_json(),
            }
        )
        for r in requests
    }
    with OpenAITestServer(latency=0.003) as server:
        timeout = "none" if attempt_timeout is None else str(attempt_timeout)
        args = [server.base_url, str(cache_path), str(record), str(N // 3), timeout]
        proc = subprocess.run(
            [sys.executable, "-c", script, *args],
            env={**os.environ, KEY_ENV: FAKE_KEY},
            timeout=120,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == -9, proc.stderr
        answered_before = server.answers()
        received = json.loads(record.read_text())
        with sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True) as db:
            cached = _committed(db)
        assert len(received) >= N // 3
        # every reply received before the kill survived it
        assert set(received) <= cached, f"{len(set(received) - cached)} received replies lost"
        # what the server answered but the cache lacks was in flight at the kill
        lost = {k for k in answered_before} - {body_of[k] for k in cached}
        assert len(lost) <= CONNECTIONS

        # resume: only the calls without a cached answer are sent, each once. The resumed
        # run sends another key, so requests of the killed process that the server reads
        # late (its handler threads lag on a loaded machine) are not counted as re-sent.
        server.reset()
        resume_key = FAKE_KEY + "-resume"
        monkeypatch.setenv(KEY_ENV, resume_key)
        backend = OpenAIBackend(server.base_url, api_key_env=KEY_ENV, timeout=10)
        with LLMClient(backend, cache=cache_path, max_connections=CONNECTIONS) as client:
            responses = client.run(requests)
        resent = [
            r.body_key
            for r in server.requests
            if r.headers.get("authorization") == f"Bearer {resume_key}"
        ]
    assert all(r.ok for r in responses)
    assert not {body_of[k] for k in received} & set(resent)  # nothing received is re-sent
    assert sorted(resent) == sorted(body_of[r.key] for r in requests if r.key not in cached)
