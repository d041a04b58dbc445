"""The JSONL call log: one line per attempt sent and per cache hit.

Every line is a JSON object with these fields (in this order)::

    time               ISO 8601 UTC time of the outcome, e.g. "2025-01-31T12:00:00.123Z"
    status             "ok" (answer arrived), "retry" (failed attempt, will retry),
                       "failed" (the call gave up), "hit" (answered from the cache),
                       "skipped" (not sent: the budget cap was reached)
    role, model        the request's role tag and model
    sample             the request's sample index
    key                the request's cache key (SHA-256 of the canonical request)
    namespace          the backend's cache namespace ("openai", "scripted", ...)
    attempt            attempt number (1, 2, ...; 0 for a hit)
    cached             true for a hit
    http_status        HTTP status of a failed attempt, when there was one
    prompt_tokens      tokens of the answer (the original call's for a hit)
    completion_tokens
    cost               what this attempt spent (0 for hits and failures)
    latency            seconds this attempt took
    retry_in           seconds until the next attempt ("retry" lines)
    error              why the attempt failed (never contains the API key)
    batch              the provider batch that answered (``--batch`` runs; absent online)

Prompts and answers are not logged (they are in the cache); the API key never is. An answer's
``ok`` line is written right after the answer is committed to the cache, so a kill between the
two loses that line, never the answer (and its tokens, which the cache keeps).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from prefduel.llm.errors import CacheError

FIELDS = (
    "time",
    "status",
    "role",
    "model",
    "sample",
    "key",
    "namespace",
    "attempt",
    "cached",
    "http_status",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "latency",
    "retry_in",
    "error",
    "batch",
)


def utc_now() -> str:
    """The current UTC time in ISO 8601 with milliseconds and a ``Z``."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


class CallLog:
    """Append-only JSONL log of calls (thread-safe; opened lazily, flushed per line).

    Args:
        path: The log file; its folder is created; existing lines are kept (a resumed run
            appends).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._handle: TextIO | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CallLog({str(self.path)!r})"

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record; fields not given are null, unknown fields are refused.

        Raises:
            ValueError: ``record`` has a field not in `FIELDS`.
            CacheError: The file cannot be written.
        """
        extra = set(record) - set(FIELDS)
        if extra:
            raise ValueError(f"call log: unknown fields {sorted(extra)}; expected {FIELDS}")
        line = json.dumps({f: record.get(f) for f in FIELDS}, ensure_ascii=False) + "\n"
        with self._lock:
            try:
                if self._handle is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._handle = open(self.path, "a", encoding="utf-8")
                self._handle.write(line)
                self._handle.flush()
            except OSError as exc:
                raise CacheError(
                    f"cannot write the call log {self.path}: {exc.strerror or exc}"
                ) from None

    def close(self) -> None:
        """Close the file (a later `write` reopens it)."""
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


def read_call_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All records of a call log (a torn last line, from a killed process, is skipped)."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records
