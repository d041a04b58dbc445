"""Bad input: clear errors or visible warnings, never a silently wrong number."""

from __future__ import annotations

import json
import re
import sys
import warnings
from html import escape
from pathlib import Path

import pytest
from pb_report_rows import read_rows, roster_size, sweep_results, synthetic_rows, write_rows

from prefduel import __version__
from prefduel.core.errors import ResultsFileError, SpecError
from prefduel.report import MissingDependencyError, ReportWarning, build_report, load_input
from prefduel.report.compute import compute_report
from prefduel.stats.paired import paired_gains


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """Rows of random, notransfer and pooled on a toy profile world (3 seeds)."""
    base = tmp_path_factory.mktemp("toy")
    results, world = sweep_results(base)
    return read_rows(results), world


def _build(path: Path, out: Path, **kwargs):
    """Build a report (tables only: figures are tested elsewhere); return (result, html,
    warnings issued)."""
    with pytest.warns(ReportWarning) as caught:
        result = build_report(path, out, figures=False, **kwargs)
    return result, result.html.read_text(), [str(w.message) for w in caught]


def test_missing_file(tmp_path):
    with pytest.raises(ResultsFileError, match=r"results file .*nope\.jsonl does not exist"):
        build_report(tmp_path / "nope.jsonl", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(ResultsFileError, match="is a directory"):
        load_input(tmp_path)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_file(tmp_path, text):
    path = tmp_path / "empty.jsonl"
    path.write_text(text)
    with pytest.raises(ResultsFileError, match=r"empty.jsonl is empty \(no rows\)"):
        build_report(path, tmp_path / "out")


def test_damaged_line_in_the_middle_names_the_line(tmp_path, toy):
    rows, _ = toy
    text = "".join(json.dumps(r) + "\n" for r in rows[:4]) + '{"kind": "pol\n'
    text += "".join(json.dumps(r) + "\n" for r in rows[4:])
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    before = path.read_bytes()
    with pytest.raises(ResultsFileError, match=r"r\.jsonl, line 5: not a valid JSON row"):
        build_report(path, tmp_path / "out")
    assert path.read_bytes() == before  # repair=False: the file is never touched


def test_row_without_key_field_names_the_line(tmp_path, toy):
    rows, _ = toy
    broken = dict(rows[2])
    del broken["seed"]
    path = write_rows(tmp_path / "r.jsonl", [*rows[:2], broken, *rows[3:]])
    with pytest.raises(ResultsFileError, match=r"line 3: missing field\(s\) seed"):
        build_report(path, tmp_path / "out")


def test_damaged_last_line_is_skipped_and_reported(tmp_path, toy):
    rows, _ = toy
    path = write_rows(tmp_path / "r.jsonl", rows, tail='{"kind": "policy", "wor')
    before = path.read_bytes()
    result, html, warned = _build(path, tmp_path / "out")
    message = f"the last line (line {len(rows) + 1}) is incomplete or damaged"
    assert any(message in w for w in warned)
    assert message in html and 'id="warnings"' in html
    assert path.read_bytes() == before
    assert f"{len(rows)} used of {len(rows)} in the file" in html
    assert result.warnings


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("score", None, "field 'score' is None, not a number"),
        ("excess", "12", "field 'excess' is '12', not a number"),
        ("excess", float("nan"), "field 'excess' is nan, not a number"),
        ("score", "drop", "no field 'score'"),
        ("excess_per_arrival", "drop", "no field 'excess_per_arrival'"),
        ("excess_per_arrival", [None] * 12, "field 'excess_per_arrival' holds values that are"),
        ("score", 12345.0, "score 12345.0 disagrees with its regrets"),
    ],
)
def test_rows_with_unusable_or_impossible_numbers_are_refused(tmp_path, toy, field, value,
                                                              problem):
    """A damaged row is named by its line instead of being averaged in or left out."""
    rows, _ = toy
    broken = dict(rows[5])
    if value == "drop":
        del broken[field]
    else:
        broken[field] = value
    path = write_rows(tmp_path / "r.jsonl", [*rows[:5], broken, *rows[6:]])
    with pytest.raises(ResultsFileError) as info:
        build_report(path, tmp_path / "out")
    assert f"{path}, line 6: {problem}" in str(info.value)
    assert not (tmp_path / "out" / "index.html").exists()


