"""Reading battle files (CSV, JSON, JSONL, Parquet) into a table, and writing them back.

The table is validated by `prefduel.ranking.battle_validation`; the public entry points
(`read_battles`, `write_battles`) live in `prefduel.ranking.battles`.
"""

from __future__ import annotations

import csv
import io
import json
import stat
from pathlib import Path
from typing import Any

from prefduel.core.csvcells import spreadsheet_safe
from prefduel.ranking import _deps
from prefduel.ranking.battle_schema import FORMATS
from prefduel.ranking.errors import BattleFormatError

#: The most columns a battle table may have (Arena's logs have about 15): a file of a million
#: columns is tens of megabytes, and the table pandas would build of it does not fit in memory.
MAX_COLUMNS = 1_000

#: File suffixes and the format each means.
SUFFIX_FORMATS = {
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def check_regular_file(path: Path) -> None:
    """Refuse a battle file that is missing or not a regular file, without opening it: a
    device (``/dev/zero``) never ends, a pipe blocks, a folder has no rows.

    Raises:
        BattleFormatError: naming the path and what it is.
    """
    try:
        mode = path.stat().st_mode  # follows symbolic links: a link to a device is a device
    except FileNotFoundError:
        raise BattleFormatError(f"battle file {path} does not exist") from None
    except OSError as exc:
        raise BattleFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return
    kind = (
        "a folder" if stat.S_ISDIR(mode)
        else "a pipe" if stat.S_ISFIFO(mode)
        else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket" if stat.S_ISSOCK(mode)
        else "not a file"
    )
    raise BattleFormatError(
        f"battle file {path} is not a regular file ({kind}); give a .csv, .json, .jsonl or "
        ".parquet file"
    )


def format_of(path: Path, fmt: str | None) -> str:
    """The format of ``path``: ``fmt`` when given (checked against `FORMATS`), else its suffix.

    Raises:
        BattleFormatError: an unknown ``fmt``, or a suffix that names no format.
    """
    if fmt is not None:
        if fmt not in FORMATS:
            raise BattleFormatError(f"format must be one of {FORMATS}, got {fmt!r}")
        return fmt
    suffix = path.suffix.lower()
    if suffix not in SUFFIX_FORMATS:
        raise BattleFormatError(
            f"{path}: cannot tell the format from the suffix {suffix or '(none)'!r}; expected "
            f".csv, .json, .jsonl/.ndjson or .parquet, or pass the format explicitly (--format)"
        )
    return SUFFIX_FORMATS[suffix]


def read_frame(path: Path, fmt: str, policy: str, counts: dict[str, int]) -> Any:
    """The file as a pandas DataFrame, ``n_rows`` rows (not validated yet).

    Args:
        path: The battle file.
        fmt: One of `FORMATS`.
        policy: Invalid UTF-8 in a text file: ``"error"``, ``"replace"`` or ``"skip"``.
        counts: Receives the lines skipped (``non_utf8``) or repaired (``non_utf8_repaired``).

    Raises:
        BattleFormatError: unreadable file, bad JSON, or bad UTF-8 under ``"error"``.
    """
    if fmt == "parquet":
        return _read_parquet(path)
    text = _read_text(path, policy, line_based=fmt in ("csv", "jsonl"), counts=counts)
    if fmt == "csv":
        return _read_csv(path, text)
    if fmt == "json":
        return _read_json(path, text)
    return _read_jsonl(path, text)


def _check_width(path: Path, n_columns: int, where: str = "") -> None:
    """Refuse a table of more than `MAX_COLUMNS` columns before it is built."""
    if n_columns > MAX_COLUMNS:
        raise BattleFormatError(
            f"{path}: {n_columns:,} columns{where}; a battle table has at most "
            f"{MAX_COLUMNS:,} (is this a vote log?)"
        )


def _read_parquet(path: Path) -> Any:
    pd = _deps.pandas()
    _deps.require("pyarrow", "reading Parquet battle files")
    import pyarrow.parquet as pq

    try:
        _check_width(path, len(pq.read_schema(path).names))
        return pd.read_parquet(path)
    except BattleFormatError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types
        raise BattleFormatError(f"{path}: not a readable Parquet file: {exc}") from None


def _read_csv(path: Path, text: str) -> Any:
    pd = _deps.pandas()
    try:
        header = next(csv.reader(io.StringIO(text)), [])
    except csv.Error:  # a header field beyond the csv module's limit: pandas says what is wrong
        header = []
    _check_width(path, len(header), " in the header")
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise BattleFormatError(f"{path}: not a readable CSV file: {exc}") from None


def _loads(text: str) -> Any:
    """``json.loads``, with nesting too deep to parse and numbers too long to convert raised as
    `json.JSONDecodeError` like any other malformed JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("values nest too deeply to read", text, 0) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        if isinstance(exc, json.JSONDecodeError):
            raise
        raise json.JSONDecodeError(str(exc), text, 0) from None


def _read_json(path: Path, text: str) -> Any:
    """A JSON list of records, an object whose ``battles`` is one, or an object of columns."""
    pd = _deps.pandas()
    try:
        data = _loads(text)
    except json.JSONDecodeError as exc:
        raise BattleFormatError(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} "
            "(a .json file must hold one list of records; use .jsonl for one record per line)"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("battles"), list):
        data = data["battles"]
    if isinstance(data, dict):  # columns, as pandas' DataFrame.to_json() writes by default
        _check_width(path, len(data))
        try:
            return pd.DataFrame(data)
        except (ValueError, TypeError) as exc:
            raise BattleFormatError(f"{path}: cannot make a table of the JSON: {exc}") from None
    if not isinstance(data, list):
        raise BattleFormatError(
            f"{path}: expected a JSON list of records (objects), got {_json_kind(data)}"
        )
    keys: set[str] = set()
    for number, record in enumerate(data, start=1):
        if not isinstance(record, dict):
            raise BattleFormatError(
                f"{path}: record {number} of the list is {_json_kind(record)}, expected an "
                "object"
            )
        keys.update(record)
        _check_width(path, len(keys), f" by record {number}")
    try:
        return pd.DataFrame.from_records(data) if data else pd.DataFrame()
    except (ValueError, TypeError) as exc:
        raise BattleFormatError(f"{path}: cannot make a table of the JSON: {exc}") from None


def _json_kind(value: Any) -> str:
    """What a parsed JSON value is, in words (``a list``, ``a number``...)."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "true/false",
             type(None): "null"}
    return kinds.get(type(value), "a number")


