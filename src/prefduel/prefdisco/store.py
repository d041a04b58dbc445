"""JSON Lines files: deterministic writes, crash-tolerant appends, and reads that name the line.

* `write_jsonl` writes a whole file atomically (temporary file + rename), one row per
  line as canonical JSON (sorted keys), so equal rows give byte-identical files.
* `JsonlAppender` appends rows one at a time and flushes each, for results that must
  survive a kill; a torn last line left by a crash is cut off when the file is opened again.
* `iter_jsonl` / `read_jsonl` read rows back as a stream, each line strictly (`parse_strict`:
  no NaN or Infinity, no field named twice with two values, no unpaired surrogate, bounded
  nesting and line length); a malformed line raises `DatasetError` naming file and line,
  except a torn last line (no newline at the end), which is left out with a warning when
  ``allow_torn_tail`` is set.
* `read_keyed_jsonl` reads a file whose rows have a key (an episode id, a persona id, ...): a
  row repeated exactly is counted once with a warning naming both lines; a second row with
  the same key and other content is an error naming both lines.
* `read_json` reads one document (manifest, run settings) as strictly, at most 64 MiB.
"""

from __future__ import annotations

import json
import os
import re
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from prefduel.prefdisco.errors import DatasetError, DatasetWarning

ErrorFactory = Callable[[str], Exception]
#: A longer line is not a row of any PrefDisco file (a transcript line is tens of kB).
MAX_LINE_BYTES = 64 * 2**20
#: A larger JSON document is not a manifest, run settings or interviewer prior.
MAX_JSON_BYTES = 64 * 2**20


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


def read_json(
    path: str | os.PathLike[str], *, what: str = "file", error: ErrorFactory = DatasetError
) -> Any:
    """Read one JSON document (a regular file of at most `MAX_JSON_BYTES`), strictly.

    Raises:
        DatasetError: Missing, not a regular file, too large, or not strict JSON (NaN,
            a field named twice with two values, nesting too deep); names the file and
            ``what`` it should be.
    """
    p = Path(path)
    _check_regular_file(p, what, error)
    try:
        with p.open("rb") as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    if len(data) > MAX_JSON_BYTES:
        raise error(f"{what} {p} is larger than {MAX_JSON_BYTES >> 20} MiB, which no {what} is")
    try:
        value, repeated = parse_strict(data)
    except ValueError as exc:
        raise error(f"{what} {p} is not readable JSON: {exc}") from None
    _warn_repeated(repeated, f"{what} {p}")
    return value


