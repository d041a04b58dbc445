"""Results files: rows of another version are never reused silently, one writer at a time, and
an unusable --out path is one named error (issue 15)."""

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


def _age_one_row(path, version="0.0.1"):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    target = next(r for r in rows if r["policy"] == "random" and r["seed"] == 0)
    target.update(version=version)
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


def test_a_second_writer_on_the_same_results_file_is_refused(toy_world, tmp_path, capsys):
    """Two runs on one results file wrote every row twice (issue 15, item 2)."""
    from prefduel.runner.store import ResultsStore

    out = tmp_path / "r.jsonl"
    with ResultsStore(out, lock=True):  # another run is writing this file
        assert main(["run", "--worlds", toy_world, *RUN, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"results file {out} is being written by another prefduel process" in err
    assert out.read_text() == ""
    # once the other writer is done, the run goes ahead
    assert main(["run", "--worlds", toy_world, *RUN, "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2 + 2 * 9  # 2 seeds x (1 policy + 9 references)


def test_out_naming_a_directory_is_one_named_error(toy_world, tmp_path, capsys):
    assert main(["run", "--worlds", toy_world, *RUN, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"results file {tmp_path} is a directory, not a JSONL file" in err