def _read_jsonl(path: Path, text: str) -> Any:
    """One JSON object per line; blank lines are ignored."""
    pd = _deps.pandas()
    records = []
    keys: set[str] = set()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = _loads(line)
        except json.JSONDecodeError as exc:
            raise BattleFormatError(
                f"{path}: line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(record, dict):
            raise BattleFormatError(
                f"{path}: line {number} is {_json_kind(record)}, expected a JSON object"
            )
        keys.update(record)
        _check_width(path, len(keys), f" by line {number}")
        records.append(record)
    return pd.DataFrame.from_records(records)


def _read_text(path: Path, policy: str, *, line_based: bool, counts: dict[str, int]) -> str:
    """The file as text, applying the UTF-8 policy (bad lines counted in ``counts``)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BattleFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    lines = raw.split(b"\n")
    bad = []
    for number, line in enumerate(lines):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append(number)
            if policy == "error":
                raise BattleFormatError(
                    f"{path}: line {number + 1} is not valid UTF-8 (byte 0x{line[exc.start]:02x} "
                    f"at column {exc.start + 1}); re-encode the file as UTF-8, or pass "
                    "--encoding-errors replace (keep the rows, bad bytes become U+FFFD) or "
                    "--encoding-errors skip (drop those lines, counted)"
                ) from None
    if policy == "replace":
        counts["non_utf8_repaired"] = counts.get("non_utf8_repaired", 0) + len(bad)
        return raw.decode("utf-8-sig", errors="replace")
    if not line_based:
        raise BattleFormatError(
            f"{path}: {len(bad)} line(s) are not valid UTF-8 and a JSON document cannot lose "
            "lines; use --encoding-errors replace, or convert the file to JSONL"
        )
    if bad and bad[0] == 0 and path.suffix.lower() == ".csv":
        raise BattleFormatError(f"{path}: the CSV header line is not valid UTF-8")
    bad_set = set(bad)
    counts["non_utf8"] = counts.get("non_utf8", 0) + len(bad)
    kept = [line for i, line in enumerate(lines) if i not in bad_set]
    return b"\n".join(kept).decode("utf-8-sig")


def write_frame(frame: Any, path: Path, fmt: str) -> None:
    """Write a pandas DataFrame as ``fmt`` (one of `FORMATS`); see `write_battles`."""
    if fmt == "csv":
        _write_csv(frame, path)
    elif fmt == "json":
        path.write_text(frame.to_json(orient="records", force_ascii=False), encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text(
            frame.to_json(orient="records", lines=True, force_ascii=False), encoding="utf-8"
        )
    else:
        _deps.require("pyarrow", "writing Parquet")
        frame.to_parquet(path, index=False)


def _write_csv(frame: Any, path: Path) -> None:
    """CSV with list cells as JSON strings and formula-like text made `spreadsheet_safe`."""
    pd = _deps.pandas()
    out = frame.copy()
    types = pd.api.types
    for col in out.columns:
        column = out[col]
        if types.is_numeric_dtype(column) or types.is_datetime64_any_dtype(column):
            continue  # numbers stay numbers (negative ones included)
        column = column.astype(object)
        if column.map(lambda v: isinstance(v, list | dict)).any():
            column = column.map(lambda v: json.dumps(v, ensure_ascii=False))
        out[col] = column.map(spreadsheet_safe)
    header = [spreadsheet_safe(str(col)) for col in out.columns]
    out.to_csv(path, index=False, header=header)