def test_curves_of_another_length_are_refused(tmp_path, toy):
    rows, _ = toy
    rows = [dict(r) for r in rows]
    cut = rows[1]["excess_per_arrival"][:-1]
    rows[1]["excess_per_arrival"] = cut
    # keep the row consistent on its own: only its length differs from the world's
    rows[1]["excess"] = sum(cut)
    rows[1]["R"] = rows[1]["G"] + rows[1]["excess"]
    rows[1]["score"] = 100 * (rows[1]["R_rand"] - rows[1]["R"]) / (rows[1]["R_rand"] - rows[1]["G"])
    ratio = (sum(cut) / 11) / sum(rows[1]["excess_per_round"])
    rows[1]["excess_per_round"] = [x * ratio for x in rows[1]["excess_per_round"]]
    with pytest.raises(ResultsFileError, match=r"line 2: curves of 11 arrivals x 24 rounds"):
        load_input(write_rows(tmp_path / "r.jsonl", rows))


def test_mixed_versions_warn_and_show(tmp_path, toy):
    rows, _ = toy
    rows = [dict(r) for r in rows]
    for r in rows:
        if r["seed"] == 2 and r["policy"] in ("pooled", "random"):
            r["version"] = "0.0.9"
    rows[-1].pop("version")
    path = write_rows(tmp_path / "r.jsonl", rows)
    _, html, warned = _build(path, tmp_path / "out")
    assert any("rows come from 3 package versions" in w for w in warned)
    assert any("pool seeds written by different versions" in w and "pooled on" in w for w in warned)
    for version in ("0.0.9", __version__, "unknown"):
        assert version in html
    assert f"⚠ 0.0.9, {__version__}" in html  # the mixed leaderboard entry is flagged
    # one version only: no warning about versions, and only its rows
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build_report(path, tmp_path / "one", only_version="0.0.9", figures=False)
    assert not any("versions" in str(w.message) for w in caught)
    assert {e["n"] for e in result.worlds[0].leaderboard} == {1}


def test_unknown_version_filter_lists_versions(tmp_path, toy):
    rows, _ = toy
    path = write_rows(tmp_path / "r.jsonl", rows)
    found = re.escape(__version__)
    with pytest.raises(SpecError, match=rf"--only-version: no rows of version '9'; found {found}"):
        build_report(path, tmp_path / "out", only_version="9")


def test_cross_version_pairs_are_flagged(tmp_path, toy):
    rows, _ = toy
    rows = [dict(r) for r in rows]
    for r in rows:
        if r["policy"] == "random" and r["seed"] == 0:
            r["version"] = "0.0.9"
    _, html, warned = _build(write_rows(tmp_path / "r.jsonl", rows), tmp_path / "out")
    assert any("1 of 3 paired seeds compare rows written by different" in w for w in warned)
    assert "⚠ 1 cross-version" in html


def test_competitor_missing_for_some_seeds(tmp_path, toy):
    rows, _ = toy
    kept = [r for r in rows if not (r["policy"] == "random" and r["seed"] == 2)]
    path = write_rows(tmp_path / "r.jsonl", kept)
    result, html, warned = _build(path, tmp_path / "out")
    gains = result.worlds[0].gains
    assert {g["n"] for g in gains} == {2}
    expected = paired_gains([r for r in kept if r["kind"] == "policy"], "random")
    assert [g["change_mean"] for g in gains] == [g["change_mean"] for g in expected]
    note = "use only the 2 seeds both sides have (3 seeds for the policy, 2 for 'random')"
    assert any(note in w for w in warned) and escape(note) in html
    assert "(policy 3, random 2)" in html


def test_competitor_absent_names_it_and_the_policies(tmp_path, toy):
    rows, _ = toy
    path = write_rows(tmp_path / "r.jsonl", rows)
    with pytest.raises(SpecError) as info:
        build_report(path, tmp_path / "out", competitor="coduel:gate=off")
    message = str(info.value)
    assert "competitor 'coduel:gate=off' has no rows" in message
    assert "notransfer, pooled, random" in message


def test_competitor_may_be_a_reference(tmp_path, toy):
    rows, _ = toy
    data = load_input(write_rows(tmp_path / "r.jsonl", rows), always=["ref:random"])
    reports, _ = compute_report(data, competitor="ref:random")
    assert {g["policy"] for g in reports[0].gains} == {"random", "notransfer", "pooled"}


def test_competitor_with_zero_excess_is_explained(tmp_path, toy):
    rows, _ = toy
    data = load_input(write_rows(tmp_path / "r.jsonl", rows), always=["ref:floor"])
    reports, notes = compute_report(data, competitor="ref:floor")
    assert reports[0].gains == []
    assert any("'ref:floor' has excess regret <= 0 on seed(s) 0, 1, 2" in n for n in notes)


