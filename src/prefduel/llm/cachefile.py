"""What may be opened as the answer cache: checked read-only, before anything is written.

A cache path is a regular file (not a folder or a device). An existing file must be a prefduel
cache: an SQLite database whose only tables are ``responses`` and ``meta``, with the schema
marker in ``meta``. A file that holds anything else (another program's database, even one with
a ``responses`` table of its own, or a file that is not SQLite) is refused without a byte
written to it, so pointing ``--cache`` at the wrong file cannot damage it. When the cache may be
created (a run), a missing file, an empty file and an empty database become a new cache; when it
may not (``prefduel cache stats|clear``), they are refused.
"""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

from prefduel.core.outputs import output_file
from prefduel.llm.errors import CacheError

#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: The tables of a prefduel cache, with the columns each must have.
TABLES = {
    "responses": {"namespace", "key", "role", "model", "sample", "response_model", "text"},
    "meta": {"name", "value"},
}


def _not_a_cache(path: Path, why: str) -> CacheError:
    return CacheError(
        f"{path} is not a prefduel cache ({why}); nothing was written to it: give the path of a "
        "cache file, or of a new one, with --cache"
    )


def _tables(path: Path, timeout: float) -> tuple[dict[str, set[str]], str | None]:
    """The tables (name -> columns) and the schema marker of an SQLite file, read-only."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, timeout=timeout)
    except sqlite3.DatabaseError as exc:
        raise CacheError(f"cannot read the cache {path}: {exc}") from None
    try:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {
            name: {row[1] for row in db.execute(f'PRAGMA table_info("{name}")')}
            for name in names
        }
        marker = None
        if TABLES["meta"] <= tables.get("meta", set()):
            row = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
            marker = None if row is None else str(row[0])
    except sqlite3.DatabaseError as exc:
        raise _not_a_cache(path, f"SQLite cannot read it: {exc}") from None
    finally:
        db.close()
    return tables, marker


def check_cache_file(path: Path, *, create: bool, schema: str, timeout: float = 60.0) -> bool:
    """Check that ``path`` may be opened as a cache (see the module docstring).

    Args:
        path: The cache file.
        create: Whether a missing or empty file may become a new cache.
        schema: The schema marker this prefduel reads.
        timeout: Seconds to wait for a lock held by another process.

    Returns:
        True when ``path`` is already a cache of ``schema``; False when it is to be created.

    Raises:
        CacheError: Naming the path and what is wrong with it.
    """
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        if not create:
            raise CacheError(f"cache file {path} does not exist") from None
        output_file(path, "cache", CacheError)  # its folder is created and writable
        return False
    except OSError as exc:
        raise CacheError(f"cannot read the cache {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise CacheError(f"cache {path} is a folder; give a file path")
    if not stat.S_ISREG(mode):
        raise CacheError(f"cache {path} is not a regular file (a device or a pipe)")
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise CacheError(f"cannot read the cache {path}: {exc.strerror or exc}") from None
    if not header:
        if not create:
            raise _not_a_cache(path, "an empty file")
        return False
    if header != SQLITE_HEADER:
        raise _not_a_cache(path, "not an SQLite database")
    return _check_tables(path, create=create, schema=schema, timeout=timeout)


def _check_tables(path: Path, *, create: bool, schema: str, timeout: float) -> bool:
    tables, marker = _tables(path, timeout)
    if not tables:
        if not create:
            raise _not_a_cache(path, "an SQLite database without tables")
        return False
    others = sorted(set(tables) - set(TABLES))
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise _not_a_cache(path, f"an SQLite database with the tables {shown}")
    for name, columns in TABLES.items():
        if name in tables and not columns <= tables[name]:
            raise _not_a_cache(path, f"its table {name!r} has other columns")
    if marker is not None and marker != schema:
        raise CacheError(
            f"cache {path} has schema {marker!r}; this prefduel reads schema {schema!r}"
        )
    if marker is None or "responses" not in tables:
        raise _not_a_cache(path, "an SQLite database without prefduel's schema marker")
    return True


__all__ = ["SQLITE_HEADER", "TABLES", "check_cache_file"]
