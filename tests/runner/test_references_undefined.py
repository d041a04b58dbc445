"""``ref:rater-top2`` is undefined when the rater feature g is the same for every persona: its
top two would be chosen by tie-breaking. The row says so, and ``prefduel stats`` and the report
show the reference as undefined instead of a number."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pb_toys import make_world
from prefduel.report import build_report
from prefduel.runner.references import reference_rows, undefined_references
from prefduel.runner.sweep import sweep
from prefduel.stats.table import format_table, summarize_rows


def _flat_world(seed: int = 0):
    world = make_world(seed)
    world.Phi[..., -1] = 0.0  # the rater feature carries no information
    return world


def test_a_constant_rater_feature_makes_rater_top2_undefined():
    rows = {r["policy"]: r for r in reference_rows(_flat_world())}
    reason = rows["ref:rater-top2"]["undefined"]
    assert "tie-breaking" in reason and "constant" in reason
    assert all("undefined" not in r for name, r in rows.items() if name != "ref:rater-top2")
    assert undefined_references(_flat_world()) == {"ref:rater-top2": reason}


def test_an_informative_rater_feature_is_defined():
    world = make_world(0)
    assert undefined_references(world) == {}
    assert all("undefined" not in r for r in reference_rows(world))
    world.Phi[:, :, :, -1] = np.arange(world.K)[None, None, :]  # constant over rounds only
    assert undefined_references(world) == {}


def _row(policy, seed, score, undefined=None):
    row = {"kind": "reference", "world": "w", "seed": seed, "policy": policy, "score": score,
           "excess": 10.0 - score / 10}
    if undefined:
        row["undefined"] = undefined
    return row


def test_stats_show_an_undefined_reference_without_a_number():
    rows = [
        _row("ref:floor", 0, 100.0),
        _row("ref:floor", 1, 100.0),
        _row("ref:rater-top2", 0, 84.0, "g is constant: tie-breaking"),
        _row("ref:rater-top2", 1, -49.0, "g is constant: tie-breaking"),
    ]
    summary = summarize_rows(rows)
    entry = next(e for e in summary if e["policy"] == "ref:rater-top2")
    assert entry["score_mean"] is None and entry["excess_mean"] is None and entry["n"] == 0
    assert entry["undefined"] == "g is constant: tie-breaking"
    assert summary[-1] is entry  # after every defined entry
    text = format_table(summary, "text")
    line = next(x for x in text.splitlines() if "ref:rater-top2" in x)
    assert "undefined" in line and "84" not in line and "-49" not in line
    assert "g is constant: tie-breaking" in text
    assert "undefined" in format_table(summary, "md")
    data = json.loads(format_table(summary, "json"))  # valid JSON: no NaN
    assert next(e for e in data if e["policy"] == "ref:rater-top2")["score_mean"] is None
    assert "ref:rater-top2" in format_table(summary, "csv")


def test_a_reference_undefined_in_some_seeds_averages_the_others():
    rows = [_row("ref:rater-top2", 0, 50.0), _row("ref:rater-top2", 1, -49.0, "tie")]
    (entry,) = summarize_rows(rows)
    assert entry["score_mean"] == 50.0 and entry["n"] == 1 and entry["seeds"] == [0]
    assert entry["undefined_seeds"] == [1] and entry["undefined"] == "tie"
    assert "undefined in 1 seed" in format_table([entry], "text")


@pytest.fixture(scope="module")
def flat_results(tmp_path_factory):
    base = tmp_path_factory.mktemp("flat")
    flat = _flat_world()
    flat.students = [{"id": f"student-{i}", "profile": "p"} for i in range(4)]
    world = str(flat.save(base / "world"))
    results = base / "results.jsonl"
    sweep([world], [0, 1], ["random"], str(results), jobs=1, progress=False)
    return base, results


def test_the_stats_command_and_the_report_show_it_undefined(flat_results, capsys):
    from prefduel.cli.main import main

    base, results = flat_results
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rater = [r for r in rows if r["policy"] == "ref:rater-top2"]
    assert len(rater) == 2 and all("undefined" in r for r in rater)
    assert main(["stats", str(results)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "ref:rater-top2" in x)
    assert "undefined" in line
    report = build_report(results, base / "out", command="prefduel report")
    html = report.html.read_text(encoding="utf-8")
    cell = html[html.index("ref:rater-top2") :][:600]
    assert "undefined" in cell and "tie-breaking" in html
