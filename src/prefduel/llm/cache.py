"""Persistent SQLite cache of answers, keyed on ``(namespace, request key)``.

One row per answered request: answer text, finish reason, the model the endpoint reported,
prompt and completion tokens, latency, time, the token log-probabilities when the request asked
for them, and the endpoint that answered (its base URL, `public_url` form); plus the request's
role, model and sample index (for statistics and ``clear`` filters). Failures are never stored,
so re-running a batch sends exactly the calls that have no answer yet.

Endpoint identity: two servers may serve different weights under the same model alias, so an
answer recorded from one endpoint is not reused for another. `ResponseCache.get` with an
``endpoint`` misses (and warns once per pair of endpoints, `CacheEndpointWarning`) when the
entry was recorded from a different endpoint; the new answer then replaces it. Entries without a
recorded endpoint (written before endpoints were recorded, or by a backend without one, such as
the scripted backend) are served to every endpoint, so existing caches stay usable.

Concurrency: the database is in WAL mode (readers never block the writer) with
``synchronous=NORMAL`` (a committed answer survives a killed process) and a busy timeout, so
several processes can fill one cache at once; each answer is one transaction and
``INSERT OR IGNORE`` keeps the first answer of a key, so no key is ever stored twice. One
`ResponseCache` object may be shared by the tasks and threads of one process (a lock
serializes its connection).

`ResponseCache.stats` reports what a cache holds (`prefduel.llm.cachestats`, whose
`CacheStats`, `CacheGroup` and `UNBILLED_NAMESPACES` are re-exported here).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from prefduel.llm.cachefile import check_cache_file
from prefduel.llm.cachestats import UNBILLED_NAMESPACES, CacheGroup, CacheStats, cache_stats
from prefduel.llm.errors import CacheError
from prefduel.llm.prices import PriceTable
from prefduel.llm.request import LLMRequest, LLMResponse, TokenLogprob, Usage

#: Environment variable overriding `default_cache_path`.
CACHE_ENV = "PREFDUEL_LLM_CACHE"
SCHEMA_VERSION = "1"

# one transaction: another process checking the file (`check_cache_file`) sees no table or all
_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS responses (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    role TEXT NOT NULL,
    model TEXT NOT NULL,
    sample INTEGER NOT NULL,
    response_model TEXT NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency REAL NOT NULL,
    created REAL NOT NULL,
    request TEXT,
    endpoint TEXT,
    logprobs TEXT,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('schema', '1');
COMMIT;
"""
#: Columns added to schema 1 after its first release (added to older files when opened; NULL
#: in their existing rows).
_ADDED_COLUMNS = ("endpoint", "logprobs")
_COLUMNS = (
    "response_model, text, finish_reason, prompt_tokens, completion_tokens, created, endpoint, "
    "logprobs"
)
_INSERT_COLUMNS = (
    "namespace, key, role, model, sample, response_model, text, finish_reason, prompt_tokens, "
    "completion_tokens, latency, created, request, endpoint, logprobs"
)
# the first answer of a key wins, unless it came from another endpoint (then the new one does)
_UPSERT = (
    f"INSERT INTO responses ({_INSERT_COLUMNS}) VALUES ({','.join('?' * 15)}) "
    "ON CONFLICT(namespace, key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _INSERT_COLUMNS.split(", ")[2:])
    + " WHERE responses.endpoint IS NOT NULL AND excluded.endpoint IS NOT NULL "
    "AND responses.endpoint != excluded.endpoint"
)
_CHUNK = 500  # keys per IN (...) query


class CacheEndpointWarning(UserWarning):
    """A cached answer was recorded from another endpoint than the one asked now (not reused)."""


def _logprobs_json(logprobs: tuple[TokenLogprob, ...] | None) -> str | None:
    if logprobs is None:
        return None
    return json.dumps([[t.token, t.logprob, [list(a) for a in t.top]] for t in logprobs])


def _logprobs_of(text: str | None) -> tuple[TokenLogprob, ...] | None:
    if text is None:
        return None
    return tuple(
        TokenLogprob(token, float(lp), tuple((str(a), float(b)) for a, b in top))
        for token, lp, top in json.loads(text)
    )


def default_cache_path() -> Path:
    """``$PREFDUEL_LLM_CACHE`` if set, else ``.prefduel/llm-cache.sqlite``."""
    return Path(os.environ.get(CACHE_ENV) or Path(".prefduel") / "llm-cache.sqlite")


