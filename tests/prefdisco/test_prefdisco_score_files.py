"""The score files ``prefdisco report`` reads: a duplicated line is counted once (with a
warning), a conflicting one is refused naming both lines, and every number is checked on read
(type, range, agreement with the rest of the row) with an error naming file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pb_prefdisco_helpers import run_cli


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """A finished offline study: 2 instances x 3 models x 3 conditions, scored."""
    root = tmp_path_factory.mktemp("score-files")
    folder = root / "study"
    args = ["--personas", "3", "--per-task", "1", "--limit", "2"]
    status, _, err = run_cli(["generate", str(folder), *args])
    assert status == 0, err
    status, _, err = run_cli(["run", str(folder), "--no-progress"])
    assert status == 0, err
    return folder


def _copy(study: Path, tmp_path: Path) -> Path:
    target = tmp_path / "study"
    shutil.copytree(study, target, ignore=shutil.ignore_patterns("report"))
    return target


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def _report(folder: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["report", str(folder), "--bootstrap", "50", *extra])


def _with_row(folder: Path, line: int, **fields) -> None:
    """Replace fields of line ``line`` (1-based) of the score file (values as JSON text)."""
    path = folder / "scores.jsonl"
    lines = _lines(path)
    row = json.loads(lines[line - 1])
    text = json.dumps(row)
    for name, value in fields.items():
        old = f'"{name}": {json.dumps(row[name])}'
        assert old in text, name
        text = text.replace(old, f'"{name}": {value}')
    lines[line - 1] = text + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def test_a_duplicated_line_is_counted_once_with_a_warning(study, tmp_path):
    status, before, err = _report(study)
    assert status == 0, err
    folder = _copy(study, tmp_path)
    lines = _lines(folder / "scores.jsonl")
    (folder / "scores.jsonl").write_text("".join([*lines, lines[0]]), encoding="utf-8")
    status, after, err = _report(folder)
    assert status == 0, err
    assert _numbers(after) == _numbers(before)
    assert f"line {len(lines) + 1}" in err and "line 1" in err and "counted once" in err


def _numbers(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if not line.startswith("wrote ")]


def test_a_conflicting_duplicate_is_refused_naming_both_lines(study, tmp_path):
    folder = _copy(study, tmp_path)
    lines = _lines(folder / "scores.jsonl")
    row = json.loads(lines[0])
    row["correct"] = not row["correct"]
    (folder / "scores.jsonl").write_text(
        "".join([*lines, json.dumps(row) + "\n"]), encoding="utf-8"
    )
    status, _, err = _report(folder)
    assert status == 2 and "Traceback" not in err
    assert "scores.jsonl" in err and "line 1" in err and f"line {len(lines) + 1}" in err
    assert row["episode_id"] in err


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"pref_align": "NaN"}, "NaN"),
        ({"pref_align": "Infinity"}, "Infinity"),
        ({"pref_align": '"x"'}, "pref_align"),
        ({"pref_align": "4.99"}, "pref_align"),
        ({"questions": '"2"'}, "questions"),
        ({"questions": "-1"}, "questions"),
        ({"recall": "2.5"}, "recall"),
        ({"correct": '"yes"'}, "correct"),
        ({"weights": "[1, 2]"}, "weights"),
        ({"stop": '"x"'}, "stop"),
        ({"judge_attempts": '{"a": 1}'}, "judge_attempts"),
        (
            {"usage": '{"calls": 1, "cost": 1e308, "prompt_tokens": 1, "completion_tokens": 1}'},
            "cost",
        ),
    ],
)
def test_bad_numbers_are_named_errors_naming_file_and_line(study, tmp_path, fields, fragment):
    folder = _copy(study, tmp_path)
    _with_row(folder, 2, **fields)
    status, _, err = _report(folder)
    assert status == 2, err
    assert "Traceback" not in err and "scores.jsonl, line 2" in err and fragment in err


@pytest.mark.parametrize("score", ["NaN", '"4"', "0", "6", "3.5", "true", "1000000"])
def test_a_judge_score_outside_the_rubric_range_is_refused(study, tmp_path, score):
    folder = _copy(study, tmp_path)
    path = folder / "scores.jsonl"
    lines = _lines(path)
    row = json.loads(lines[0])
    attribute = sorted(row["scores"])[0]
    old = f'"{attribute}": {row["scores"][attribute]}'
    text = lines[0].replace(old, f'"{attribute}": {score}', 1)
    assert text != lines[0]
    path.write_text("".join([text, *lines[1:]]), encoding="utf-8")
    status, _, err = _report(folder)
    assert status == 2 and "Traceback" not in err, err
    assert "scores.jsonl, line 1" in err and attribute in err


def test_a_field_named_twice_in_a_row_with_two_values_is_refused(study, tmp_path):
    folder = _copy(study, tmp_path)
    path = folder / "scores.jsonl"
    lines = _lines(path)
    lines[0] = lines[0].replace('{"accuracy_method"', '{"pref_align": 5.0, "accuracy_method"', 1)
    path.write_text("".join(lines), encoding="utf-8")
    status, _, err = _report(folder)
    assert status == 2 and "scores.jsonl, line 1" in err and "pref_align" in err, err


def test_rows_that_disagree_on_their_instance_are_refused(study, tmp_path):
    folder = _copy(study, tmp_path)
    rows = [json.loads(x) for x in _lines(folder / "scores.jsonl")]
    second = next(i for i, r in enumerate(rows) if r["condition"] == "discovery")
    assert rows[second]["source"] == rows[0]["source"]
    _with_row(folder, second + 1, source='"another-benchmark"')
    status, _, err = _report(folder)
    assert status == 2 and "scores.jsonl" in err and f"line {second + 1}" in err, err


def test_rows_of_other_settings_than_run_json_are_refused(study, tmp_path):
    folder = _copy(study, tmp_path)
    _with_row(folder, 3, settings='"0000000000000000"')
    status, _, err = _report(folder)
    assert status == 2 and "scores.jsonl, line 3" in err and "run.json" in err, err


@pytest.mark.parametrize(
    "damage",
    [
        lambda run: run.update(router_check=[1, 2]),
        lambda run: run["router_check"]["routers"]["keyword"].update(accuracy="x"),
        lambda run: run["router_check"]["routers"]["keyword"].update(accuracy=float("nan")),
        lambda run: run.update(settings="x"),
        lambda run: run["settings"].update(backends=[1]),
        lambda run: run["settings"].update(max_turns=4),  # no longer its digest
        lambda run: run.update(format="another/1"),
        lambda run: run["router_check"]["routers"]["keyword"].update(accuracy=0.0),
        lambda run: run["router_check"].update(chosen="llm"),
        lambda run: run["router_check"].update(questions=0),
    ],
)
def test_a_damaged_run_json_is_a_named_error(study, tmp_path, damage):
    folder = _copy(study, tmp_path)
    run = json.loads((folder / "run.json").read_text())
    damage(run)
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    status, _, err = _report(folder)
    assert status == 2 and "Traceback" not in err and "run.json" in err, err


def test_a_manifest_that_is_not_an_object_is_a_named_error(study, tmp_path):
    folder = _copy(study, tmp_path)
    (folder / "manifest.json").write_text("[1, 2]\n", encoding="utf-8")
    status, _, err = _report(folder)
    assert status == 2 and "Traceback" not in err and "manifest.json" in err, err


def test_a_torn_last_line_is_left_out_with_a_warning(study, tmp_path):
    folder = _copy(study, tmp_path)
    path = folder / "scores.jsonl"
    lines = _lines(path)
    path.write_text("".join([*lines, lines[0][:40]]), encoding="utf-8")
    status, out, err = _report(folder)
    assert status == 0, err
    assert "incomplete" in err and f"line {len(lines) + 1}" in err
    status, before, _ = _report(study)
    assert _numbers(out) == _numbers(before)
