"""A roster file works wherever a roster id does: worlds, run, stats --by-profile,
leaderboard, report, play and replay, with results labelled by the file's path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prefduel.cli.main import main

REPO = Path(__file__).resolve().parents[2]
STUDENTS = {"shift_worker", "retired_engineer", "new_parent", "language_learner"}


@pytest.fixture
def roster(tmp_path, monkeypatch) -> str:
    for name in ("my_roster.yaml", "my_students.yaml"):
        shutil.copy(REPO / "examples" / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return "my_roster.yaml"


def test_a_roster_file_runs_through_every_command(roster, tmp_path, capsys):
    assert main(["worlds", roster]) == 0
    assert "my_roster.yaml  120" in capsys.readouterr().out

    results = tmp_path / "results.jsonl"
    run = ["run", "--worlds", roster, "--seeds", "0-1", "--policies", "random,notransfer"]
    assert main([*run, "--out", str(results), "--jobs", "1", "--no-progress"]) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert {r["world"] for r in rows} == {"my_roster.yaml"}
    capsys.readouterr()

    assert main(["stats", str(results), "--by-profile", "notransfer"]) == 0
    out = capsys.readouterr().out
    assert all(student in out for student in STUDENTS)

    board = ["leaderboard", "--worlds", roster, "--seeds", "0-1", "--policies", "random"]
    assert main([*board, "--results", str(results), "--md", "lb.md", "--no-progress"]) == 0
    assert "### my\\_roster.yaml" in (tmp_path / "lb.md").read_text()  # Markdown-escaped

    assert main(["report", str(results), "--out", "report"]) == 0
    html = (tmp_path / "report" / "report.html").read_text()
    assert all(student in html for student in STUDENTS)

    assert main(["play", "--world", roster, "--seed", "1", "--out", "play.html"]) == 0
    assert (tmp_path / "play.html").stat().st_size > 0
    replay = ["replay", str(results), "--world", roster, "--seed", "0", "--policy", "notransfer"]
    assert main([*replay, "--out", "replay.html"]) == 0
    assert (tmp_path / "replay.html").stat().st_size > 0


def test_a_bad_roster_file_exits_2_naming_file_and_field(roster, tmp_path, capsys):
    Path("bad.yaml").write_text("base: dev\nstudents: everyone\n")
    assert main(["run", "--worlds", "bad.yaml", "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "roster file bad.yaml: students: expected one of 'profiles'" in err
