"""Rows written by another prefduel version are never reused silently (issue 15, item 1)."""

from __future__ import annotations

import json

from prefduel import __version__
from prefduel.cli.main import main

RUN = ["--seeds", "0-1", "--policies", "random", "--jobs", "1", "--no-progress"]


def _results(toy_world, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert main(["run", "--worlds", toy_world, *RUN, "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def _age_one_row(path, version="0.0.1", score=99.0):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    target = next(r for r in rows if r["policy"] == "random" and r["seed"] == 0)
    target.update(version=version, score=score)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_run_refuses_to_resume_from_rows_of_another_version(toy_world, tmp_path, capsys):
    out = _results(toy_world, tmp_path, capsys)
    _age_one_row(out)
    before = out.read_text()
    assert main(["run", "--worlds", toy_world, *RUN, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "1 row" in err and "0.0.1" in err and __version__ in err
    assert "--out" in err  # says how to go on
    assert out.read_text() == before  # nothing written, nothing lost


def test_stats_warns_when_rows_come_from_several_versions(toy_world, tmp_path, capsys):
    out = _results(toy_world, tmp_path, capsys)
    _age_one_row(out)
    assert main(["stats", str(out)]) == 0
    err = capsys.readouterr().err
    assert "prefduel: warning: rows come from 2 package versions" in err
    assert "0.0.1 (1 rows)" in err
