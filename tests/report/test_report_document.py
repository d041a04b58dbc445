"""The report as a `Document`: sections in order, table cells with their hints, text stand-ins."""

from __future__ import annotations

from pathlib import Path

import pytest
from pb_report_rows import roster_size, synthetic_rows, write_rows

from prefduel.core.document import Cell, Figure, Raw, Settings
from prefduel.core.document_text import to_markdown, to_text
from prefduel.report.compute import compute_report
from prefduel.report.data import ReportWarning, load_input
from prefduel.report.figures import SavedFigure
from prefduel.report.html import PLAY_STAND_IN, Page, report_document, seed_text


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Page:
    """dev: random, a reference and two policies; ``mine`` lacks seed 0, ``other``'s seed 2
    comes from version 0.0.9."""
    base = tmp_path_factory.mktemp("doc")
    policies = {"random": 0.3, "mine": 0.1, "other": 0.25}
    rows = synthetic_rows("dev", [0, 1, 2], policies, roster_size("dev"))
    rows = [r for r in rows if not (r["policy"] == "mine" and r["seed"] == 0)]
    rows += [{**r, "kind": "reference", "policy": "ref:x"} for r in rows if r["policy"] == "random"]
    for row in rows:
        if row["seed"] == 2 and row["policy"] == "other":
            row["version"] = "0.0.9"
    path = write_rows(base / "r.jsonl", rows)
    with pytest.warns(ReportWarning):  # two package versions
        data = load_input(path)
    reports, gain_notes = compute_report(data)
    png, svg = Path("f/paired_gains.png"), Path("f/paired_gains.svg")
    figure = SavedFigure("paired_gains", png, svg, '<svg id="paired_gains-x"></svg>')
    return Page(
        title="t",
        source=str(path),
        reports=reports,
        competitor="random",
        window=5,
        colors={"mine": "#1f77b4", "other": "#ff7f0e", "random": "#6b6b6b"},
        gain_notes=gain_notes,
        figures={"forest": figure},
        settings=[("command", "prefduel report r.jsonl --out o")],
        play_html='<section id="play">widget</section>',
        play_caption="Play one student.",
    )


def test_sections_come_in_page_order_with_their_anchors(page):
    doc = report_document(page)
    anchors = [s.anchor() for s in doc.sections]
    assert anchors == ["leaderboard", "curves", "gains", "profiles", "be-the-policy", "settings"]
    assert [s.id for s in doc.sections[0].subsections] == ["board-0"]
    assert doc.sections[0].subsections[0].title.startswith("dev · seeds 0-2 (")
    page_without_play = Page(**{**page.__dict__, "play_html": None})
    anchors = [s.anchor() for s in report_document(page_without_play).sections]
    assert "be-the-policy" not in anchors


def test_leaderboard_ranks_policies_marks_references_and_mixed_versions(page):
    board = report_document(page).tables()[0]
    entries = page.reports[0].leaderboard
    assert board.header()[-1] == "versions"
    assert board.row_tones == ["ref" if e["kind"] == "reference" else "pol" for e in entries]
    assert board.row_tones.count("ref") == 1
    ranks = [row[0] for row in board.rows if row[0] != ""]
    assert ranks == ["1", "2", "3"]
    for row, e in zip(board.rows, entries, strict=True):
        assert row[4].bar == e["score_mean"]
        assert row[3] == Cell(f"{e['score_mean']:.2f}", se=f"{e['score_se']:.2f}")
        assert (row[1].color is None) == (e["kind"] == "reference")
    flagged = {row[1].text: row[-1].text for row in board.rows if row[-1]}
    assert list(flagged) == ["other"] and flagged["other"].startswith("⚠ 0.0.9, ")


def test_gains_are_toned_by_their_t_interval_and_say_which_seeds_they_pair(page):
    doc = report_document(page)
    gains = next(t for t in doc.tables() if t.key == "paired gains dev")
    by_policy = {row[0].text: row for row in gains.rows}
    for g in page.reports[0].gains:
        row = by_policy[g["policy"]]
        tone = "good" if g["t_hi"] < 0 else ("bad" if g["t_lo"] > 0 else "")
        assert row[2] == Cell(f"{g['change_mean']:+.1f}%", tone=tone)
        assert row[3] == f"[{g['t_lo']:+.1f}, {g['t_hi']:+.1f}]"
    assert by_policy["mine"][1] == Cell("2", flag="(policy 2, random 3)")
    assert by_policy["other"][0].flag == "⚠ 1 cross-version"
    assert gains.numeric_columns() == [False, True, True, True, True]


def test_profile_rows_shade_the_best_and_worst_policy(page):
    table = next(t for t in report_document(page).tables() if t.key == "profiles dev")
    assert table.collapsed
    assert [c.text for c in table.columns[2:]] == page.reports[0].profiles.policies
    for row in table.rows:
        tones = [c.tone for c in row[2:]]
        means = [float(c.text) for c in row[2:]]
        assert tones[means.index(min(means))] == "best"
        assert tones[means.index(max(means))] == "worst"


def test_text_formats_get_the_stand_in_for_the_widget_and_the_figure_file(page):
    doc = report_document(page)
    play = doc.sections[4].blocks[-1]
    assert isinstance(play, Raw) and '<section id="play">' in play.html
    assert isinstance(doc.sections[-1].blocks[-1], Settings)
    text = to_text(doc)
    assert PLAY_STAND_IN in text and "<section" not in text and "<svg" not in text
    figure = doc.sections[2].blocks[1]
    assert isinstance(figure, Figure) and figure.files == (
        "figures/paired_gains.png",
        "figures/paired_gains.svg",
    )
    assert "](figures/paired_gains.svg)" in to_markdown(doc)


@pytest.mark.parametrize(
    ("seeds", "text"),
    [([], "none"), ([3], "3"), ([2, 0, 1], "0-2"), ([0, 1, 2, 3, 8], "0-3,8"), ([5, 1], "1,5")],
)
def test_seed_text(seeds, text):
    assert seed_text(seeds) == text
