"""The JSONL results store: appends, duplicates, crash repair, corrupt files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefduel.core.errors import ResultsFileError
from prefduel.runner.store import ResultsFileWarning, ResultsStore


def _row(policy: str, seed: int = 0, score: float = 1.0) -> dict:
    return {"kind": "policy", "world": "w", "seed": seed, "policy": policy, "score": score}


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
