"""PrefDisco's outputs are checked before any work or LLM call: a dataset, run or report folder
that is an existing file, a location that cannot be created, an answer cache or call log that
cannot be written are named errors, and nothing is computed first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pb_prefdisco_helpers import run_cli

from prefduel.prefdisco.study import pipeline

SMALL = ["--personas", "2", "--per-task", "1", "--limit", "1"]
#: A path whose folder cannot be created, even by root (``/proc`` takes no new entries).
UNWRITABLE = "/proc/prefduel-no-such-folder/x"
UNWRITABLE_FOLDER = str(Path(UNWRITABLE).parent)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("outputs") / "data"
    status, _, err = run_cli(["generate", str(folder), *SMALL])
    assert status == 0, err
    return folder


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the command starts its work (sampling, the router check)."""

    def refuse(*args, **kwargs):
        raise AssertionError("work started before the outputs were checked")

    monkeypatch.setattr(pipeline, "sample_dataset", refuse)
    monkeypatch.setattr(pipeline, "_choose_router", refuse)
    monkeypatch.setattr(pipeline, "clients_from_config", refuse)


def _assert_named(status: int, err: str, *fragments: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err and err.startswith("prefduel: error:"), err
    for fragment in fragments:
        assert fragment in err, err


def test_generate_into_an_existing_file_is_a_named_error(tmp_path, no_work):
    target = tmp_path / "afile"
    target.write_text("mine\n")
    status, _, err = run_cli(["generate", str(target), *SMALL])
    _assert_named(status, err, "dataset folder", str(target), "existing file")
    assert target.read_text() == "mine\n"


def test_generate_into_an_uncreatable_folder_is_a_named_error(no_work):
    status, _, err = run_cli(["generate", UNWRITABLE, *SMALL])
    _assert_named(status, err, "dataset folder", UNWRITABLE)


def test_generate_with_an_unwritable_call_log_stops_before_any_call(tmp_path, no_work):
    status, _, err = run_cli(
        ["generate", str(tmp_path / "d"), *SMALL, "--enrich", "--call-log", UNWRITABLE]
    )
    _assert_named(status, err, "call log", UNWRITABLE_FOLDER)


@pytest.mark.parametrize("flag", ["--out", "--cache", "--call-log"])
def test_run_checks_its_folder_cache_and_call_log_first(dataset, tmp_path, no_work, flag):
    args = ["run", str(dataset), "--no-progress"]
    if flag == "--out":
        target = tmp_path / "afile"
        target.write_text("mine\n")
        args += ["--out", str(target)]
        expected = ("run folder", "existing file")
    else:
        args += ["--out", str(tmp_path / "run"), flag, UNWRITABLE]
        expected = ("answer cache" if flag == "--cache" else "call log", UNWRITABLE_FOLDER)
    status, _, err = run_cli(args)
    _assert_named(status, err, *expected)


def test_a_cache_path_that_is_a_folder_is_a_named_error(dataset, tmp_path, no_work):
    folder = tmp_path / "cache-folder"
    folder.mkdir()
    status, _, err = run_cli(
        ["run", str(dataset), "--out", str(tmp_path / "r"), "--cache", str(folder)]
    )
    _assert_named(status, err, "answer cache", "is a folder")


@pytest.fixture(scope="module")
def finished(dataset, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("finished") / "run"
    shutil.copytree(dataset, folder)
    status, _, err = run_cli(["run", str(folder), "--no-progress"])
    assert status == 0, err
    return folder


@pytest.mark.parametrize("where", ["file", "uncreatable", "report.md is a folder"])
def test_report_checks_its_folder_before_building(finished, tmp_path, monkeypatch, where):
    from prefduel.prefdisco.report import build as report

    def refuse(*args, **kwargs):
        raise AssertionError("the report was built before its folder was checked")

    monkeypatch.setattr(report, "build_report", refuse)
    if where == "file":
        out = tmp_path / "afile"
        out.write_text("mine\n")
        fragment = "existing file"
    elif where == "uncreatable":
        out = Path(UNWRITABLE)
        fragment = UNWRITABLE
    else:
        out = tmp_path / "rep"
        (out / "report.md").mkdir(parents=True)
        fragment = "report.md"
    status, _, err = run_cli(["report", str(finished), "--out", str(out), "--bootstrap", "10"])
    _assert_named(status, err, fragment)


def test_generate_refuses_a_folder_that_holds_a_run(tmp_path, capsys):
    """A new dataset over a run would orphan its results: nothing a user ran is lost."""
    from prefduel.cli.main import main

    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "scores.jsonl").write_text('{"kept": true}\n')
    assert main(["prefdisco", "generate", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"dataset folder {folder} holds a run (scores.jsonl)" in err
    assert (folder / "scores.jsonl").read_text() == '{"kept": true}\n'
    assert not (folder / "manifest.json").exists()
