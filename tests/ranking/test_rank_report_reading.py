"""The ``prefduel rank`` report reads plainly: a summary and contents first, a verdict on the
prediction, the paper's figures labelled as the paper's, the heatmap's subset said, and the
``--user`` leaderboard in the report files too."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
from pb_rank_data import analysis, arena, rank

from prefduel.core.document import Raw
from prefduel.core.document_html import to_html
from prefduel.core.document_text import to_markdown
from prefduel.ranking import write_battles, write_report
from prefduel.ranking.predict import prediction_verdict
from prefduel.ranking.report_figures import TOPIC_ROWS
from prefduel.ranking.report_sections import report_document

FAST = ["--bootstrap", "10", "--no-features", "--min-votes", "30"]


def _data() -> dict:
    return copy.deepcopy(analysis()[2].to_dict())


def _prediction(reduction: float, low: float, high: float) -> dict:
    return {"relative_reduction": reduction, "ci_relative_reduction": [low, high]}


def test_the_verdict_says_whether_features_beat_the_shuffled_control_and_the_mean():
    control = _prediction(-0.02, -0.04, 0.01)
    helped = prediction_verdict(_prediction(0.29, 0.23, 0.35), control)
    assert helped["gain"]
    assert helped["text"] == (
        "features helped: 29.0% lower error than the mean predictor, 95% [23.0, 35.0] "
        "(shuffled features: -2.0% [-4.0, +1.0])"
    )
    # TutorDuel clicks: the MLP does worse than the mean predictor, as the control does
    clicks = _prediction(-0.019, -0.031, -0.008), _prediction(-0.018, -0.03, -0.006)
    same = prediction_verdict(*clicks)
    assert not same["gain"]
    assert same["text"] == (
        "no gain: features did not beat the shuffled control, nor the mean predictor (error "
        "reduction -1.9% [-3.1, -0.8]; shuffled features: -1.8% [-3.0, -0.6])"
    )
    above_control = _prediction(0.01, -0.01, 0.03), _prediction(-0.1, -0.2, -0.05)
    verdict = prediction_verdict(*above_control)
    assert not verdict["gain"]
    assert verdict["text"].startswith("no gain: features did not beat the mean predictor (")
    # overlapping the control's interval is no gain, even above 0
    assert not prediction_verdict(_prediction(0.05, 0.01, 0.09), _prediction(0.0, -0.03, 0.02))[
        "gain"
    ]
    alone = prediction_verdict(_prediction(0.2, 0.1, 0.3), None)
    assert alone["gain"] and alone["text"].endswith("(no shuffled control was run)")


def test_the_report_states_the_prediction_verdict_for_each_target():
    data = _data()
    verdicts = data["prediction_verdicts"]
    assert set(verdicts) == {"elo", "bt"} and verdicts["elo"]["gain"]  # planted clusters
    markdown = to_markdown(report_document(data, {}))
    assert f"Elo scores: {verdicts['elo']['text']}" in markdown
    assert f"BT scores: {verdicts['bt']['text']}" in markdown
    # the shuffled control doing as well as the features turns the verdict
    preds = data["predictions"]
    preds["elo_shuffled"] = {**preds["elo"], "shuffled_features": True}
    data["prediction_verdicts"]["elo"] = prediction_verdict(preds["elo"], preds["elo_shuffled"])
    markdown = to_markdown(report_document(data, {}))
    assert "Elo scores: no gain: features did not beat the shuffled control" in markdown


def test_the_papers_numbers_are_labelled_as_the_papers_published_figures():
    markdown = to_markdown(report_document(_data(), {}))
    for figures in ("Elo 0.432, BT 0.043", "Elo 0.450 vs 0.688", "BT 0.450 vs 0.510"):
        lines = [line for line in markdown.splitlines() if figures in line]
        assert len(lines) == 1, figures
        assert "the paper's published figures (its" in lines[0]
        assert "Arena users, not this log)" in lines[0]
    assert "Paper" not in markdown


def test_the_topic_heatmap_says_how_many_users_it_shows_and_how_they_were_chosen():
    data = _data()
    users = data["topics"]["users"]
    assert users == data["users"]["analysed"] > TOPIC_ROWS
    figures = {"topics": "<svg></svg>"}
    markdown = to_markdown(report_document(data, figures))
    shown = f"{TOPIC_ROWS} of {users} users shown, evenly spaced in the order of style cluster"
    assert shown in markdown
    assert shown in to_html(report_document(data, figures))
    data["topics"]["users"] = 50
    markdown = to_markdown(report_document(data, figures))
    assert "all 50 users shown" in markdown and "users shown, evenly spaced" not in markdown


def _github_anchor(title: str) -> str:
    """The anchor GitHub's Markdown gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_the_report_opens_with_a_summary_and_contents_linking_every_section():
    document = report_document(_data(), {})
    titles = [s.title for s in document.sections]
    assert titles[:2] == ["Summary", "Contents"]
    summary = to_markdown(report_document(_data(), {})).split("## Contents")[0]
    for text in ("battles", "model-", "Spearman", "predicts held-out votes best", "Elo scores:"):
        assert text in summary, text
    contents = document.sections[1].blocks[0]
    assert isinstance(contents, Raw)
    page, markdown = to_html(document), to_markdown(document)
    for section in document.sections[2:]:
        assert f'<a href="#{section.anchor()}">' in contents.html
        assert f'id="{section.anchor()}"' in page
        link = f"[{section.title}](#{_github_anchor(section.title)})"
        assert link in contents.text and link in markdown
    # findings come before the reference tables
    assert titles.index("Global ratings") < titles.index("Input")
    assert titles.index("Input") < titles.index("Every skip and caveat") < titles.index("Settings")


