"""The prefduel command: subcommands, output, exit codes, error messages."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from csv import DictReader
from pathlib import Path

import numpy as np
import pytest

from pb_toys import BAD_ARRIVAL, BAD_ROUND, strip_wall
from prefduel.cli import main as cli
from prefduel.cli.main import main, parse_seeds
from prefduel.core.errors import SpecError
from prefduel.runner.references import REFERENCES
from prefduel.runner.store import ResultsStore
from prefduel.stats.table import format_table, summarize_rows
from prefduel.worlds import get_roster


def _run(toy_world: str, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--worlds",
        toy_world,
        "--seeds",
        "0-1",
        "--policies",
        "random",
        "--out",
        str(out),
        "--jobs",
        "1",
        "--no-progress",
        *extra,
    ]


def test_worlds_lists_the_rosters(capsys):
    assert main(["worlds"]) == 0
    out = capsys.readouterr().out
    header, *rows = out.splitlines()
    assert header.split()[:6] == ["id", "arrivals", "students", "topics", "seeds", "locked"]
    assert any(r.startswith("dev ") and " no " in r for r in rows)
    assert any(r.startswith("test-topics ") and " yes " in r for r in rows)


def test_console_script_worlds():
    exe = shutil.which("prefduel")
    cmd = [exe, "worlds"] if exe else [sys.executable, "-m", "prefduel.cli.main", "worlds"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "control-scrambled" in proc.stdout


@pytest.mark.parametrize(
    ("text", "seeds"),
    [
        ("0-31", list(range(32))),
        ("0,2,5", [0, 2, 5]),
        ("0-3,8", [0, 1, 2, 3, 8]),
        ("3", [3]),
        ("1,1,0-1", [1, 0]),
    ],
)
def test_parse_seeds(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "3-1", "0-x", "-1", ","])
def test_parse_seeds_rejects(text):
    with pytest.raises(SpecError, match="seeds"):
        parse_seeds(text)


def test_run_prints_the_table_and_reruns_identically(toy_world, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main(_run(toy_world, out)) == 0
    printed = capsys.readouterr().out
    assert f"world: {toy_world}" in printed
    assert "ref:oracle-user [ref]" in printed and "\nrandom " in printed
    rows = ResultsStore(out).rows()
    assert len(rows) == 2 * (1 + len(REFERENCES))
    before = out.read_bytes()
    assert main(_run(toy_world, out)) == 0
    assert capsys.readouterr().out == printed
    assert out.read_bytes() == before


def test_run_with_two_jobs_matches_one(toy_world, tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(_run(toy_world, a)) == 0
    assert main([*_run(toy_world, b), "--jobs", "2"]) == 0
    assert strip_wall(ResultsStore(a).rows()) == strip_wall(ResultsStore(b).rows())


def test_run_splits_policy_settings(toy_world, user_policies, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    spec = f"random,{user_policies}:Fixed:b=2,a=0"
    assert main([*_run(toy_world, out), "--policies", spec, "--format", "md"]) == 0
    printed = capsys.readouterr().out
    assert "| random |" in printed
    policies = {r["policy"] for r in ResultsStore(out).rows()}
    assert f"{user_policies}:Fixed:a=0,b=2" in policies


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--worlds", "nope"], "unknown roster 'nope'. Known rosters: dev, test-topics"),
        (["--policies", "nope"], "unknown policy 'nope'. Known polic"),
        (["--policies", "random:oops"], "setting 'oops' in 'random:oops' is not of the form"),
        (["--worlds", "test-quirky"], "locked held-out roster; pass allow_test=True (CLI: --allow"),
        (["--seeds", "4-2"], "seeds: range '4-2' is empty"),
    ],
)
def test_run_errors_exit_2_with_message(args, expected, toy_world, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main([*_run(toy_world, out), *args]) == 2
    err = _error(capsys)
    assert err.startswith("prefduel: error: ")
    assert expected in err
    assert not out.exists()


def test_unknown_policy_lists_known_ids(toy_world, tmp_path, capsys):
    assert main([*_run(toy_world, tmp_path / "r.jsonl"), "--policies", "randon"]) == 2
    err = _error(capsys)
    assert "random" in err and "Did you mean 'random'?" in err


@pytest.mark.parametrize("cls", ["Dup", "OutOfRange", "NonInteger", "Raises"])
def test_policy_error_names_culprit_and_keeps_rows(cls, toy_world, user_policies, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    spec = f"{user_policies}:{cls}"
    assert main([*_run(toy_world, out), "--policies", f"random,{spec}"]) == 2
    err = _error(capsys)
    for part in (
        f"policy '{spec}'",
        f"world '{toy_world}'",
        "seed 0",
        f"arrival {BAD_ARRIVAL}",
        f"round {BAD_ROUND}",
    ):
        assert part in err
    assert ("policy", toy_world, 0, "random") in ResultsStore(out)


def test_keyboard_interrupt_exits_130(monkeypatch, toy_world, tmp_path, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("prefduel.cli.grid_cmd.sweep", interrupted)
    assert main(_run(toy_world, tmp_path / "r.jsonl")) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "finished rows are kept" in err and "resumes" in err


def test_stats_formats_and_filters(toy_world, user_policies, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    fixed = f"{user_policies}:Fixed"
    assert main([*_run(toy_world, out), "--policies", f"random,{fixed}"]) == 0
    capsys.readouterr()
    assert main(["stats", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    data = doc["summary"]
    assert {d["policy"] for d in data} == {"random", fixed, *REFERENCES}
    assert all(d["n"] == 2 for d in data)
    # paired gains vs random by default (the competitor itself is not listed)
    assert [(g["policy"], g["competitor"], g["n"]) for g in doc["paired_gains"]] == [
        (fixed, "random", 2)
    ]
    assert main(["stats", str(out), "--format", "json", "--competitor", "none"]) == 0
    assert list(json.loads(capsys.readouterr().out)) == ["summary"]
    assert main(["stats", str(out), "--format", "csv", "--policies", "random"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("world,policy,kind,n")
    assert {line.split(",")[1] for line in lines[1:]} == {"random", *REFERENCES}
    assert main(["stats", str(out), "--policies", "ref:floor,random", "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "*ref:floor*" in md and "| random |" in md and "oracle" not in md
    assert main(["stats", str(out), "--worlds", toy_world + "/"]) == 0
    assert "world: " in capsys.readouterr().out
    assert main(["stats", str(out), "--worlds", "dev"]) == 1
    assert "no rows" in capsys.readouterr().err


def test_stats_corrupt_middle_line_exits_2(toy_world, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main(_run(toy_world, out)) == 0
    lines = out.read_text().splitlines()
    lines[2] = lines[2][:20]
    out.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["stats", str(out)]) == 2
    err = _error(capsys)
    assert f"results file {out}, line 3" in err
    assert main(_run(toy_world, out)) == 2  # run refuses too, and does not touch the file
    assert out.read_text().splitlines()[2] == lines[2]


def test_stats_truncated_last_line_warns_and_keeps_file(toy_world, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main(_run(toy_world, out)) == 0
    data = out.read_bytes()[:-10]
    out.write_bytes(data)
    capsys.readouterr()
    assert main(["stats", str(out)]) == 0
    assert "prefduel: warning: results file" in capsys.readouterr().err
    assert out.read_bytes() == data


def test_stats_missing_file_and_usage_errors(tmp_path, capsys):
    assert main(["stats", str(tmp_path / "nope.jsonl")]) == 2
    assert "does not exist" in _error(capsys)
    assert main(["stats", "x", "--format", "html"]) == 2
    assert main([]) == 2
    assert main(["--help"]) == 0


def test_leaderboard_reads_finished_rows_and_writes_md_and_csv(toy_world, tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    assert main(_run(toy_world, results)) == 0  # random already finished for seeds 0-1
    capsys.readouterr()
    before = {(r["policy"], r["seed"]): r["wall_time"] for r in ResultsStore(results).rows()}
    md, csv = tmp_path / "board.md", tmp_path / "board.csv"
    args = [
        "leaderboard",
        "--worlds",
        toy_world,
        "--seeds",
        "0-1",
        "--policies",
        "random,notransfer",
        "--results",
        str(results),
        "--md",
        str(md),
        "--csv",
        str(csv),
        "--jobs",
        "1",
        "--no-progress",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    rows = ResultsStore(results).rows()
    # the finished random rows were read, not recomputed; notransfer was added
    assert {(r["policy"], r["seed"]): r["wall_time"] for r in rows if r["policy"] == "random"} == {
        k: v for k, v in before.items() if k[0] == "random"
    }
    assert sum(r["policy"] == "notransfer" for r in rows) == 2
    table = md.read_text()
    assert "*ref:oracle-user*" in table and "| notransfer |" in table.replace("  ", " ")
    table_rows = list(DictReader(csv.read_text().splitlines()))
    assert {r["policy"] for r in table_rows} >= {"random", "notransfer", "ref:oracle-user"}
    scores = [float(r["score_mean"]) for r in table_rows]
    assert scores == sorted(scores, reverse=True)  # sorted by score
    assert f"wrote {md} and {csv}" in printed


def test_stats_competitor_prints_paired_gains(toy_world, tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    run = _run(toy_world, results)
    run[run.index("random")] = "random,notransfer"
    assert main(run) == 0
    capsys.readouterr()
    assert main(["stats", str(results), "--competitor", "random", "--format", "csv"]) == 0
    printed = capsys.readouterr().out
    header = "world,policy,competitor,n,change_mean,t_lo,t_hi,boot_lo,boot_hi"
    assert header in printed.splitlines()
    gains = printed.split(header + "\n", 1)[1].splitlines()
    assert len(gains) == 1 and gains[0].split(",")[1:4] == ["notransfer", "random", "2"]
    assert float(gains[0].split(",")[4]) < 0  # notransfer has less regret than random
    assert main(["stats", str(results), "--competitor", "nope"]) == 2
    assert "competitor 'nope' has no rows" in capsys.readouterr().err


def test_stats_by_profile_breaks_a_policy_down_by_hidden_profile(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    args = [
        "run",
        "--worlds",
        "dev",
        "--seeds",
        "0",
        "--policies",
        "notransfer",
        "--out",
        str(results),
        "--jobs",
        "1",
        "--no-progress",
    ]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["stats", str(results), "--by-profile", "notransfer", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("world,policy,profile,arrivals,excess_mean,excess_se")
    table = [line.split(",") for line in lines[start + 1 :]]
    assert len(table) == 8 and sum(int(r[3]) for r in table) == 300
    assert main(["stats", str(results), "--by-profile", "pooled"]) == 2
    assert "no rows for policy 'pooled'" in capsys.readouterr().err


def test_stats_curves_print_learning_and_per_round_curves(toy_world, tmp_path, capsys):
    from prefduel.stats.paired import learning_curve, round_curve

    results = tmp_path / "results.jsonl"
    run = _run(toy_world, results)
    run[run.index("random")] = "random,notransfer"
    assert main(run) == 0
    capsys.readouterr()
    rows = [r for r in ResultsStore(results).rows() if r["kind"] == "policy"]
    assert main(["stats", str(results), "--curves", "--window", "3", "--format", "json"]) == 0
    printed = capsys.readouterr().out
    entries = json.loads(printed)["curves"]
    for policy in ("random", "notransfer"):
        mine = [r for r in rows if r["policy"] == policy]
        world = mine[0]["world"]
        expected = learning_curve(mine, world, policy, window=3)
        got = [e for e in entries if e["policy"] == policy and e["curve"] == "arrival"]
        assert [e["x"] for e in got] == list(range(len(expected["mean"])))
        np.testing.assert_allclose([e["mean"] for e in got], expected["mean"])
        np.testing.assert_allclose([e["lo"] for e in got], expected["lo"])
        per_round = round_curve(mine)
        got = [e for e in entries if e["policy"] == policy and e["curve"] == "round"]
        assert [e["x"] for e in got] == list(range(1, len(per_round["mean"]) + 1))
        np.testing.assert_allclose([e["hi"] for e in got], per_round["hi"])
        assert {e["seeds"] for e in got} == {2}
    assert main(["stats", str(results), "--curves", "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "excess regret per arrival (centered 25-arrival mean" in md
    assert "| notransfer | " in md and "mean excess regret per round" in md
    assert main(["stats", str(results), "--curves", "--window", "0"]) == 2


def test_seeds_of_a_stored_world_are_replicates_not_repeats(toy_world, tmp_path, capsys):
    """A deterministic policy on seeds of one stored world: each seed is its own arrival order
    and click draw, so the rows differ, and the table says what its ± is over."""
    out = tmp_path / "r.jsonl"
    args = ["run", "--worlds", toy_world, "--seeds", "0-3", "--policies", "notransfer"]
    assert main([*args, "--out", str(out), "--jobs", "1", "--no-progress"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    excess = {r["seed"]: r["excess"] for r in rows if r["policy"] == "notransfer"}
    assert len(set(excess.values())) == 4
    assert "1 stored world: each seed re-orders its arrivals" in capsys.readouterr().out


def test_run_text_explains_its_table_and_names_the_winner(toy_world, tmp_path, capsys):
    """A first table must be readable without the docs: what the reference rows are, the unit
    of excess regret, how many samples stand behind a ±, and who won by how much, with the
    same paired interval that ``stats --competitor`` prints."""
    out = tmp_path / "results.jsonl"
    run = _run(toy_world, out)
    run[run.index("0-1")] = "0-2"
    run[run.index("random")] = "random,notransfer"
    assert main(run) == 0
    printed = capsys.readouterr().out
    summary = [e for e in summarize_rows(ResultsStore(out).rows()) if e["kind"] == "policy"]
    best, runner_up = summary[0]["policy"], summary[1]["policy"]
    assert main(["stats", str(out), "--competitor", runner_up]) == 0
    gains = capsys.readouterr().out.split(f"paired change in excess regret vs {runner_up}")[1]
    row = next(line.split() for line in gains.splitlines() if line.split()[1:2] == [best])
    change, t_interval = row[3], " ".join(row[4:6])
    headline = f"best policy on {toy_world}: {best}; excess regret vs the next best, {runner_up}: "
    assert headline + f"{change} {t_interval}" in printed.splitlines()
    flat = " ".join(printed.split())  # the legend is wrapped at 100 columns
    assert "(paired by seed over 3 seeds, 95% t interval" in flat
    assert "excess: excess regret R - G" in flat and "12 arrivals x 24 rounds" in flat
    assert "±: standard error of the mean over 3 seeds (1 stored world" in flat
    assert "docs/tutorduel.md#reference-rows" in flat
    legend = {line.split()[0] for line in printed.splitlines() if line.startswith("  ref:")}
    assert legend == set(REFERENCES)  # every reference row shown is explained


def test_run_machine_readable_formats_carry_no_legend(toy_world, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main([*_run(toy_world, out), "--format", "json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert {e["policy"] for e in entries} == {"random", *REFERENCES}
    assert main([*_run(toy_world, out), "--format", "csv"]) == 0
    assert capsys.readouterr().out == format_table(
        summarize_rows(ResultsStore(out).rows()), "csv"
    )


def test_leaderboard_defaults_to_unlocked_rosters_and_says_how_to_run_the_locked_ones(
    tmp_path, capsys, monkeypatch
):
    args = cli.build_parser().parse_args(["leaderboard"])
    assert args.worlds and not any(get_roster(w).locked for w in args.worlds.split(","))
    monkeypatch.chdir(tmp_path)
    # the default worlds, a tiny grid: it runs without --allow-test and writes its files
    assert main(["leaderboard", "--seeds", "0", "--policies", "random", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    for world in args.worlds.split(","):
        assert f"world: {world} (" in printed
    assert (tmp_path / "leaderboard.md").is_file() and (tmp_path / "leaderboard.csv").is_file()
    hint = "--worlds test-profiles,test-composite,test-quirky --allow-test"
    assert hint in printed
    assert main(["leaderboard", "--help"]) == 0
    assert hint in " ".join(capsys.readouterr().out.split())


def test_top_level_help_describes_every_system(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for words in ("TutorDuel", "CODuel", "personalized rankings", "rank", "PrefDisco",
                  "prefdisco", "datagen", "LLM"):
        assert words in text
