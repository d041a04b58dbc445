"""Every path datagen writes (world folder, its files, call log, cache) and every file it reads
besides the config (prices) is checked before the first call: a path that cannot be used is a
named error (exit 2), and nothing is sent, so nothing paid for is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from pb_datagen_helpers import cache_rows, tiny_mapping

from prefduel.cli.main import main


def read_only_folder(tmp_path: Path) -> Path:
    """A folder nobody can write in: a chmod-ed one, or /sys for root (which ignores modes)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys")):
        probe = candidate / f"probe-{os.getpid()}"
        try:
            probe.touch()
        except OSError:
            return candidate
        probe.unlink()
    pytest.skip("no read-only folder on this machine")


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """``prefduel datagen`` on a tiny config in tmp_path: (exit status, stderr)."""
    monkeypatch.chdir(tmp_path)
    Path("c.yaml").write_text(yaml.safe_dump(tiny_mapping()))
    Path("a-file").write_text("not a folder\n")

    def datagen(*flags: str) -> tuple[int, str]:
        code = main(["datagen", "c.yaml", "--no-progress", *flags])
        return code, capsys.readouterr().err

    return datagen


def _nothing_sent(cache: str = "cache.sqlite") -> None:
    assert cache_rows(cache) == 0
    assert not Path("calls.jsonl").exists()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--out", "a-file"], "world folder a-file is an existing file, not a folder"),
        (["--out", "a-file/world"], "world folder a-file/world cannot be created"),
    ],
)
def test_an_unusable_world_folder_is_named_before_any_call(run, flags, words):
    code, err = run(*flags, "--cache", "cache.sqlite", "--call-log", "calls.jsonl")
    assert code == 2 and err.startswith("prefduel: error: ") and words in err, err
    assert "Traceback" not in err
    _nothing_sent()


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda w: (w / "datagen").write_text("x"), "is an existing file, not a folder"),
        (lambda w: (w / "world.json").mkdir(), "world.json is a folder"),
        (lambda w: (w / "datagen/summary.json").mkdir(parents=True), "summary.json is a folder"),
        (lambda w: (w / "datagen/battles.jsonl").mkdir(parents=True), "battles.jsonl is a folder"),
    ],
)
def test_a_file_of_the_world_that_cannot_be_written_is_named_first(run, make, words):
    world = Path("w")
    world.mkdir()
    make(world)
    code, err = run("--out", "w", "--cache", "cache.sqlite", "--call-log", "calls.jsonl")
    assert code == 2 and words in err and "Traceback" not in err, err
    _nothing_sent()


def test_a_read_only_world_folder_is_named_first(run, tmp_path):
    folder = read_only_folder(tmp_path)
    code, err = run("--out", str(folder / "world"), "--cache", "cache.sqlite",
                    "--call-log", "calls.jsonl")
    assert code == 2 and "world folder" in err and "Traceback" not in err, err
    _nothing_sent()


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("folder", "call log calls-folder is a folder"),
        ("a-file/calls.jsonl", "call log a-file/calls.jsonl cannot be written: Not a directory"),
        ("read-only", "call log"),
    ],
)
def test_an_unusable_call_log_is_named_before_any_call(run, tmp_path, where, words):
    if where == "folder":
        Path("calls-folder").mkdir()
        log = "calls-folder"
    elif where == "read-only":
        log = str(read_only_folder(tmp_path) / "calls.jsonl")
    else:
        log = where
    code, err = run("--out", "w", "--cache", "cache.sqlite", "--call-log", log)
    assert code == 2 and words in err and "Traceback" not in err, err
    assert cache_rows("cache.sqlite") == 0 and not Path("w").exists()


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("folder", "cache cache-folder is a folder"),
        ("a-file/cache.sqlite", "cache a-file/cache.sqlite cannot be written: Not a directory"),
        ("/dev/null", "cache /dev/null is not a regular file"),
        ("read-only", "cache"),
    ],
)
def test_an_unusable_cache_is_named_before_any_call(run, tmp_path, where, words):
    if where == "folder":
        Path("cache-folder").mkdir()
        cache = "cache-folder"
    elif where == "read-only":
        cache = str(read_only_folder(tmp_path) / "cache.sqlite")
    else:
        cache = where
    code, err = run("--out", "w", "--cache", cache, "--call-log", "calls.jsonl")
    assert code == 2 and words in err and "Traceback" not in err, err
    assert not Path("calls.jsonl").exists() and not Path("w").exists()


