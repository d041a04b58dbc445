"""``prefduel report`` after a plain ``pip install .``: every table, figures skipped with a note.

matplotlib is made unimportable by putting None in ``sys.modules`` (``import matplotlib`` then
raises ImportError), as on an install without the ``report`` extra.
"""

from __future__ import annotations

import sys
import warnings

import pytest
from pb_report_rows import sweep_results

from prefduel.cli.main import main
from prefduel.report import ReportWarning, build_report

HINT = 'pip install "prefduel[report]"'


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    path, _ = sweep_results(tmp_path_factory.mktemp("nompl"))
    return path


@pytest.fixture
def no_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_the_page_has_every_table_and_says_where_figures_are_missing(
    results, tmp_path, no_matplotlib
):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build_report(results, tmp_path / "out")
    html = result.html.read_text(encoding="utf-8")
    assert result.figures == []
    assert not list((tmp_path / "out").rglob("*.png"))
    assert "<svg" not in html.split('id="be-the-policy"')[0]
    # every table is there: leaderboard, paired gains and per-profile breakdown
    for anchor in ("leaderboard", "curves", "gains", "profiles", "settings"):
        assert f'<h2 id="{anchor}">' in html
    assert html.count("<table>") >= 3
    for policy in ("random", "notransfer", "pooled"):
        assert f"</span>{policy}</td>" in html
    # one visible note where each figure would be, naming the extra to install
    notes = html.count("matplotlib is not installed")
    assert notes == 3, notes
    assert html.count(HINT.replace('"', "&quot;")) >= 3
    assert "<dt>figures</dt><dd>none: matplotlib not installed" in html  # the settings
    assert result.figures_skipped is not None and HINT in result.figures_skipped
    mine = [w for w in caught if issubclass(w.category, ReportWarning)]
    assert [str(w.message) for w in mine] == [result.figures_skipped]


def test_cli_prints_one_line_on_stderr(results, tmp_path, capsys, no_matplotlib):
    out = tmp_path / "rep"
    assert main(["report", str(results), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("prefduel: warning: ") and HINT in err[0]
    assert captured.out.startswith(f"wrote {out / 'report.html'} without figures")
    assert (out / "report.html").is_file()


def test_with_matplotlib_nothing_changes(results, tmp_path, capsys):
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "6 figure files" in captured.out
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert "matplotlib is not installed" not in html
