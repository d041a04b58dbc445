"""The JSONL results store: appends, duplicates, crash repair, corrupt files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pb_rows import make_row as _row
from prefduel.core.errors import ResultsFileError
from prefduel.runner.store import ResultsFileWarning, ResultsStore


def _write(path: Path, rows: list[dict]) -> bytes:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    path.write_bytes(data)
    return data


def test_append_roundtrip_and_no_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.jsonl"
    store = ResultsStore(path)
    assert store.rows() == [] and not path.exists()
    assert store.append(_row("a")) is True
    assert store.append(_row("b")) is True
    assert store.append(_row("a", score=2.0)) is False  # same key: not written again
    assert len(path.read_text().splitlines()) == 2
    reread = ResultsStore(path)
    assert reread.rows() == [_row("a"), _row("b")]
    assert ("policy", "w", 0, "a") in reread
    assert reread.append(_row("a")) is False
    assert len(path.read_text().splitlines()) == 2


def test_truncated_last_line_is_cut_with_warning(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    good = _write(path, [_row("a"), _row("b")])
    partial = json.dumps(_row("c")).encode()[:17]
    path.write_bytes(good + partial)
    with pytest.warns(ResultsFileWarning, match="last line is incomplete"):
        store = ResultsStore(path)
    assert [r["policy"] for r in store.rows()] == ["a", "b"]
    assert path.read_bytes() == good  # truncated back to the last complete newline
    store.append(_row("c"))
    assert [r["policy"] for r in ResultsStore(path).rows()] == ["a", "b", "c"]


def test_corrupt_last_complete_line_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    good = _write(path, [_row("a")])
    path.write_bytes(good + b"\x00\x00garbage\n")
    with pytest.warns(ResultsFileWarning):
        store = ResultsStore(path)
    assert len(store) == 1
    assert path.read_bytes() == good


def test_read_only_does_not_modify(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    data = _write(path, [_row("a")]) + b'{"kind": "pol'
    path.write_bytes(data)
    with pytest.warns(ResultsFileWarning, match="ignoring"):
        store = ResultsStore(path, repair=False)
    assert len(store) == 1
    assert path.read_bytes() == data


def test_corrupt_middle_line_raises_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    lines = [json.dumps(_row("a")), '{"kind": "policy", "world": "w"', json.dumps(_row("b"))]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ResultsFileError, match=r"results\.jsonl, line 2"):
        ResultsStore(path)
    assert path.read_text().count("\n") == 3  # untouched


def test_row_without_key_fields_raises(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"kind": "policy", "world": "w", "seed": 0}) + "\n" + "\n")
    with pytest.raises(ResultsFileError, match="line 1: missing field"):
        ResultsStore(path)
    with pytest.raises(ResultsFileError, match="missing field"):
        ResultsStore(tmp_path / "other.jsonl").append({"kind": "policy"})


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(_row("a")) + "\n\n" + json.dumps(_row("b")) + "\n")
    assert [r["policy"] for r in ResultsStore(path).rows()] == ["a", "b"]


def test_only_the_coordinating_process_appends(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results.jsonl")
    store._owner_pid = -1  # pretend the store was opened by another process
    with pytest.raises(RuntimeError, match="coordinating process"):
        store.append(_row("a"))


# -- rows whose numbers are wrong are refused on read, naming the line ------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"score": float("nan")}, r"field 'score' is nan"),
        ({"score": "48.2"}, r"field 'score' is '48.2', not a number"),
        ({"score": 12345.0}, r"score 12345.0 disagrees with its regrets, which give 1.0000"),
        ({"kind": "oracle"}, r"kind must be one of"),
        ({"excess_per_arrival": [None] * 4}, r"field 'excess_per_arrival' holds values"),
        ({"excess_per_arrival": [1.0] * 4}, r"excess_per_arrival sums to 4"),
        ({"excess": 3.0}, r"excess 3.0 is not R - G"),
        ({"R_rand": 5.0}, r"R_rand \(5.0\) is not above the floor"),
    ],
)
def test_a_row_with_impossible_numbers_is_refused_naming_its_line(tmp_path, change, message):
    path = tmp_path / "results.jsonl"
    _write(path, [_row("a"), {**_row("b"), **change}, _row("c")])
    for repair in (True, False):
        with pytest.raises(ResultsFileError, match=r"results\.jsonl, line 2: " + message):
            ResultsStore(path, repair=repair)


def test_a_curve_of_another_length_than_its_world_is_refused(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path, [_row("a"), _row("b", arrivals=5), _row("c", world="other", arrivals=5)])
    with pytest.raises(ResultsFileError, match=r"line 2: curves of 5 arrivals x 3 rounds.*line 1"):
        ResultsStore(path)


def test_appending_an_impossible_row_is_refused(tmp_path):
    store = ResultsStore(tmp_path / "results.jsonl")
    with pytest.raises(ResultsFileError, match="score"):
        store.append({**_row("a"), "score": float("nan")})
    assert len(store) == 0 and not (tmp_path / "results.jsonl").exists()


def test_a_deeply_nested_line_is_a_damaged_line_not_a_crash(tmp_path):
    path = tmp_path / "results.jsonl"
    deep = b"[" * 200_000 + b"]" * 200_000 + b"\n"
    good = _write(path, [_row("a")])
    path.write_bytes(good + deep + json.dumps(_row("b")).encode() + b"\n")
    with pytest.raises(ResultsFileError, match="line 2: not a valid JSON row"):
        ResultsStore(path)
    path.write_bytes(good + deep)
    with pytest.warns(ResultsFileWarning):
        assert len(ResultsStore(path)) == 1
    assert path.read_bytes() == good


# -- paths that are not results files ----------------------------------------------------------


@pytest.mark.parametrize("lock", [True, False])
def test_a_device_is_refused_without_reading_it(lock):
    with pytest.raises(ResultsFileError, match="not a regular file"):
        ResultsStore("/dev/zero", lock=lock)


def test_a_fifo_is_refused_instead_of_blocking(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ResultsFileError, match="not a regular file"):
        ResultsStore(fifo, lock=True)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ResultsFileError, match="is a directory"):
        ResultsStore(tmp_path)


def test_a_file_deleted_under_a_writer_is_still_locked(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultsStore(path, lock=True) as store:
        store.append(_row("a"))
        path.unlink()  # the user deletes the file while the run holds it
        with pytest.raises(ResultsFileError, match="being written by another prefduel process"):
            ResultsStore(path, lock=True)
    with ResultsStore(path, lock=True):  # released with the first writer
        pass


def test_a_second_row_for_a_key_with_other_numbers_is_refused(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path, [_row("a", score=1.0), _row("b"), _row("a", score=2.0)])
    with pytest.raises(ResultsFileError, match=r"line 3: a second row for .* other numbers than"):
        ResultsStore(path)


def test_an_identical_duplicate_row_is_counted_once_with_a_warning(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path, [_row("a"), _row("b"), {**_row("a"), "wall_time": 9.0}])
    with pytest.warns(ResultsFileWarning, match=r"line 3: duplicate row .* counted once"):
        assert len(ResultsStore(path)) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seed": -1}, "seed must be an integer from 0 to 2\\*\\*32 - 1"),
        ({"seed": 2**40}, "seed must be an integer from 0 to 2\\*\\*32 - 1"),
        ({"world": ""}, "kind, world and policy must be non-empty strings"),
        ({"version": 3}, "field 'version' is 3, not a version string"),
        ({"R_rand": 1e308}, "score .* disagrees with its regrets"),
    ],
)
def test_keys_and_versions_out_of_range_are_refused(tmp_path, change, message):
    path = tmp_path / "results.jsonl"
    _write(path, [{**_row("a"), **change}, _row("b")])
    with pytest.raises(ResultsFileError, match="line 1: " + message):
        ResultsStore(path)
