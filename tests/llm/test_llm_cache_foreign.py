"""A file that is not a prefduel cache is refused before anything is written to it: another
SQLite database (even one with a ``responses`` table), a file that is not SQLite, a folder, a
device; ``cache stats`` and ``cache clear`` also refuse an empty file and a missing one."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from prefduel.cli.main import main
from prefduel.llm import CacheError, ResponseCache


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` with the digest of its bytes."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()
    }


def _other_database(path: Path, table: str = "people") -> Path:
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute(f"INSERT INTO {table} (name) VALUES ('ada')")
    return path


def _cache_command(*argv: str, capsys) -> tuple[int, str]:
    code = main(["cache", *argv])
    return code, capsys.readouterr().err


FOREIGN = {
    "another SQLite database": lambda p: _other_database(p),
    "a database with a 'responses' table of its own": lambda p: _other_database(p, "responses"),
    "a text file": lambda p: p.write_text("name,score\nada,3\n" * 50),
}


@pytest.mark.parametrize("kind", FOREIGN)
@pytest.mark.parametrize("action", [["stats"], ["clear", "--yes"], ["clear"]])
def test_cache_commands_refuse_a_file_that_is_not_a_cache_and_leave_it_alone(
    tmp_path, capsys, kind, action
):
    path = tmp_path / "data.sqlite"
    FOREIGN[kind](path)
    before = _snapshot(tmp_path)
    code, err = _cache_command(*action, "--cache", str(path), capsys=capsys)
    assert code == 2 and err.startswith("prefduel: error: "), err
    assert f"{path} is not a prefduel cache" in err and "Traceback" not in err
    assert _snapshot(tmp_path) == before  # not a byte written, no journal left behind


@pytest.mark.parametrize("kind", FOREIGN)
def test_a_run_refuses_a_cache_path_that_holds_something_else(tmp_path, kind):
    path = tmp_path / "data.sqlite"
    FOREIGN[kind](path)
    before = _snapshot(tmp_path)
    with pytest.raises(CacheError, match="is not a prefduel cache"):
        ResponseCache(path)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: p.mkdir(), "is a folder"),
        (lambda p: p.write_bytes(b""), "is not a prefduel cache (an empty file)"),
        (lambda p: None, "does not exist"),
    ],
)
@pytest.mark.parametrize("action", ["stats", "clear"])
def test_cache_commands_name_folders_empty_and_missing_files(tmp_path, capsys, make, words,
                                                             action):
    path = tmp_path / "c.sqlite"
    make(path)
    code, err = _cache_command(action, "--cache", str(path), capsys=capsys)
    assert code == 2 and words in err and "Traceback" not in err, err
    assert not path.exists() or path.is_dir() or path.read_bytes() == b""


def test_an_empty_file_or_database_becomes_a_cache_for_a_run(tmp_path):
    """A run may start a cache in a file made for it (``touch``, or an empty database)."""
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    bare = tmp_path / "bare.sqlite"
    sqlite3.connect(bare).close()
    for path in (empty, bare):
        with ResponseCache(path) as cache:
            assert len(cache) == 0
        with ResponseCache(path, create=False) as cache:  # now a cache: stats may read it
            assert len(cache) == 0


def test_a_cache_of_another_schema_is_refused_unchanged(tmp_path):
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema', '0')")
    before = _snapshot(tmp_path)
    with pytest.raises(CacheError, match="schema '0'"):
        ResponseCache(old)
    assert _snapshot(tmp_path) == before
