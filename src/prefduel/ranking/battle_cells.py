"""The type of each cell of a battle log, checked before anything is counted.

JSON, JSONL and Parquet cells can hold any value: a list where a model name belongs, ``true``
as a user id, ``Infinity`` as a timestamp, an object as a prompt. Each read column accepts:

- model names, user ids and winner labels: text, or a whole number (written as its digits,
  so ``7`` and ``7.0`` are the same id); model names and user ids are one line of printable
  text of at most `MAX_NAME_CHARS` characters (`check_name`);
- timestamps: finite numbers or dates (`time_seconds`);
- prompts: text, a whole number, or a conversation (`prompt_text`).

A missing value (empty, null, NaN) is missing, and the row rules count it. Any other value is
a `BattleFormatError` naming the column, the data row and what the cell holds (shortened).
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any

import numpy as np

from prefduel.ranking import _deps
from prefduel.ranking.errors import BattleFormatError

#: Longest model name or user id: beyond that a cell is a pasted text, not a name (and would
#: flood the terminal and every table of the report).
MAX_NAME_CHARS = 500
#: Whole numbers up to this size are exact in a float column (pandas turns an integer column
#: with a missing value into floats).
_EXACT_FLOAT = 2.0**53
_SHOWN = 60
#: C0 and C1 control characters: line breaks, tabs, terminal escape sequences.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def shown(value: Any) -> str:
    """``repr(value)``, cut to a readable length for a message."""
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text):,} characters)"


class CellError(ValueError):
    """A cell that cannot be what its column holds; ``what`` says what it is instead."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def cell_error(source: str, column: str, row: int, what: str) -> BattleFormatError:
    """The error for data row ``row`` (0-based) of ``column``."""
    return BattleFormatError(f"{source}: column {column!r}, data row {row + 1}: {what}")


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    pd = _deps.pandas()
    return value is pd.NA or value is pd.NaT


def _number_text(value: Any) -> str:
    """A whole number's digits; `CellError` for true/false, infinities and fractions."""
    if isinstance(value, bool | np.bool_):
        raise CellError(f"a true/false value ({value}), expected text")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    number = float(value)
    if math.isinf(number):
        raise CellError(f"{number} is infinite, expected text or a whole number")
    if number != int(number) or abs(number) > _EXACT_FLOAT:
        raise CellError(
            f"the number {number!r} is not a whole number of at most 2**53, expected text "
            "or a whole-number id"
        )
    return str(int(number))


def _kind(value: Any) -> str:
    """What a value of a type no cell may hold is, for a message."""
    if isinstance(value, list | tuple | np.ndarray):
        return f"a list ({shown(value if not isinstance(value, np.ndarray) else value.tolist())})"
    if isinstance(value, dict):
        return f"an object ({shown(value)})"
    return f"a value of type {type(value).__name__} ({shown(value)})"


def name_value(value: Any) -> str | bytes | None:
    """A name, label or id cell as text (bytes are decoded later, and the text checked by
    `check_name`), ``None`` when missing.

    Raises:
        CellError: a value of another type.
    """
    if isinstance(value, str | bytes | bytearray):
        return value if isinstance(value, str) else bytes(value)
    if _is_missing(value):
        return None
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        return _number_text(value)
    raise CellError(f"{_kind(value)}, expected text")


def check_name(text: str) -> None:
    """Refuse a model name or user id that is not one short line of printable text.

    Raises:
        CellError: more than `MAX_NAME_CHARS` characters, or a control character (a line
            break, a tab, a terminal escape sequence).
    """
    if len(text) > MAX_NAME_CHARS:
        raise CellError(
            f"{shown(text)} is longer than {MAX_NAME_CHARS} characters; a name or id is at "
            "most that long"
        )
    bad = _CONTROL.search(text)
    if bad:
        raise CellError(
            f"{shown(text)} holds the control character U+{ord(bad.group()):04X}; a name or "
            "id is one line of printable text"
        )


