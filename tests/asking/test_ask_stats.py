"""What asking is worth, from result rows: score against the budget, the clicks-equivalent of
a question, the priced score; and ``prefduel stats`` on a file with ask tracks."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from pb_ask_rows import ask_results

from prefduel.cli.main import main
from prefduel.stats.asking import (
    budget_curves,
    clicks_equivalent,
    decreasing_fit,
    first_round,
    order_worlds,
    price_unit,
    priced_scores,
)
from prefduel.stats.table import summarize_rows

S = 24


def _row(world, policy, seed, score, per_round, asked=None, n=10):
    row = {
        "kind": "policy",
        "world": world,
        "seed": seed,
        "policy": policy,
        "score": score,
        "excess": 1.0,
        "excess_per_arrival": [1.0] * n,
        "excess_per_round": list(per_round),
    }
    if asked is not None:
        row["asked"] = asked
    return row


def _curve(shift=0.0):
    """A learning curve falling from 1.0 to 0.2 by round 17, then flat; ``shift`` rounds
    earlier."""
    rounds = np.arange(1, S + 1) + shift
    return np.maximum(1.0 - 0.05 * (rounds - 1), 0.2)


@pytest.fixture(scope="module")
def tracks(tmp_path_factory):
    return ask_results(tmp_path_factory.mktemp("ask"))


def test_tracks_of_a_world_are_ordered_by_budget():
    assert order_worlds(["w+ask2", "ctl", "w", "w+ask10", "w+ask1"]) == [
        "w",
        "w+ask1",
        "w+ask2",
        "w+ask10",
        "ctl",
    ]
    rows = [_row(w, "p", 0, 50.0, _curve(), a) for w, a in (("w+ask2", 20), ("w", None))]
    assert [e["world"] for e in summarize_rows(rows)] == ["w", "w+ask2"]
    assert summarize_rows(rows)[1]["asked_per_arrival"] == pytest.approx(2.0)


def test_decreasing_fit_pools_the_ups_of_noise():
    assert decreasing_fit([3.0, 1.0, 2.0, 0.0]).tolist() == [3.0, 1.5, 1.5, 0.0]
    fit = decreasing_fit(np.random.default_rng(0).normal(size=50))
    assert np.all(np.diff(fit) <= 0)
    assert first_round(np.array([1.0, 0.5, 0.1]), 0.3) == pytest.approx(2.5)
    assert first_round(np.array([1.0, 0.5]), 0.1) is None


def test_a_question_worth_two_clicks_reads_as_two():
    """Two questions that move the whole learning curve 4 rounds earlier: 2 clicks each."""
    rows = [_row("w", "asker", s, 40.0, _curve()) for s in (0, 1)]
    rows += [_row("w+ask2", "asker", s, 50.0, _curve(4.0), asked=20) for s in (0, 1)]
    (eq,) = clicks_equivalent(rows)
    assert (eq.budget, eq.seeds, eq.asked) == (2, 2, 2.0)
    assert eq.rounds_saved == pytest.approx(4.0)
    assert eq.per_question == pytest.approx(2.0)
    assert eq.level == pytest.approx(0.2) and not eq.at_least and eq.undefined is None


def test_the_clicks_equivalent_divides_by_the_questions_actually_asked():
    rows = [_row("w", "asker", 0, 40.0, _curve())]
    rows.append(_row("w+ask4", "asker", 0, 50.0, _curve(4.0), asked=20))  # 2 of 4 per arrival
    (eq,) = clicks_equivalent(rows)
    assert eq.per_question == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("plain", "track", "why"),
    [
        (np.full(S, 0.5), _curve(4.0), "does not fall"),
        (_curve(), _curve() + 0.1, "does not reach"),
        (None, _curve(), "without questions"),
    ],
)
def test_the_clicks_equivalent_is_undefined_and_says_why(plain, track, why):
    rows = [] if plain is None else [_row("w", "asker", 0, 40.0, plain)]
    rows.append(_row("w+ask1", "asker", 0, 50.0, track, asked=10))
    (eq,) = clicks_equivalent(rows)
    assert eq.per_question is None and why in eq.undefined


def test_a_curve_at_the_level_from_round_one_is_a_lower_bound():
    rows = [_row("w", "asker", 0, 40.0, _curve()), _row("w+ask1", "asker", 0, 60.0, _curve(30), 10)]
    (eq,) = clicks_equivalent(rows)
    assert eq.at_least and eq.rounds_saved == pytest.approx(16.0)


def test_policies_that_never_ask_are_not_ask_entries():
    rows = [_row("w", "clicks", 0, 40.0, _curve()), _row("w+ask1", "clicks", 0, 40.0, _curve(), 0)]
    assert budget_curves(rows) == [] and clicks_equivalent(rows) == []


def test_priced_score_charges_each_question_lam_rounds_of_random_pairs():
    rows = [_row("w", "asker", s, 40.0 + s, _curve()) for s in (0, 1)]
    rows += [_row("w+ask2", "asker", s, 50.0 + s, _curve(4.0), asked=20) for s in (0, 1)]
    priced = {e["budget"]: e for e in priced_scores(rows, lam_max=2.0, points=5)}
    unit = price_unit(S)
    assert unit == pytest.approx(100 / 24)
    assert priced[0]["mean"] == pytest.approx([40.5] * 5)  # B = 0 asks nothing: flat
    assert priced[2]["lam"] == pytest.approx([0, 0.5, 1, 1.5, 2])
    assert priced[2]["mean"][2] == pytest.approx(50.5 - 1.0 * 2 * unit)
    assert priced[2]["se"][2] == pytest.approx(0.5)
    assert priced[2]["break_even"] == pytest.approx(10.0 / (2 * unit))
    assert all(a > b for a, b in zip(priced[2]["mean"], priced[2]["mean"][1:], strict=False))


def test_budget_curves_from_a_real_run(tracks):
    results, _ = tracks
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    curves = budget_curves(rows)
    assert [(e["policy"], e["budget"], e["n"]) for e in curves] == [
        ("notransfer-ask", 0, 2),
        ("notransfer-ask", 1, 2),
        ("notransfer-ask", 2, 2),
    ]
    assert [e["asked_mean"] for e in curves] == [0.0, 1.0, 2.0]
    assert curves[0]["track"] == curves[0]["world"] and curves[2]["track"].endswith("+ask2")


def test_stats_shows_the_track_and_the_questions_asked(tracks, capsys):
    results, _ = tracks
    assert main(["stats", str(results), "--competitor", "none"]) == 0
    text = capsys.readouterr().out
    assert "+ask1 (ask track: up to 1 question per arrival;" in text
    assert "+ask2 (ask track: up to 2 questions per arrival;" in text
    assert text.index("+ask1 (ask") < text.index("+ask2 (ask")
    lines = text.split("+ask2 (ask")[1].splitlines()
    line = next(x for x in lines if x.startswith("notransfer-ask "))
    assert line.split()[-1] == "2.00"  # questions asked per arrival
    assert "score against the ask budget B" in text and "what a question is worth" in text
    assert main(["stats", str(results), "--competitor", "none", "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "| policy | seeds | score (mean ± s.e.) | excess (mean ± s.e.) | asked / arrival |" in md
    assert "± over seeds; ask track: up to 2 questions per arrival;" in md


def test_stats_csv_and_json_carry_the_ask_records(tracks, capsys):
    results, _ = tracks
    assert main(["stats", str(results), "--competitor", "none", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    records = doc["ask_tracks"]["records"]
    asked = [(r["budget"], r["asked_per_arrival"]) for r in records]
    assert asked == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert {e["budget"] for e in doc["ask_tracks"]["clicks_equivalent"]} == {1, 2}
    assert main(["stats", str(results), "--competitor", "none", "--format", "csv"]) == 0
    text = capsys.readouterr().out
    summary = text[: text.index("world,policy,budget,")]
    rows = list(csv.DictReader(io.StringIO(summary)))
    track = [r for r in rows if r["world"].endswith("+ask2") and r["policy"] == "notransfer-ask"]
    assert track[0]["ask_budget"] == "2" and float(track[0]["asked_per_arrival"]) == 2.0


def test_stats_without_tracks_has_no_ask_part(tracks, capsys):
    results, roster = tracks
    assert main(["stats", str(results), "--worlds", roster, "--format", "json"]) == 0
    assert "ask_tracks" not in json.loads(capsys.readouterr().out)
