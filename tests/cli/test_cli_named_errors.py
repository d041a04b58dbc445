"""Errors that were tracebacks or silent become one named line (issue 15)."""

from __future__ import annotations

import json
import textwrap

import pytest

from prefduel.cli.main import main

RUN = ["--jobs", "1", "--no-progress"]


def test_a_seed_too_large_for_the_streams_is_refused_before_any_work(toy_world, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    args = ["run", "--worlds", toy_world, "--seeds", str(2**32), "--policies", "random"]
    assert main([*args, "--out", str(out), *RUN]) == 2
    assert "goes beyond 4,294,967,295, the largest seed" in capsys.readouterr().err
    assert not out.exists() or out.read_text() == ""


def test_a_policy_calling_sys_exit_is_named(toy_world, tmp_path, capsys):
    path = tmp_path / "quitter.py"
    path.write_text(
        textwrap.dedent(
            """
            import sys

            class Quitter:
                def reset(self, rng, context): pass
                def start_student(self): pass
                def select(self, Phi): sys.exit(3)
                def update(self, outcome): pass
                def end_student(self): pass
            """
        )
    )
    args = ["run", "--worlds", toy_world, "--seeds", "0", "--policies", f"{path}:Quitter"]
    assert main([*args, "--out", str(tmp_path / "r.jsonl"), *RUN]) == 2
    err = capsys.readouterr().err
    assert "select() called sys.exit(3)" in err and "arrival 0, round 0" in err


def test_a_policy_drawing_from_global_numpy_random_is_refused_before_any_work(
    toy_world, tmp_path, capsys
):
    path = tmp_path / "global_rng.py"
    path.write_text(
        textwrap.dedent(
            """
            import numpy as np

            class GlobalRandom:
                def reset(self, rng, context): self.k = context["K"]
                def start_student(self): pass
                def select(self, Phi):
                    i, j = np.random.choice(self.k, 2, replace=False)
                    return int(i), int(j)
                def update(self, outcome): pass
                def end_student(self): pass
            """
        )
    )
    out = tmp_path / "r.jsonl"
    args = ["run", "--worlds", toy_world, "--seeds", "0", "--policies", f"{path}:GlobalRandom"]
    assert main([*args, "--out", str(out), *RUN]) == 2
    err = capsys.readouterr().err
    assert "not deterministic under a seed" in err and "GlobalRandom" in err
    assert "rng given to reset()" in err
    assert not out.exists() or out.read_text() == ""


def test_a_seeded_user_policy_passes_the_check_and_runs(toy_world, tmp_path, capsys):
    path = tmp_path / "own_rng.py"
    path.write_text(
        textwrap.dedent(
            """
            class OwnRandom:
                def reset(self, rng, context): self.rng, self.k = rng, context["K"]
                def start_student(self): pass
                def select(self, Phi):
                    i, j = self.rng.choice(self.k, 2, replace=False)
                    return int(i), int(j)
                def update(self, outcome): pass
                def end_student(self): pass
            """
        )
    )
    out = tmp_path / "r.jsonl"
    args = ["run", "--worlds", toy_world, "--seeds", "0", "--policies", f"{path}:OwnRandom"]
    assert main([*args, "--out", str(out), *RUN]) == 0
    assert any("OwnRandom" in json.loads(line)["policy"] for line in out.read_text().splitlines())


def test_an_unknown_policy_setting_lists_the_valid_ones(toy_world, tmp_path, capsys):
    args = ["run", "--worlds", toy_world, "--policies", "notransfer:prior_vr=2"]
    assert main([*args, "--out", str(tmp_path / "r.jsonl"), *RUN]) == 2
    err = capsys.readouterr().err
    assert "unknown setting 'prior_vr'" in err
    assert "did you mean 'prior_var'" in err
    assert "rule='greedy'" in err and "prior_var=1.0" in err
    assert "_LaplaceLearner" not in err


def _results(toy_world, tmp_path):
    out = tmp_path / "r.jsonl"
    args = ["run", "--worlds", toy_world, "--seeds", "0-1", "--policies", "random"]
    assert main([*args, "--out", str(out), *RUN]) == 0
    return out


def test_stats_names_a_row_whose_score_is_not_a_number(toy_world, tmp_path, capsys):
    out = _results(toy_world, tmp_path)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    rows[0]["score"] = "high"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["stats", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out}, line 1: field 'score' is 'high', not a number" in err


def test_stats_checks_by_profile_before_printing_anything(toy_world, tmp_path, capsys):
    out = _results(toy_world, tmp_path)
    capsys.readouterr()
    assert main(["stats", str(out), "--by-profile", "nosuch"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--by-profile: no rows for policy 'nosuch'" in captured.err


def test_run_says_where_the_rows_went(toy_world, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    args = ["run", "--worlds", toy_world, "--seeds", "0-1", "--policies", "random"]
    assert main([*args, "--out", str(out), *RUN]) == 0
    assert f"2 new cells, 0 already in {out}" in capsys.readouterr().err
    assert main([*args, "--out", str(out), *RUN]) == 0
    assert f"0 new cells, 2 already in {out}" in capsys.readouterr().err



def test_seeds_beyond_the_protocol_are_run_with_a_note(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("prefduel.cli.grid_cmd.sweep", lambda *a, **k: [])
    args = ["run", "--worlds", "dev", "--seeds", "30-33", "--out", str(tmp_path / "r.jsonl")]
    assert main(args) == 0
    assert "note: dev is reported on seeds 0-31 in its protocol; 2 of the requested" in (
        capsys.readouterr().err
    )


def test_leaderboard_help_shows_its_defaults(capsys):
    assert main(["leaderboard", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    from prefduel.policies import POLICIES

    every = ",".join(POLICIES.ids())  # the default is every registered policy
    assert "(default: results.jsonl)" in text and f"(default:{every})" in "".join(text.split())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--seeds", "0-1000000000"], "names more than 100,000 seeds"),
        (["leaderboard", "--seeds", "0-99999,100000-200000"], "names more than 100,000 seeds"),
        (["run", "--seeds", "4294967290-4294967300"], "goes beyond 4,294,967,295"),
    ],
)
def test_seed_lists_are_bounded_before_they_are_built(argv, message, capsys):
    import time

    started = time.perf_counter()
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    "argv",
    [
        ["play", "--seed", "4294967296"],
        ["replay", "r.jsonl", "--seed", "4294967296"],
        ["prefdisco", "generate", "d", "--seed", "4294967296"],
        ["rank", "b.csv", "--out", "o", "--seed", "4294967296"],
    ],
)
def test_a_seed_beyond_32_bits_is_a_usage_error(argv, capsys):
    assert main(argv) == 2
    assert "expected an integer <= 4,294,967,295" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["leaderboard", "--md", "/proc/no/lb.md"], "folder of Markdown output (--md) /proc/no"),
        (["leaderboard", "--csv", "{tmp}"], "CSV output (--csv) {tmp} is a folder"),
        (["report", "{results}", "--out", "/proc/no"], "report folder /proc/no cannot be created"),
        (["report", "{results}", "--out", "{file}"], "report folder {file} is an existing file"),
        (["play", "--out", "/proc/no/p.html"], "folder of page /proc/no"),
        (["replay", "{results}", "--world", "{world}", "--policy", "random", "--out", "{tmp}"],
         "page {tmp} is a folder"),
    ],
)
def test_unwritable_outputs_are_named_before_any_work(argv, message, toy_world, tmp_path, capsys):
    results = _results(toy_world, tmp_path)
    capsys.readouterr()
    (tmp_path / "file").write_text("x")
    names = {"tmp": tmp_path, "results": results, "file": tmp_path / "file", "world": toy_world}
    grid = ["--worlds", toy_world, "--seeds", "0", "--policies", "random", "--results",
            str(tmp_path / "lb.jsonl")] if argv[0] == "leaderboard" else []
    assert main([a.format(**names) for a in argv] + grid) == 2
    assert message.format(**names) in capsys.readouterr().err
    assert not (tmp_path / "lb.jsonl").exists()  # the leaderboard computed nothing


def test_an_infinite_min_gap_is_a_usage_error(capsys):
    assert main(["prefdisco", "report", "d", "--min-gap", "inf"]) == 2
    assert "expected a finite number > 0, got 'inf'" in capsys.readouterr().err
