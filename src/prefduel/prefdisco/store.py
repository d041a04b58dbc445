"""JSON Lines files: deterministic writes, crash-tolerant appends, and reads that name the line.

* `write_jsonl` writes a whole file atomically (temporary file + rename), one row per
  line as canonical JSON (sorted keys), so equal rows give byte-identical files.
* `JsonlAppender` appends rows one at a time and flushes each, for results that must
  survive a kill; a torn last line left by a crash is cut off when the file is opened again.
* `read_jsonl` reads rows back; a malformed line raises
  `DatasetError` naming file and line, except a torn
  last line (no newline at the end), which is skipped when ``allow_torn_tail`` is set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from prefduel.prefdisco.errors import DatasetError


def dumps(row: Mapping[str, Any]) -> str:
    """Canonical one-line JSON of a row (sorted keys, UTF-8 kept, NaN refused)."""
    return json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False)


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]]) -> int:
    """Write ``rows`` to ``path`` atomically; return the number of rows.

    Raises:
        DatasetError: The file cannot be written.
    """
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    count = 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(dumps(row) + "\n")
                count += 1
        os.replace(tmp, target)
    except OSError as exc:
        raise DatasetError(f"cannot write {target}: {exc.strerror or exc}") from None
    return count


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write one JSON document atomically (indented, sorted keys, trailing newline)."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(
            json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n",
            encoding="utf-8",
        )
        os.replace(tmp, target)
    except OSError as exc:
        raise DatasetError(f"cannot write {target}: {exc.strerror or exc}") from None


def read_json(path: str | os.PathLike[str], *, what: str = "file") -> Any:
    """Read one JSON document.

    Raises:
        DatasetError: Missing or not JSON (names the file and ``what`` it should be).
    """
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{what} {p} does not exist") from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{what} {p} is not readable JSON: {exc}") from None


def read_jsonl(
    path: str | os.PathLike[str], *, what: str = "file", allow_torn_tail: bool = False
) -> list[dict[str, Any]]:
    """Read every row of a JSONL file (blank lines are skipped).

    Args:
        path: The file.
        what: What the file holds, for messages (``"persona library"``, ...).
        allow_torn_tail: Skip a last line that has no newline and is not valid JSON (what a
            killed writer leaves behind).

    Raises:
        DatasetError: The file is missing, or a line is not a JSON object (names file and line).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{what} {p} does not exist") from None
    except OSError as exc:
        raise DatasetError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    rows = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines)
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            if last and allow_torn_tail:
                break
            raise DatasetError(f"{what} {p}, line {number}: not valid JSON ({exc})") from None
        if not isinstance(row, dict):
            raise DatasetError(
                f"{what} {p}, line {number}: expected a JSON object, got {type(row).__name__}"
            )
        rows.append(row)
    return rows


class JsonlAppender:
    """Append rows to a JSONL file, one flushed line each (a kill loses at most a torn line).

    Opening repairs a torn tail: bytes after the last newline are cut off.

    Args:
        path: The file (created with its folder).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                _cut_torn_tail(self.path)
            self._fh = self.path.open("a", encoding="utf-8", newline="\n")
        except OSError as exc:
            raise DatasetError(f"cannot open {self.path}: {exc.strerror or exc}") from None

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one row and flush it to the operating system."""
        self._fh.write(dumps(row) + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(keep)
