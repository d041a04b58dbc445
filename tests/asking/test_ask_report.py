"""``prefduel report`` on a results file with ask tracks: a leaderboard per track ordered by
budget, and the "Ask tracks" section (score against the budget, clicks per question, priced
score), with and without matplotlib."""

from __future__ import annotations

import sys
import warnings

import pytest
from pb_ask_rows import ask_results

from prefduel.cli.main import main
from prefduel.report import build_report
from prefduel.report.html import SECTIONS


@pytest.fixture(scope="module")
def tracks(tmp_path_factory):
    return ask_results(tmp_path_factory.mktemp("askrep"), budgets=(2, 0, 1))


@pytest.fixture
def no_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def _between(html: str, start: str, end: str) -> str:
    return html[html.index(start) : html.index(end, html.index(start))]


def test_each_track_has_its_leaderboard_in_budget_order(tracks, tmp_path):
    results, roster = tracks  # the file holds the tracks in the order 2, 0, 1
    result = build_report(results, tmp_path / "out", competitor="notransfer", figures=False)
    assert [r.world for r in result.worlds] == [roster, f"{roster}+ask1", f"{roster}+ask2"]
    html = result.html.read_text(encoding="utf-8")
    board = _between(html, 'id="leaderboard"', 'id="ask-tracks"')
    assert "+ask2 · ask track: up to 2 questions per arrival · seeds 0-1" in board
    track = board.split("+ask2 · ask track")[1]
    assert "asked / arrival</th>" in track
    plain = _between(board, f"{roster} · seeds", "+ask1 · ask track")
    assert "asked / arrival" not in plain


def test_the_ask_section_without_matplotlib_keeps_its_tables(tracks, tmp_path, no_matplotlib):
    results, _ = tracks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = build_report(results, tmp_path / "out", competitor="notransfer")
    html = result.html.read_text(encoding="utf-8")
    section = _between(html, 'id="ask-tracks"', 'id="curves"')
    assert "Figure not drawn: matplotlib is not installed" in section
    assert section.count("<table>") == 2 and "<svg" not in section


def test_a_report_without_tracks_has_no_ask_section(tracks, tmp_path):
    results, roster = tracks
    result = build_report(
        results, tmp_path / "out", worlds=roster, competitor="notransfer", figures=False
    )
    assert 'id="ask-tracks"' not in result.html.read_text(encoding="utf-8")
    assert any(getattr(b, "__name__", "") == "ask_section" for b in SECTIONS)


def test_report_command_on_tracks(tracks, tmp_path, capsys):
    """The "Ask tracks" section: score against the budget, what a question is worth, the
    figure; the policy that never asked is named in a note, not in the tables."""
    results, roster = tracks
    out = tmp_path / "rep"
    assert main(["report", str(results), "--out", str(out), "--competitor", "notransfer"]) == 0
    assert "figure files" in capsys.readouterr().out
    html = (out / "report.html").read_text(encoding="utf-8")
    section = _between(html, 'id="ask-tracks"', 'id="curves"')
    assert f"{roster}: score against the ask budget B" in section
    assert f"{roster}: what a question is worth" in section
    assert "break-even λ" in section and "clicks per question" in section
    assert "</span>notransfer-ask</td>" in section
    assert "</span>notransfer</td>" not in section  # it never asked: named in a note instead
    assert "leaderboard has them): notransfer</p>" in section
    assert section.count("<svg") == 1  # the figure, inline
    assert len(list((out / "figures").glob("ask_tracks_*.png"))) == 1
    assert html.index('id="leaderboard"') < html.index('id="ask-tracks"')
