"""Throughput of the LLM layer: cached lookups and concurrent calls through the real client.

Targets: >= 500 cached lookups/s and >= 200 concurrent mocked calls/s on this machine.

* cached lookups: a batch of requests that are all in the SQLite cache, answered by
  ``LLMClient.complete_many`` (the path a resumed run takes); reference: raw ``sqlite3`` primary
  key lookups on the same file.
* mocked calls: uncached requests through ``LLMClient`` -> ``OpenAIBackend`` -> the ``openai``
  SDK -> HTTP -> the local test server (``prefduel.llm.testserver``, in a separate process
  so that it has its own core), each answer stored in the cache and logged; reference: the same
  number of raw HTTP requests with ``httpx2.AsyncClient`` at the same concurrency against the
  same server.

    python benchmarks/llm_throughput.py
    python benchmarks/llm_throughput.py --lookups 20000 --calls 4000 --connections 64 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prefduel.llm import LLMClient, LLMRequest, ResponseCache, RetryPolicy, ScriptedBackend

TARGET_LOOKUPS = 500.0
TARGET_CALLS = 200.0
KEY_ENV = "PREFDUEL_BENCH_FAKE_KEY"


def _requests(n: int, tag: str) -> list[LLMRequest]:
    return [
        LLMRequest.chat(
            "gpt-4o-mini",
            f"{tag} question {i}: which answer is better, A or B?",
            system="You are a student who likes worked examples.",
            role="judge",
            sample=i % 4,
            temperature=1.0,
            max_tokens=4,
        )
        for i in range(n)
    ]


def bench_lookups(folder: Path, n: int) -> tuple[float, float, float]:
    """Cached lookups/s through the client, through ``ResponseCache.get``, and raw sqlite."""
    path = folder / "lookups.sqlite"
    requests = _requests(n, "cached")
    with LLMClient(ScriptedBackend(), cache=path, log_hits=False) as client:
        client.run(requests)  # fill
        start = time.perf_counter()
        responses = client.run(requests)
        client_rate = n / (time.perf_counter() - start)
    assert all(r.cached for r in responses)
    with ResponseCache(path) as cache:
        start = time.perf_counter()
        for r in requests:
            cache.get(r, "scripted")
        get_rate = n / (time.perf_counter() - start)
    keys = [r.key for r in requests]
    with sqlite3.connect(path) as db:
        start = time.perf_counter()
        for k in keys:
            db.execute(
                "SELECT text, prompt_tokens FROM responses WHERE namespace = ? AND key = ?",
                ("scripted", k),
            ).fetchone()
        raw_rate = n / (time.perf_counter() - start)
    return client_rate, get_rate, raw_rate


def start_server() -> tuple[subprocess.Popen, str]:
    """The test server in its own process; returns it and its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefduel.llm.testserver", "--port", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"the test server did not start: {line!r}")
    return proc, line.split()[1]


async def _client_calls(
    base_url: str, folder: Path, n: int, connections: int, repeats: int
) -> tuple[float, float]:
    """Best calls/s over ``repeats`` batches of ``n`` new requests, and client CPU ms per call."""
    from prefduel.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(base_url, api_key_env=KEY_ENV, timeout=30, pool_size=connections)
    client = LLMClient(
        backend,
        cache=folder / "calls.sqlite",
        call_log=folder / "calls.jsonl",
        max_connections=connections,
        retry=RetryPolicy(max_attempts=3, base_delay=0.05),
    )
    rates, cpu = [], []
    async with client:
        await client.complete_many(_requests(100, "warm-up"))
        for repeat in range(repeats):
            requests = _requests(n, f"timed {repeat}")
            start, start_cpu = time.perf_counter(), time.process_time()
            responses = await client.complete_many(requests)
            rates.append(n / (time.perf_counter() - start))
            cpu.append((time.process_time() - start_cpu) / n * 1e3)
            failed = [r.error for r in responses if not r.ok]
            if failed:
                raise RuntimeError(f"{len(failed)} calls failed, e.g. {failed[0]}")
    return max(rates), min(cpu)


async def _raw_http(base_url: str, n: int, connections: int, repeats: int) -> tuple[float, float]:
    """Best requests/s of raw ``httpx2`` posts (same bodies and concurrency), CPU ms each."""
    import httpx2

    bodies = [
        {
            "model": r.model,
            "messages": [{"role": m.role, "content": m.content} for m in r.messages],
            **r.params.to_json(),
        }
        for r in _requests(n, "raw")
    ]
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    semaphore = asyncio.Semaphore(connections)
    rates, cpu = [], []
    async with httpx2.AsyncClient(base_url=base_url, limits=limits, timeout=30) as http:

        async def one(body: dict) -> None:
            async with semaphore:
                response = await http.post("/chat/completions", json=body)
                json.loads(response.content)

        await asyncio.gather(*(one(b) for b in bodies[:100]))  # warm-up
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(one(b) for b in bodies))
            rates.append(n / (time.perf_counter() - start))
            cpu.append((time.process_time() - start_cpu) / n * 1e3)
    return max(rates), min(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lookups", type=int, default=10_000, help="cached requests")
    parser.add_argument("--calls", type=int, default=2_000, help="uncached requests")
    parser.add_argument("--connections", type=int, default=32, help="max_connections")
    parser.add_argument("--repeats", type=int, default=2, help="timed batches (best kept)")
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-benchmark-not-a-real-key"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; best of {args.repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        client_rate, get_rate, raw_rate = bench_lookups(folder, args.lookups)
        print(
            f"cached lookups  {client_rate:9,.0f} /s through LLMClient   target "
            f"{TARGET_LOOKUPS:,.0f}/s: ratio {client_rate / TARGET_LOOKUPS:6.1f}x   "
            f"(ResponseCache.get {get_rate:,.0f}/s; reference raw sqlite3 {raw_rate:,.0f}/s: "
            f"client at {client_rate / raw_rate:.2f} of raw)"
        )
        proc, base_url = start_server()
        try:
            call_rate, call_cpu = asyncio.run(
                _client_calls(base_url, folder, args.calls, args.connections, args.repeats)
            )
            http_rate, http_cpu = asyncio.run(
                _raw_http(base_url, args.calls, args.connections, args.repeats)
            )
        finally:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=10)
        print(
            f"mocked calls    {call_rate:9,.0f} /s through LLMClient + openai SDK + HTTP, "
            f"{args.connections} connections   target {TARGET_CALLS:,.0f}/s: ratio "
            f"{call_rate / TARGET_CALLS:6.1f}x   (reference raw httpx2 {http_rate:,.0f}/s: "
            f"client at {call_rate / http_rate:.2f} of raw; client CPU {call_cpu:.2f} ms/call "
            f"vs raw {http_cpu:.2f} ms)"
        )


if __name__ == "__main__":
    main()