def test_contents_titles_are_escaped_in_html():
    data = _data()
    data["topics"]["backend"] = "<b>x</b>"
    contents = report_document(data, {}).sections[1].blocks[0]
    assert "<b>x</b>" not in contents.html and "&lt;b&gt;x&lt;/b&gt;" in contents.html


def test_write_report_puts_the_users_leaderboard_in_every_report(tmp_path):
    result = analysis()[2]
    user = int(result.personal.users[2])
    name = result.battles.users[user]
    paths = write_report(result, tmp_path, user=user)
    markdown = paths["md"].read_text(encoding="utf-8")
    page = paths["html"].read_text(encoding="utf-8")
    rows = result.user_leaderboard(user)
    heading = f"## Leaderboard of user {name}"
    assert heading in markdown and f"user {name}: " in markdown
    assert markdown.index(heading) < markdown.index("## Global ratings")
    assert f">Leaderboard of user {name}</h2>" in page
    for row in rows:
        assert f"| {row['model']} | {row['battles']} | {row['bt']:.1f} |" in markdown
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["user_leaderboard"]["user"] == name
    assert [r["model"] for r in data["user_leaderboard"]["models"]] == [r["model"] for r in rows]
    assert "Leaderboard of user" not in (
        write_report(result, tmp_path / "plain")["md"].read_text(encoding="utf-8")
    )


def test_rank_user_writes_the_users_board_into_report_html_and_md(tmp_path, capsys):
    frame = arena(seed=5, n_users=40)[0]
    path = tmp_path / "votes.csv"
    write_battles(frame, path)
    user = sorted(frame["judge"].unique())[3]
    out = tmp_path / "out"
    assert rank([str(path), "--out", str(out), *FAST, "--user", user]) == 0
    printed = capsys.readouterr().out
    assert f"user {user}: " in printed and "report.html and report.md" in printed
    for name in ("report.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert f"Leaderboard of user {user}" in text and f"user {user}: " in text


@pytest.mark.parametrize("features", [True, False])
def test_the_summary_says_when_the_prediction_was_not_run(features):
    data = _data()
    if not features:
        data["predictions"], data["prediction_verdicts"] = {}, {}
        data.pop("topics"), data.pop("styles")
    summary = to_markdown(report_document(data, {})).split("## Contents")[0]
    assert ("Elo scores:" in summary) == features
    assert ("prediction was not run" in summary) != features


def test_analysis_data_has_a_verdict_only_for_targets_that_were_predicted():
    data = _data()
    assert {k for k in data["predictions"] if not k.endswith("_shuffled")} == set(
        data["prediction_verdicts"]
    )
    assert np.isfinite(data["predictions"]["elo"]["relative_reduction"])
