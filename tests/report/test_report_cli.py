"""``prefduel report`` through ``main([...])``: output, exit codes, messages, play widget."""

from __future__ import annotations

import json
import sys

import pytest
from pb_report_rows import read_rows, sweep_results, write_rows

from prefduel.cli.main import main
from prefduel.report import build_report


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli")
    results, world = sweep_results(base)
    return results, world


def test_report_command_writes_the_page(toy, tmp_path, capsys):
    results, _ = toy
    out = tmp_path / "rep"
    argv = ["report", str(results), "--out", str(out), "--window", "5", "--policies", "pooled"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"wrote {out / 'report.html'} and 6 figure files")
    html = (out / "report.html").read_text()
    assert f"prefduel report {results} --out {out} --competitor random --window 5" in html
    assert "--policies pooled" in html
    assert "centered 5-arrival moving mean" in html
    assert len(list((out / "figures").glob("*.png"))) == 3
    assert captured.err == ""


def test_help_lists_the_options(capsys):
    assert main(["report", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--out", "--competitor", "--worlds", "--policies", "--allow-test", "--window"):
        assert flag in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--competitor", "coduel"], "competitor 'coduel' has no rows in"),
        (["--worlds", "dev"], "--worlds: no rows for 'dev'"),
        (["--policies", "rucb"], "--policies: no rows for 'rucb'; policies in the results file"),
    ],
)
def test_usage_errors_exit_2_with_a_message(toy, tmp_path, capsys, extra, message):
    results, _ = toy
    assert main(["report", str(results), "--out", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("prefduel: error: ") and message in err


def test_bad_files_exit_2(toy, tmp_path, capsys):
    results, _ = toy
    missing = tmp_path / "missing.jsonl"
    assert main(["report", str(missing), "--out", str(tmp_path / "o")]) == 2
    assert f"results file {missing} does not exist" in capsys.readouterr().err
    lines = results.read_text().splitlines()
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text("\n".join([*lines[:7], "not json", *lines[7:]]) + "\n")
    assert main(["report", str(corrupt), "--out", str(tmp_path / "o")]) == 2
    assert "corrupt.jsonl, line 8: not a valid JSON row" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--window", "0"], ["--window", "x"], []])
def test_argument_errors(toy, tmp_path, capsys, argv):
    results, _ = toy
    out = [] if not argv else ["--out", str(tmp_path / "o")]
    assert main(["report", str(results), *out, *argv]) == 2
    assert "usage:" in capsys.readouterr().err


def test_warnings_go_to_stderr(toy, tmp_path, capsys):
    results, _ = toy
    rows = read_rows(results)
    rows[0]["version"] = "0.0.1"
    path = write_rows(tmp_path / "r.jsonl", rows, tail='{"kind":')
    assert main(["report", str(path), "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert f"prefduel: warning: results file {path}: the last line (line 37)" in err
    assert "prefduel: warning: rows come from 2 package versions: 0.0.1 (1 rows)" in err
    assert "warning(s) above; the report shows them too" in err


def _fake_pages(monkeypatch, widget):
    monkeypatch.setattr("prefduel.report.build.play_widget", widget)


def test_play_widget_is_embedded_when_pages_has_one(toy, tmp_path, monkeypatch):
    results, world = toy
    calls = []

    def widget(w, arrival, *, element_id="play"):
        calls.append((w.N, int(w.seed), arrival, element_id))
        return f'<section id="{element_id}" data-testid="fake">arrival {arrival}</section>'

    _fake_pages(monkeypatch, widget)
    html = build_report(results, tmp_path / "o", figures=False).html.read_text()
    assert calls == [(12, 0, 0, "play")]  # first world, first seed, arrival 0
    assert '<h2 id="be-the-policy">Be the policy for one student</h2>' in html
    assert '<section id="play" data-testid="fake">arrival 0</section>' in html
    assert f"included: {world}, seed 0, arrival 0" in html


def test_a_broken_play_widget_costs_only_its_section(toy, tmp_path, monkeypatch):
    results, _ = toy

    def widget(w, arrival, *, element_id="play"):
        raise RuntimeError("widget bug")

    _fake_pages(monkeypatch, widget)
    with pytest.warns(UserWarning, match="the play widget failed \\(RuntimeError: widget bug\\)"):
        html = build_report(results, tmp_path / "o", figures=False).html.read_text()
    assert "be-the-policy" not in html and "Leaderboard" in html


def test_real_play_widget(toy, tmp_path):
    results, _ = toy
    html = build_report(results, tmp_path / "o", figures=False).html.read_text()
    assert '<h2 id="be-the-policy">Be the policy for one student</h2>' in html
    section = html[html.index('id="be-the-policy"') : html.index('<h2 id="settings">')]
    assert 'id="play"' in section and "<script src" not in section.lower()
    data = section[section.index('type="application/json"') :]
    payload = data[data.index(">") + 1 : data.index("</script>")]
    assert json.loads(payload)  # the widget's data is embedded, not fetched


def test_cli_does_not_import_matplotlib_until_a_report_is_built():
    import subprocess

    code = "import sys, prefduel.cli.main; print('matplotlib' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"