def iter_jsonl(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    allow_torn_tail: bool = False,
    error: ErrorFactory = DatasetError,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` of every row of a JSONL file, read as a stream (blank lines are
    skipped; each line is parsed strictly, see `parse_strict`).

    Args:
        path: The file.
        what: What the file holds, for messages (``"persona library"``, ...).
        allow_torn_tail: Leave out, with a warning, a last line that has no newline and is
            not valid JSON (what a killed writer leaves behind).
        error: Builds the exception to raise from a message.

    Raises:
        DatasetError: The file is missing or not a regular file, a line is longer than
            `MAX_LINE_BYTES`, or a line is not a strict JSON object (names file and line).
    """
    p = Path(path)
    _check_regular_file(p, what, error)
    try:
        handle = p.open("rb")
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    with handle:
        number = 0
        while True:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
            if not raw:
                return
            number += 1
            where = f"{what} {p}, line {number}"
            if len(raw) > MAX_LINE_BYTES:
                raise error(f"{where}: longer than {MAX_LINE_BYTES >> 20} MiB, which no row is")
            if not raw.strip():
                continue
            try:
                row, repeated = parse_strict(raw)
            except ValueError as exc:
                if allow_torn_tail and not raw.endswith(b"\n"):
                    warnings.warn(
                        f"{where}: the last line is incomplete (an interrupted run?); left out",
                        DatasetWarning,
                        stacklevel=2,
                    )
                    return
                raise error(f"{where}: not valid JSON ({exc})") from None
            if not isinstance(row, dict):
                raise error(f"{where}: expected a JSON object, got {type(row).__name__}")
            _warn_repeated(repeated, where)
            yield number, row


def read_jsonl(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    allow_torn_tail: bool = False,
    error: ErrorFactory = DatasetError,
) -> list[dict[str, Any]]:
    """Every row of a JSONL file (`iter_jsonl` without the line numbers)."""
    return [
        row
        for _, row in iter_jsonl(path, what=what, allow_torn_tail=allow_torn_tail, error=error)
    ]


def read_keyed_jsonl(
    path: str | os.PathLike[str],
    key: Sequence[str],
    *,
    what: str = "file",
    allow_torn_tail: bool = False,
    error: ErrorFactory = DatasetError,
) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` of the rows of a JSONL file whose rows are keyed by the string
    fields ``key``, each key once.

    A line that repeats an earlier row exactly is counted once, with a warning naming both
    lines; a second row with the same key and other content is an error naming both lines
    (one of them was altered or copied from elsewhere, and which one is right cannot be told).

    Raises:
        DatasetError: Everything `iter_jsonl` raises, a row without a key field (or one that
            is not a non-empty string), or a conflicting duplicate.
    """
    first: dict[tuple[str, ...], tuple[int, str]] = {}
    out = []
    for number, row in iter_jsonl(path, what=what, allow_torn_tail=allow_torn_tail, error=error):
        where = f"{what} {path}, line {number}"
        ident = tuple(_key_field(row, name, where, error) for name in key)
        text = dumps(row)
        if ident in first:
            line, seen = first[ident]
            label = "|".join(ident)
            if seen != text:
                raise error(
                    f"{where}: a second row for {label} with other content than line {line}; "
                    "one of them was altered or copied from elsewhere: remove the wrong one"
                )
            warnings.warn(
                f"{where}: the same row for {label} as line {line}; counted once",
                DatasetWarning,
                stacklevel=2,
            )
            continue
        first[ident] = (number, text)
        out.append((number, row))
    return out


def _key_field(row: Mapping[str, Any], name: str, where: str, error: ErrorFactory) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value:
        raise error(f"{where}: {name} must be a non-empty string, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    text = "missing" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_strict(data: bytes) -> tuple[Any, list[str]]:
    """Parse JSON text strictly: NaN and Infinity (which JSON does not have) are refused, a
    field named twice with two values is refused, deep nesting is refused.

    Returns:
        The value, and the names of fields given twice with the same value.

    Raises:
        ValueError: Why the text is not strict JSON.
    """
    repeated: list[str] = []
    constants: list[_Constant] = []

    def constant(name: str) -> _Constant:
        constants.append(_Constant(name))
        return constants[-1]

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in items:
            if name in out:
                if dumps({"v": out[name]}) != dumps({"v": value}):
                    raise ValueError(f"field {name!r} is given twice, with two values")
                repeated.append(name)
            out[name] = value
        return out

    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=constant, object_pairs_hook=pairs)
        if constants:
            where = _path_of(value, constants[0]) or "the value"
            raise ValueError(f"{where}: {constants[0].name} is not a number JSON allows")
        if _SURROGATE.search(text):  # rare: only then walk the value
            _check_text(value)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return value, repeated


class _Constant:
    """Where JSON text had NaN or Infinity (found again to name its field)."""

    def __init__(self, name: str) -> None:
        self.name = name


def _path_of(value: Any, target: _Constant) -> str | None:
    """The path of ``target`` inside ``value`` (``scores.style.tone``, ``[0].q``)."""
    if value is target:
        return ""
    steps: Iterable[tuple[str, Any]] = ()
    if isinstance(value, dict):
        steps = ((str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        steps = ((f"[{i}]", v) for i, v in enumerate(value))
    for step, item in steps:
        inner = _path_of(item, target)
        if inner is not None:
            return step + ("." + inner if inner and not inner.startswith("[") else inner)
    return None


#: A ``\\u`` escape of a UTF-16 surrogate: JSON decodes an unpaired one into a string that
#: cannot be written back as UTF-8.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_text(value: Any) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds an unpaired UTF-16 surrogate escape") from None
    elif isinstance(value, dict):
        for name, item in value.items():
            _check_text(name)
            _check_text(item)
    elif isinstance(value, list):
        for item in value:
            _check_text(item)


def _warn_repeated(names: list[str], where: str) -> None:
    if names:
        warnings.warn(
            f"{where}: field {names[0]!r} is given twice with the same value; read once",
            DatasetWarning,
            stacklevel=3,
        )


def _check_regular_file(path: Path, what: str, error: ErrorFactory) -> None:
    """Refuse a folder, a device or a pipe: reading one may never end (``/dev/zero``)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{what} {path} is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise error(f"{what} {path} is not a regular file (a device or a pipe)")


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
