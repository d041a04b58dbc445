"""The sample vote log shipped as ``examples/battles.csv``: the generator's output, small,
readable by ``prefduel rank`` with users, prompts and timestamps, and enough to run the
README's commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pb_rank_data import rank

from prefduel.ranking import read_battles, sample_battles, write_battles

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "battles.csv"


def test_the_shipped_sample_is_the_seeded_generators_output(tmp_path):
    again = write_battles(sample_battles(), tmp_path / "battles.csv")
    assert again.read_bytes() == SAMPLE.read_bytes()
    assert SAMPLE.stat().st_size < 200_000


def test_the_sample_reads_with_users_prompts_and_timestamps():
    battles = read_battles(SAMPLE)
    summary = battles.summary()
    assert summary["skipped_total"] == 0 and summary["rows_read"] == battles.n > 1000
    assert battles.n_models == 8 and battles.n_users == 48
    assert battles.time is not None and battles.prompts is not None
    assert all(isinstance(p, str) and len(p.split()) >= 3 for p in battles.prompts.tolist())


def test_rank_runs_on_the_sample_with_features(tmp_path, capsys):
    out = tmp_path / "rank-report"
    fast = ["--bootstrap", "20", "--mlp-ensemble", "2", "--cv-folds", "3", "--topics", "5"]
    assert rank([str(SAMPLE), "--out", str(out), *fast]) == 0, capsys.readouterr().err
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["users"]["analysed"] == 48 and data["input"]["has_time"]
    assert not data["features"]["degenerate"]
    # The planted taste clusters show in the users' topics and style: features predict scores.
    assert data["predictions"]["elo"]["ci_relative_reduction"][0] > 0


def _run_marked_blocks(path: Path) -> list[str]:
    """The bash blocks of ``path`` that the docs test runs (preceded by its marker)."""
    text = path.read_text(encoding="utf-8")
    return re.findall(r"<!-- docs-test: run -->\s*```bash\n(.*?)```", text, re.S)


def test_the_readme_and_the_rankings_tour_run_rank_on_the_sample():
    readme = REPO / "README.md"
    section = readme.read_text(encoding="utf-8").split("### Personalized rankings")[1]
    section = section.split("\n### ")[0]
    assert "prefduel rank battles.jsonl" not in section  # a file that exists nowhere
    ran = [b for b in _run_marked_blocks(readme) if "prefduel rank examples/battles.csv" in b]
    assert ran and "--no-features" in "".join(ran)
    tour = _run_marked_blocks(REPO / "docs" / "rankings.md")
    assert "prefduel rank examples/battles.csv --out" in tour[0]