def name_column(column: Any, name: str, source: str) -> Any:
    """``column`` with every cell a name (`name_value`): the column itself when it holds only
    text, else an object array.

    Raises:
        BattleFormatError: naming the column and the first data row whose cell is not a name.
    """
    pd = _deps.pandas()
    if not isinstance(column, pd.Series):
        column = np.asarray(column, dtype=object)
    if pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty"):
        return column  # the usual case, checked without a loop over the rows
    values = column.tolist()
    out = np.empty(len(values), dtype=object)
    for row, value in enumerate(values):
        try:
            out[row] = name_value(value)
        except CellError as exc:
            raise cell_error(source, name, row, exc.what) from None
    return out


def time_seconds(value: Any) -> float | str | None:
    """A timestamp cell as seconds, or as text to parse as a date; ``None`` when missing.

    Raises:
        CellError: true/false, infinities, lists, objects and other types.
    """
    if isinstance(value, str):
        return value if value.strip() else None
    if _is_missing(value):
        return None
    if isinstance(value, bool | np.bool_):
        raise CellError(f"a true/false value ({value}), expected a number or a date")
    if isinstance(value, numbers.Real):
        try:
            number = float(value)
        except OverflowError:  # a whole number beyond any float
            raise CellError(f"{shown(value)} is too large, expected a number of seconds") from None
        if math.isinf(number):
            raise CellError(f"{number} is infinite, expected a finite number or a date")
        return number
    pd = _deps.pandas()
    if isinstance(value, pd.Timestamp | np.datetime64):
        stamp = pd.Timestamp(value)
        stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp
        return (stamp - pd.Timestamp("1970-01-01", tz="UTC")) / pd.Timedelta(seconds=1)
    raise CellError(f"{_kind(value)}, expected a number or a date")


def prompt_text(value: Any) -> str | bytes | None:
    """A prompt cell as text: plain text, a whole number, or the first user turn of an Arena
    conversation (a list of ``{"role", "content"}`` turns, or of texts whose first is the
    user's; or its JSON text); ``None`` when missing or empty.

    Text that is not a conversation in JSON is the prompt as it is (``"[1, 2]"`` is text).

    Raises:
        CellError: an object, a list that is not a conversation, a turn whose content is not
            text, or a value of another type.
    """
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped.startswith("["):
            try:
                turns = json.loads(stripped)
            except (json.JSONDecodeError, RecursionError):
                return value
            if _is_conversation(turns):
                return _first_user_turn(turns)
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        if not value:
            return None
        if not _is_conversation(value):
            raise CellError(
                f"{_kind(value)} that is not a conversation (a list of "
                '{"role", "content"} turns, or of texts)'
            )
        return _first_user_turn(list(value))
    if _is_missing(value):
        return None
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        return _number_text(value)
    raise CellError(f"{_kind(value)}, expected text or a conversation")


def _is_conversation(value: Any) -> bool:
    """A non-empty list of turns: all ``{"role", "content"}`` objects, or all texts."""
    return (
        isinstance(value, list | tuple)
        and len(value) > 0
        and (all(isinstance(t, dict) for t in value) or all(isinstance(t, str) for t in value))
    )


def _first_user_turn(turns: list[Any]) -> str | None:
    """The content of the first user turn (else of the first turn), as text; in a list of
    texts, the first."""
    if isinstance(turns[0], str):
        return turns[0]
    turn = next(
        (t for t in turns if str(t.get("role", "")).lower() in ("user", "human")), turns[0]
    )
    return content_text(turn.get("content"))


def content_text(content: Any) -> str | None:
    """A turn's content as text: text, or a list of parts whose text parts are joined.

    Raises:
        CellError: content of another type (an object, a number).
    """
    if isinstance(content, np.ndarray):
        content = content.tolist()
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text":
                text = part.get("text", "")
                if not isinstance(text, str):
                    raise CellError(f"a text part of a turn's content is {_kind(text)}")
                parts.append(text)
        return "\n".join(x for x in parts if x)
    raise CellError(f"a turn's content is {_kind(content)}, expected text or a list of parts")