def test_filters_that_match_nothing(tmp_path, toy):
    rows, _ = toy
    path = write_rows(tmp_path / "r.jsonl", rows)
    with pytest.raises(SpecError, match=r"--worlds: no rows for 'dev'; worlds in the results"):
        build_report(path, tmp_path / "out", worlds="dev")
    with pytest.raises(SpecError, match=r"--policies: no rows for 'coduel'; policies in .*pooled"):
        build_report(path, tmp_path / "out", policies="pooled,coduel")


def test_policy_filter_keeps_the_competitor_for_the_gains(tmp_path, toy):
    rows, _ = toy
    path = write_rows(tmp_path / "r.jsonl", rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build_report(path, tmp_path / "out", policies="pooled", figures=False)
    assert caught == []
    report = result.worlds[0]
    assert report.policies == ["pooled"]
    assert [g["policy"] for g in report.gains] == ["pooled"]
    assert "random" not in {e["policy"] for e in report.leaderboard}
    assert len([e for e in report.leaderboard if e["kind"] == "reference"]) == 9


def test_bad_window(tmp_path, toy):
    rows, _ = toy
    data = load_input(write_rows(tmp_path / "r.jsonl", rows))
    with pytest.raises(SpecError, match="--window must be a positive"):
        compute_report(data, window=0)


def test_missing_matplotlib_says_what_to_install(monkeypatch):
    """Drawing a figure without matplotlib names the extra; `build_report` then writes the
    tables without figures (tests/report/test_report_without_matplotlib.py)."""
    from prefduel.report.figures import require_matplotlib

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(
        MissingDependencyError, match=re.escape('pip install "prefduel[report]"')
    ):
        require_matplotlib()


def test_locked_roster_needs_allow_test_for_profiles(tmp_path):
    n = roster_size("test-profiles")
    rows = synthetic_rows("test-profiles", [0, 1], {"random": 0.3, "mine": 0.2}, n)
    path = write_rows(tmp_path / "r.jsonl", rows)
    _, html, warned = _build(path, tmp_path / "out")
    assert any("roster 'test-profiles' is a locked held-out roster" in w for w in warned)
    assert "no per-profile breakdown for test-profiles" in html
    assert "Leaderboard" in html and "mine" in html
    # with allow_test: the 8 held-out profiles, from the cheap students tables
    reports, _ = compute_report(load_input(path), allow_test=True)
    table = reports[0].profiles
    assert table.grouping == "profile" and len(table.groups) == 8
    assert table.entries[(table.groups[0], "mine")]["arrivals"] > 0


def test_template_roster_is_broken_down_by_trait(tmp_path):
    n = roster_size("test-quirky")
    rows = synthetic_rows("test-quirky", [3], {"random": 0.3, "mine": 0.2}, n)
    data = load_input(write_rows(tmp_path / "r.jsonl", rows))
    reports, _ = compute_report(data, allow_test=True)
    table = reports[0].profiles
    assert table.grouping == "trait"
    assert table.groups[0] == "length: very_brief"
    assert any(g.startswith("quirk: ") for g in table.groups)
    length = [g for g in table.groups if g.startswith("length: ")]
    assert sum(table.entries[(g, "mine")]["arrivals"] for g in length) == n


def test_unknown_world_name_skips_the_profiles(tmp_path):
    rows = synthetic_rows("no-such-world", [0, 1], {"random": 0.3, "mine": 0.2}, 30)
    data = load_input(write_rows(tmp_path / "r.jsonl", rows))
    reports, _ = compute_report(data)
    assert reports[0].profiles is None
    assert any("neither a roster id nor a stored world" in n for n in reports[0].notes)


def test_out_must_be_a_directory(tmp_path, toy):
    rows, _ = toy
    path = write_rows(tmp_path / "r.jsonl", rows)
    with pytest.raises(SpecError, match=r"report folder .*r\.jsonl is an existing file"):
        build_report(path, path)


def test_stored_world_that_moved_skips_the_profiles(tmp_path, toy):
    rows, _ = toy
    moved = [{**r, "world": str(tmp_path / "gone" / "world")} for r in rows]
    data = load_input(write_rows(tmp_path / "r.jsonl", moved))
    reports, _ = compute_report(data)
    assert reports[0].profiles is None
    note = " ".join(reports[0].notes)
    assert "no per-profile breakdown for" in note and "missing file world.json" in note
    assert reports[0].curves and reports[0].gains  # the rest of the report is unaffected


def test_rows_longer_than_the_roster_skip_the_profiles(tmp_path):
    rows = synthetic_rows("dev", [0], {"random": 0.3, "mine": 0.2}, roster_size("dev") + 5)
    reports, _ = compute_report(load_input(write_rows(tmp_path / "r.jsonl", rows)))
    assert reports[0].profiles is None
    assert any(
        "rows have 305 arrivals but the world of seed 0 has 300" in n for n in reports[0].notes
    )
