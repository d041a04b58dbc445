"""``prefduel rank`` never looks hung: progress inside the long prediction stage, and each
stage's duration once it ends, on stderr."""

from __future__ import annotations

import re
from pathlib import Path

from pb_rank_data import FAST, arena, rank

from prefduel.ranking import analyze, battles_from_frame

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "battles.csv"
OPTIONS = ["--bootstrap", "10", "--mlp-ensemble", "2", "--cv-folds", "3", "--topics", "5"]
STAGES = (
    "global ratings",
    "per-user ratings",
    "held-out log-loss",
    "topics",
    "style features",
    "meta-styles",
    "prediction",
)


def test_analyze_reports_each_fitted_net_of_the_prediction():
    battles = battles_from_frame(arena(seed=3, n_users=30)[0])
    steps: list[tuple[str, int, int]] = []
    analyze(battles, FAST, on_progress=lambda *step: steps.append(step))
    # FAST: 4 folds; the Elo ensemble has 3 nets, BT one, each also on shuffled features.
    total = 2 * 4 * (3 + 1)
    assert [s[1] for s in steps] == list(range(1, total + 1))
    assert {(s[0], s[2]) for s in steps} == {("prediction", total)}


def _screen(err: str) -> str:
    """What a terminal shows of ``err``: each line as left by its last carriage return."""
    return "\n".join(line.rsplit("\r", 1)[-1] for line in err.split("\n"))


def test_rank_prints_each_stage_with_its_duration_and_a_progress_count(tmp_path, capsys):
    assert rank([str(SAMPLE), "--out", str(tmp_path / "r"), *OPTIONS]) == 0
    err = capsys.readouterr().err
    shown = _screen(err)
    for stage in (*STAGES, "reports and figures"):
        assert re.search(rf"^prefduel rank: {stage}: \d+\.\d s$", shown, re.M), (stage, shown)
    assert re.search(r"^prefduel rank: analysis and reports: \d+\.\d s$", shown, re.M)
    # While a stage runs its name shows; within the prediction a bar counts the fitted nets:
    # 2 (real and shuffled features) x 3 folds x (2 Elo nets + 1 BT net).
    assert "prefduel rank: topics ..." in err
    assert re.search(r"prefduel rank: prediction: 100%\|[^|]*\| 18/18 nets", err)


def test_no_progress_keeps_the_durations_and_drops_the_bars(tmp_path, capsys):
    args = [str(SAMPLE), "--out", str(tmp_path / "r"), *OPTIONS, "--no-progress"]
    assert rank(args) == 0
    err = capsys.readouterr().err
    assert re.search(r"^prefduel rank: prediction: \d+\.\d s$", err, re.M)
    assert "18/18" not in err and "\r" not in err and " ..." not in err