class ResponseCache:
    """The answer cache in one SQLite file.

    Args:
        path: The database file (created with its folder unless ``create`` is False).
        create: Create the file when missing; False raises `CacheError` instead.
        timeout: Seconds to wait for another process's write lock before failing.
        store_requests: Also store each request's canonical JSON (for audits; more disk).

    Raises:
        CacheError: The file cannot be opened, is not a prefduel cache (checked read-only,
            before anything is written: `prefduel.llm.cachefile`), or is missing, empty or
            without tables and ``create`` is False.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        timeout: float = 60.0,
        store_requests: bool = False,
    ) -> None:
        self.path = Path(path)
        self.store_requests = store_requests
        self._lock = threading.RLock()
        # read-only first: a file that is not a cache is refused before a byte is written
        check_cache_file(self.path, create=create, schema=SCHEMA_VERSION, timeout=timeout)
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.DatabaseError as exc:
            raise CacheError(f"cannot open the cache {self.path}: {exc}") from None
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._set_wal()
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise CacheError(f"cannot open the cache {self.path}: {exc}") from None
        if row is None or row[0] != SCHEMA_VERSION:
            self._db.close()
            raise CacheError(
                f"cache {self.path} has schema {row[0] if row else None!r}; this prefduel "
                f"reads schema {SCHEMA_VERSION!r}"
            )
        self._add_columns()
        self._warned: set[tuple[str, str]] = set()

    def _add_columns(self) -> None:
        """Add the columns a file written before they existed lacks (its rows keep NULL)."""
        try:
            present = {r[1] for r in self._db.execute("PRAGMA table_info(responses)")}
            for column in _ADDED_COLUMNS:
                if column not in present:
                    try:
                        self._db.execute(f"ALTER TABLE responses ADD COLUMN {column} TEXT")
                    except sqlite3.OperationalError as exc:
                        if "duplicate column" not in str(exc):  # another process added it
                            raise
        except sqlite3.DatabaseError as exc:
            raise CacheError(f"cannot upgrade the cache {self.path}: {exc}") from None

    def _set_wal(self) -> None:
        """Switch to WAL; retried because the switch can fail while another process opens."""
        for attempt in range(50):
            try:
                mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.05)
                continue
            if mode.lower() == "wal":
                return
            time.sleep(0.05)
        raise CacheError(f"cannot switch the cache {self.path} to WAL mode")

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def _execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, args)
        except sqlite3.DatabaseError as exc:
            raise CacheError(f"cache {self.path}: {exc}") from None

    def get(
        self, request: LLMRequest, namespace: str, endpoint: str | None = None
    ) -> LLMResponse | None:
        """The cached answer to ``request`` as a hit (``cached=True``, cost 0), or None.

        Args:
            request: The request.
            namespace: The backend's cache namespace.
            endpoint: The endpoint that would answer (`public_url` form; None: any). An entry
                recorded from a different endpoint is a miss (`CacheEndpointWarning`, once per
                pair); entries without a recorded endpoint serve every endpoint.
        """
        with self._lock:
            row = self._execute(
                f"SELECT {_COLUMNS} FROM responses WHERE namespace = ? AND key = ?",
                (namespace, request.key),
            ).fetchone()
        if row is None:
            return None
        model, text, finish, prompt, completion, created, recorded, logprobs = row
        if endpoint is not None and recorded is not None and recorded != endpoint:
            self._warn_endpoint(recorded, endpoint, request)
            return None
        return LLMResponse(
            request=request,
            text=text,
            model=model,
            finish_reason=finish,
            usage=Usage(prompt, completion),
            cached=True,
            created=created,
            logprobs=_logprobs_of(logprobs),
        )

    def _warn_endpoint(self, recorded: str, endpoint: str, request: LLMRequest) -> None:
        if (recorded, endpoint) in self._warned:
            return
        self._warned.add((recorded, endpoint))
        warnings.warn(
            f"cache {self.path}: answers of {request.model} recorded from {recorded} are not "
            f"reused for {endpoint} (the same model name may serve other weights there); they "
            "are asked again and replaced",
            CacheEndpointWarning,
            stacklevel=3,
        )

    def put(self, response: LLMResponse, namespace: str, endpoint: str | None = None) -> bool:
        """Store an ``ok`` answer; the first answer of a key wins (unless it was recorded from
        another endpoint than ``endpoint``: then this one replaces it).

        Returns:
            True if stored, False if the key was already cached (by any process).

        Raises:
            ValueError: ``response`` is a failure (failures are never cached).
        """
        if not response.ok or response.text is None:
            raise ValueError(f"only answers are cached; got a failure for {response.key[:12]}")
        req = response.request
        with self._lock:
            cursor = self._execute(
                _UPSERT,
                (
                    namespace,
                    req.key,
                    req.role,
                    req.model,
                    req.sample,
                    response.model or req.model,
                    response.text,
                    response.finish_reason,
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    response.latency,
                    response.created or time.time(),
                    req.canonical if self.store_requests else None,
                    endpoint,
                    _logprobs_json(response.logprobs),
                ),
            )
            return cursor.rowcount == 1

    def cached_keys(
        self, keys: Iterable[str], namespace: str, endpoint: str | None = None
    ) -> set[str]:
        """Which of ``keys`` have an answer (batched; for dry runs and progress); with an
        ``endpoint``, answers recorded from another endpoint do not count (see `get`)."""
        keys = list(keys)
        found: set[str] = set()
        same = "" if endpoint is None else " AND (endpoint IS NULL OR endpoint = ?)"
        with self._lock:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                args = (namespace, *chunk) + (() if endpoint is None else (endpoint,))
                found.update(
                    k
                    for (k,) in self._execute(
                        f"SELECT key FROM responses WHERE namespace = ? AND key IN ({marks})"
                        + same,
                        args,
                    )
                )
        return found

    def __len__(self) -> int:
        with self._lock:
            return int(self._execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def keys(self, namespace: str | None = None) -> Iterator[str]:
        """Every cached key (of one namespace, or all)."""
        with self._lock:
            if namespace is None:
                rows = self._execute("SELECT key FROM responses").fetchall()
            else:
                rows = self._execute(
                    "SELECT key FROM responses WHERE namespace = ?", (namespace,)
                ).fetchall()
        return (k for (k,) in rows)

    @staticmethod
    def _where(
        role: str | None, model: str | None, namespace: str | None, endpoint: str | None = None
    ) -> tuple[str, list]:
        clauses, args = [], []
        if endpoint is not None:
            clauses.append("endpoint = ?")
            args.append(endpoint)
        if role is not None:
            clauses.append("role = ?")
            args.append(role)
        if model is not None:
            clauses.append("model GLOB ?")
            args.append(model)
        if namespace is not None:
            clauses.append("namespace = ?")
            args.append(namespace)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args

    def count(
        self,
        *,
        role: str | None = None,
        model: str | None = None,
        namespace: str | None = None,
        endpoint: str | None = None,
    ) -> int:
        """Entries matching the filters (``model`` may be a glob pattern such as ``gpt-4o*``;
        ``endpoint`` matches the recorded base URL exactly)."""
        where, args = self._where(role, model, namespace, endpoint)
        with self._lock:
            return int(self._execute(f"SELECT COUNT(*) FROM responses{where}", args).fetchone()[0])

    def clear(
        self,
        *,
        role: str | None = None,
        model: str | None = None,
        namespace: str | None = None,
        endpoint: str | None = None,
    ) -> int:
        """Delete the entries matching the filters (all without filters); return how many.

        The file shrinks when nothing else has it open (checkpoint and ``VACUUM``).
        """
        where, args = self._where(role, model, namespace, endpoint)
        with self._lock:
            deleted = self._execute(f"DELETE FROM responses{where}", args).rowcount
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._db.execute("VACUUM")
            except sqlite3.OperationalError:
                pass  # another process has it open: space is reused, not returned
        return int(deleted)

    def stats(self, prices: PriceTable | None = None) -> CacheStats:
        """Entries, tokens and hypothetical cost, per (namespace, model, role).

        Args:
            prices: Price table for the hypothetical cost (None: cost 0).
        """
        with self._lock:
            rows = self._execute(
                "SELECT namespace, model, role, COUNT(*), SUM(prompt_tokens), "
                "SUM(completion_tokens) FROM responses GROUP BY namespace, model, role"
            ).fetchall()
            oldest, newest = self._execute(
                "SELECT MIN(created), MAX(created) FROM responses"
            ).fetchone()
            endpoints = self._execute(
                "SELECT endpoint, COUNT(*) FROM responses GROUP BY endpoint "
                "ORDER BY COUNT(*) DESC, endpoint"
            ).fetchall()
        return cache_stats(self.path, rows, (oldest, newest), endpoints, prices)


__all__ = [
    "CACHE_ENV",
    "SCHEMA_VERSION",
    "UNBILLED_NAMESPACES",
    "CacheEndpointWarning",
    "CacheGroup",
    "CacheStats",
    "ResponseCache",
    "default_cache_path",
]