def take(column: Any, rows: np.ndarray) -> Any:
    """``column[rows]`` as a pandas Series (column: Series or array)."""
    pd = _deps.pandas()
    if isinstance(column, pd.Series):
        return column.iloc[rows].reset_index(drop=True)
    return pd.Series(np.asarray(column)[rows])


def column_times(values: Any, rows: np.ndarray, name: str, source: str) -> np.ndarray:
    """Timestamps in seconds of ``rows`` (NaN where missing), ``(len(rows),)``.

    Numbers are seconds as they are; text that is not a number is parsed as a date (seconds
    since 1970-01-01 UTC), and so are date cells of a Parquet file.

    Raises:
        BattleFormatError: naming the column and data row of a cell that is neither.
    """
    pd = _deps.pandas()
    raw = take(values, rows)
    kind = raw.dtype.kind
    if kind in "iuf":
        times = np.array(raw, dtype=float)
        bad = np.isinf(times)
    elif kind == "M":
        times = np.asarray(
            (pd.to_datetime(raw, utc=True) - pd.Timestamp("1970-01-01", tz="UTC"))
            / pd.Timedelta(seconds=1),
            dtype=float,
        )
        bad = np.zeros(times.shape, dtype=bool)
    else:
        times, bad = _cell_times(raw.tolist(), rows, name, source)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise cell_error(source, name, int(rows[first]), f"{times[first]} is infinite, "
                         "expected a finite number or a date")
    return times


def _cell_times(
    values: list[Any], rows: np.ndarray, name: str, source: str
) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of cells of any type (`time_seconds`), date texts parsed; no infinite value."""
    pd = _deps.pandas()
    times = np.full(len(values), np.nan)
    texts: dict[int, str] = {}
    for i, value in enumerate(values):
        try:
            cell = time_seconds(value)
        except CellError as exc:
            raise cell_error(source, name, int(rows[i]), exc.what) from None
        if isinstance(cell, str):
            texts[i] = cell
        elif cell is not None:
            times[i] = cell
    if texts:
        where = np.fromiter(texts, dtype=np.int64, count=len(texts))
        text = pd.Series(list(texts.values()), dtype=object)
        numeric = np.array(pd.to_numeric(text, errors="coerce"), dtype=float)
        dates = np.isnan(numeric)
        if dates.any():
            parsed = pd.to_datetime(text[dates], errors="coerce", utc=True, format="mixed")
            seconds = (parsed - pd.Timestamp("1970-01-01", tz="UTC")) / pd.Timedelta(seconds=1)
            numeric[dates] = np.asarray(seconds, dtype=float)
        still = np.isnan(numeric)
        if still.any():
            first = int(where[np.flatnonzero(still)[0]])
            raise cell_error(
                source, name, int(rows[first]), f"timestamp {shown(values[first])} is neither "
                "a number nor a date; fix it, or name another column with --time-col"
            )
        times[where] = numeric
    return times, np.isinf(times)


def column_prompts(
    values: Any, rows: np.ndarray, name: str, source: str, policy: str
) -> tuple[list[str | None], np.ndarray]:
    """The prompt texts of ``rows`` (`prompt_text`, stripped; ``None`` where missing or blank),
    and which had invalid UTF-8 bytes replaced, ``(len(rows),)``.

    Raises:
        BattleFormatError: a cell that is not a prompt, or undecodable bytes under
            ``policy == "error"``.
    """
    out: list[str | None] = []
    repaired = np.zeros(rows.size, dtype=bool)
    for i, value in enumerate(take(values, rows).tolist()):
        try:
            text = prompt_text(value)
        except CellError as exc:
            raise cell_error(source, name, int(rows[i]), exc.what) from None
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                if policy == "error":
                    raise cell_error(
                        source, name, int(rows[i]), "the prompt is not valid UTF-8; pass "
                        "--encoding-errors replace"
                    ) from None
                text, repaired[i] = text.decode("utf-8", errors="replace"), True
        out.append((text.strip() or None) if text is not None else None)
    return out, repaired
