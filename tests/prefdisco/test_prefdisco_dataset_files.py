"""The dataset files (personas, tasks, preferences, rubrics, manifest): a line repeated exactly
is counted once with a warning, a second row with the same key and other content is refused
naming both lines, and a line that is not strict JSON is a named error naming file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pb_prefdisco_helpers import run_cli

from prefduel.prefdisco import load_dataset
from prefduel.prefdisco.errors import DatasetError, DatasetWarning, PrefDiscoError

#: File -> a field to alter for a conflicting duplicate (its key fields stay).
FILES = {
    "personas.jsonl": "age",
    "tasks.jsonl": "question",
    "preferences.jsonl": "seed",
    "rubrics.jsonl": "source",
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("dataset-files") / "data"
    status, _, err = run_cli(["generate", str(folder), "--personas", "3", "--limit", "2"])
    assert status == 0, err
    return folder


def _copy(dataset: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(dataset, target)
    return target


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_repeated_line_is_counted_once_with_a_warning(dataset, tmp_path, name):
    folder = _copy(dataset, tmp_path)
    lines = (folder / name).read_text().splitlines(keepends=True)
    (folder / name).write_text("".join([*lines, lines[0]]))
    with pytest.warns(DatasetWarning, match=rf"line {len(lines) + 1}: .*line 1; counted once"):
        loaded = load_dataset(folder)
    before = load_dataset(dataset)
    assert len(loaded.personas) == len(before.personas)
    assert len(loaded.tasks) == len(before.tasks)
    assert list(loaded.profiles) == list(before.profiles)
    assert len(loaded.rubrics) == len(before.rubrics)


@pytest.mark.parametrize(("name", "field"), sorted(FILES.items()))
def test_a_conflicting_row_is_refused_naming_both_lines(dataset, tmp_path, name, field):
    folder = _copy(dataset, tmp_path)
    lines = (folder / name).read_text().splitlines(keepends=True)
    row = json.loads(lines[0])
    row[field] = 7 if isinstance(row[field], int) else str(row[field]) + " (altered)"
    (folder / name).write_text("".join([*lines, json.dumps(row) + "\n"]))
    with pytest.raises(DatasetError) as info:
        load_dataset(folder)
    message = str(info.value)
    assert name in message and f"line {len(lines) + 1}" in message and "line 1" in message


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize(
    "text",
    [b'{"a": NaN}\n', b"[" * 100_000 + b"]" * 100_000 + b"\n", b'"\\ud800"\n', b"\xff\xfe{}\n"],
)
def test_a_line_that_is_not_strict_json_is_a_named_error(dataset, tmp_path, name, text):
    folder = _copy(dataset, tmp_path)
    lines = (folder / name).read_bytes().splitlines(keepends=True)
    (folder / name).write_bytes(b"".join([lines[0], text, *lines[1:]]))
    with pytest.raises(PrefDiscoError, match=rf"{name}, line 2"):
        load_dataset(folder)


@pytest.mark.parametrize("name", ["manifest.json", "personas.jsonl"])
def test_a_device_instead_of_a_file_is_a_named_error(dataset, tmp_path, name):
    folder = _copy(dataset, tmp_path)
    (folder / name).unlink()
    (folder / name).symlink_to("/dev/zero")
    with pytest.raises(DatasetError, match="not a regular file"):
        load_dataset(folder)


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("personas.jsonl", "expertise", "x"),
        ("personas.jsonl", "expertise", None),
        ("personas.jsonl", "age", -1),
        ("personas.jsonl", "backstory", [1, 2]),
        ("tasks.jsonl", "meta", "x"),
        ("tasks.jsonl", "options", [1, 2]),
    ],
)
def test_a_field_of_the_wrong_shape_is_a_named_error(dataset, tmp_path, name, field, value):
    folder = _copy(dataset, tmp_path)
    lines = (folder / name).read_text().splitlines(keepends=True)
    row = json.loads(lines[0])
    row[field] = value
    (folder / name).write_text("".join([json.dumps(row) + "\n", *lines[1:]]))
    with pytest.raises(PrefDiscoError, match=rf"{name}, line 1: .*{field}"):
        load_dataset(folder)
