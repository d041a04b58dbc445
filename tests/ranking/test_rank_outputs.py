"""Where ``prefduel rank`` writes: an output folder that cannot be written is a named error
before the analysis runs (nothing computed is lost), and the Markdown report shows names from
the vote log as text, never as HTML.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pb_rank_data import arena, rank

from prefduel.ranking import write_battles

FAST = ["--no-features", "--no-progress", "--bootstrap", "5", "--min-votes", "10"]
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def votes(tmp_path_factory) -> Path:
    return write_battles(arena(seed=4, n_users=20)[0], tmp_path_factory.mktemp("v") / "v.csv")


@pytest.fixture
def no_analysis(monkeypatch):
    """Fail the test if the analysis starts."""
    import prefduel.ranking as ranking

    def refuse(*args, **kwargs):
        raise AssertionError("the analysis ran before the output folder was checked")

    monkeypatch.setattr(ranking, "analyze", refuse)


def test_an_existing_file_as_out_is_refused_before_the_analysis(votes, tmp_path, capsys,
                                                                no_analysis):
    target = tmp_path / "report"
    target.write_text("keep me", encoding="utf-8")
    assert rank([str(votes), "--out", str(target), *FAST]) == 2
    err = capsys.readouterr().err
    assert "prefduel: error:" in err and str(target) in err and "not a folder" in err
    assert target.read_text(encoding="utf-8") == "keep me"


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder this process cannot write into (skips where none can be made)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").write_text("x")
    except OSError:
        return folder
    (folder / "probe").unlink()
    if Path("/sys").is_dir():  # as root, permission bits do not stop a write; sysfs does
        try:
            (Path("/sys") / "prefduel-probe").write_text("x")
        except OSError:
            return Path("/sys")
    pytest.skip("no read-only folder available")


def test_a_read_only_out_folder_is_refused_before_the_analysis(votes, tmp_path, capsys,
                                                               no_analysis):
    folder = _read_only_folder(tmp_path)
    try:
        assert rank([str(votes), "--out", str(folder), *FAST]) == 2
    finally:
        if folder != Path("/sys"):
            folder.chmod(0o755)
    err = capsys.readouterr().err
    assert "prefduel: error:" in err and str(folder) in err and "not writable" in err


@pytest.mark.parametrize(("name", "kind"), [("report.html", "folder"), ("figures", "file")])
def test_an_output_path_taken_by_the_wrong_kind_is_refused_first(votes, tmp_path, capsys,
                                                                 no_analysis, name, kind):
    out = tmp_path / "o"
    out.mkdir()
    if kind == "folder":
        (out / name).mkdir()
    else:
        (out / name).write_text("x", encoding="utf-8")
    assert rank([str(votes), "--out", str(out), *FAST]) == 2
    err = capsys.readouterr().err
    assert "prefduel: error:" in err and name in err


def test_report_md_shows_script_names_as_text(tmp_path, capsys):
    markdown = pytest.importorskip("markdown")
    frame = arena(seed=4, n_users=20)[0].copy()
    frame.loc[frame["model_a"] == "model-01", "model_a"] = f"model-01{SCRIPT}"
    frame.loc[frame["model_b"] == "model-01", "model_b"] = f"model-01{SCRIPT}"
    user = frame["judge"].iloc[0]
    frame.loc[frame["judge"] == user, "judge"] = f"{user}{SCRIPT}"
    path = write_battles(frame, tmp_path / "v.jsonl")
    out = tmp_path / "o"
    assert rank([str(path), "--out", str(out), *FAST, "--user", f"{user}{SCRIPT}"]) == 0
    capsys.readouterr()
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "alert(1)" in text  # the names are in the report ...
    html = markdown.markdown(text, extensions=["tables"])
    assert "<script" not in html.lower()  # ... as text
    assert "&lt;script&gt;alert(1)" in html
    assert not os.path.exists(out / "<script>")


@pytest.mark.parametrize("name", ["$\\frac{1}{$", "$x^{2}$", "cost $5"])
def test_dollar_signs_in_names_are_drawn_as_text(tmp_path, capsys, name):
    """Matplotlib reads ``$...$`` as mathematics: a model name must be drawn as it is."""
    pytest.importorskip("matplotlib")
    frame = arena(seed=4, n_users=20)[0].copy()
    for column in ("model_a", "model_b"):
        frame.loc[frame[column] == "model-01", column] = name
    path = write_battles(frame, tmp_path / "v.jsonl")
    out = tmp_path / "o"
    assert rank([str(path), "--out", str(out), *FAST]) == 0, capsys.readouterr().err
    svg = (out / "figures" / "ratings.svg").read_text(encoding="utf-8")
    assert f">{name}</text>" in svg  # one text element, not typeset glyphs


def test_the_recorded_command_line_parses_again(votes, tmp_path, capsys):
    """The command in the reports is one a user can paste: only the options rank takes."""
    import json
    import shlex

    from prefduel.cli.main import build_parser

    out = tmp_path / "o"
    assert rank([str(votes), "--out", str(out), *FAST]) == 0
    capsys.readouterr()
    command = json.loads((out / "report.json").read_text(encoding="utf-8"))["command"]
    assert "<function" not in command and "--handler" not in command
    words = shlex.split(command)
    assert words[:2] == ["prefduel", "rank"]
    again = build_parser().parse_args(words[1:])
    assert again.battles == str(votes) and again.bootstrap == 5 and again.no_features
