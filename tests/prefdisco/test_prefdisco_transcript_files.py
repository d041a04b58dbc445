"""Stored transcripts that a resumed ``prefdisco run`` scores again: checked on read (their
turns, routes, follow-up, stop reason, task source), a repeated line counted once, a
conflicting one refused naming both lines; never a traceback in the middle of scoring."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pb_prefdisco_helpers import run_cli


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("transcripts") / "study"
    status, _, err = run_cli(["generate", str(folder), "--personas", "2", "--limit", "2"])
    assert status == 0, err
    status, _, err = run_cli(["run", str(folder), "--no-progress", "--models", "scripted-ask2"])
    assert status == 0, err
    return folder


def _unscored(study: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of the study without its scores (a resumed run scores every transcript)."""
    folder = tmp_path / "study"
    shutil.copytree(study, folder)
    (folder / "scores.jsonl").unlink()
    return folder, (folder / "transcripts.jsonl").read_text().splitlines(keepends=True)


def _rescore(folder: Path) -> tuple[int, str, str]:
    return run_cli(["run", str(folder), "--no-progress", "--models", "scripted-ask2"])


def _discovery(lines: list[str]) -> int:
    return next(i for i, x in enumerate(lines) if json.loads(x)["condition"] == "discovery")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("turns", "x"),
        ("turns", [1, 2]),
        ("follow_up", True),
        ("follow_up", {"a": 1}),
        ("calls", "x"),
        ("source", "another-benchmark"),
        ("stop", "x"),
        ("response", None),
        ("model", 7),
    ],
)
def test_a_damaged_transcript_is_a_named_error_naming_file_and_line(study, tmp_path, field, value):
    folder, lines = _unscored(study, tmp_path)
    i = _discovery(lines)
    row = json.loads(lines[i])
    row[field] = value
    lines[i] = json.dumps(row) + "\n"
    (folder / "transcripts.jsonl").write_text("".join(lines))
    status, _, err = _rescore(folder)
    assert status == 2 and "Traceback" not in err, err
    assert f"transcripts.jsonl, line {i + 1}" in err and field in err, err


def test_a_repeated_transcript_is_scored_once(study, tmp_path):
    folder, lines = _unscored(study, tmp_path)
    (folder / "transcripts.jsonl").write_text("".join([*lines, lines[0]]))
    status, _, err = _rescore(folder)
    assert status == 0, err
    assert "counted once" in err
    assert (folder / "scores.jsonl").read_text() == (study / "scores.jsonl").read_text()


def test_a_conflicting_transcript_is_refused_naming_both_lines(study, tmp_path):
    folder, lines = _unscored(study, tmp_path)
    row = json.loads(lines[0])
    row["response"] += " (altered)"
    (folder / "transcripts.jsonl").write_text("".join([*lines, json.dumps(row) + "\n"]))
    status, _, err = _rescore(folder)
    assert status == 2 and "line 1" in err and f"line {len(lines) + 1}" in err, err