@pytest.mark.parametrize("prices", ["folder", "/dev/zero", "missing.yaml"])
def test_an_unusable_price_file_is_named_before_any_call(run, prices):
    Path("folder").mkdir()
    code, err = run("--out", "w", "--cache", "cache.sqlite", "--call-log", "calls.jsonl",
                    "--prices", prices)
    assert code == 2 and f"price file {prices}" in err and "Traceback" not in err, err
    _nothing_sent()
    assert not Path("w").exists()


def test_a_dry_run_checks_no_output_and_writes_nothing(run):
    code, err = run("--dry-run", "--out", "a-file", "--call-log", "calls.jsonl")
    assert code == 0, err
    assert not Path("calls.jsonl").exists() and Path("a-file").read_text() == "not a folder\n"


def test_a_cache_path_that_holds_another_database_is_refused_unchanged(run, tmp_path):
    import hashlib
    import sqlite3

    with sqlite3.connect("mine.sqlite") as db:
        db.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)")
    before = hashlib.sha256(Path("mine.sqlite").read_bytes()).hexdigest()
    for flags in (["--dry-run"], ["--out", "w", "--call-log", "calls.jsonl"]):
        code, err = run("--cache", "mine.sqlite", *flags)
        assert code == 2 and "mine.sqlite is not a prefduel cache" in err, err
        assert "Traceback" not in err
    assert hashlib.sha256(Path("mine.sqlite").read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if "mine" in p.name) == ["mine.sqlite"]
    assert not Path("calls.jsonl").exists() and not Path("w").exists()


def test_a_write_that_still_fails_at_the_end_is_named_and_loses_no_answer(tmp_path, monkeypatch):
    """A disk that fills up during the run: a named error that says the answers are cached."""
    import errno

    from pb_datagen_helpers import expected_calls, tiny_config

    from prefduel.datagen import DatagenError, generate
    from prefduel.worlds.world import World

    def full(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(Path(path) / "arrays.npz"))

    monkeypatch.setattr(World, "save", full)
    config = tiny_config(tmp_path)
    with pytest.raises(DatagenError) as info:
        generate(config, progress=False)
    message = str(info.value)
    assert "arrays.npz: No space left on device" in message
    assert "re-running the same command writes the world without sending calls" in message
    assert cache_rows(config.llm.cache) == sum(expected_calls(config).values())


@pytest.mark.parametrize("bad", ["", "   ", "w\x00x"])
@pytest.mark.parametrize(
    ("where", "field"),
    [
        (lambda v: {"output": v}, "output"),
        (lambda v: {"cache": v}, "cache"),
        (lambda v: {"call_log": v}, "call_log"),
        (lambda v: {"llm": {"prices": v}}, "llm.prices"),
        (lambda v: {"students": {"file": v}}, "students.file"),
        (lambda v: {"prompts": {"file": v}}, "prompts.file"),
    ],
)
def test_a_path_in_the_config_is_a_usable_name(where, field, bad):
    """An empty path, or one with a NUL byte (which YAML can hold and no file name can), is a
    named error; it used to be a traceback, or the default cache and no call log silently."""
    from prefduel.datagen import DatagenConfigError, config_from_mapping

    with pytest.raises(DatagenConfigError) as info:
        config_from_mapping({**tiny_mapping(), **where(bad)}, source="c.yaml")
    message = str(info.value)
    assert message.startswith(f"c.yaml: {field}: "), message


@pytest.mark.parametrize("flag", ["--cache", "--call-log", "--prices"])
def test_an_empty_path_on_the_command_line_is_refused(run, flag):
    code, err = run(f"{flag}=", "--out", "w")
    assert code == 2 and err.startswith("prefduel: error: ") and "Traceback" not in err, err
    assert not Path("w").exists()
