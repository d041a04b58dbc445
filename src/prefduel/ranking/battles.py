"""Arena-format battle logs: schema, reading (CSV, JSON, JSONL, Parquet), validation.

A *battle* is one pairwise vote: a user saw the answers of ``model_a`` and ``model_b`` to a
prompt and picked a winner (or a tie). Chatbot Arena publishes its votes in this shape::

    model_a, model_b, winner ("model_a" | "model_b" | "tie" | "tie (bothbad)"), judge, tstamp,
    conversation_a (list of {"role", "content"} turns), ...

Real vote logs name things differently, so every column name and every winner label is a
setting of `BattleSchema`. Rows that cannot be used are never dropped silently: each is
either an error (with the row and the option that changes the outcome) or a counted skip listed
in `Battles.skips`; rows kept with a caveat are counted in `Battles.notes`. So are the schema's
row policies: user ids spelled as missing values (``NaN``, ``null``, ...), "both bad" votes
(counted as ties, or skipped) and models with fewer than ``min_model_battles`` battles.

This module holds the public entry points; the data types are in
`prefduel.ranking.battle_schema`, file reading and writing in `prefduel.ranking.battle_files`,
the checks in `prefduel.ranking.battle_validation` (all re-exported here) and the policies that
look beyond one row in `prefduel.ranking.battle_filters`.

References:
    Chiang et al. (2024), Chatbot Arena: An Open Platform for Evaluating LLMs by Human
    Preference. ICML.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.ranking import _deps
from prefduel.ranking.battle_files import (
    check_regular_file,
    format_of,
    read_frame,
    write_frame,
)
from prefduel.ranking.battle_schema import (
    BOTHBAD_POLICIES,
    ENCODING_POLICIES,
    FORMATS,
    MISSING_USER_TOKENS,
    NOTE_REASONS,
    SKIP_REASONS,
    TIE,
    WIN_A,
    WIN_B,
    Battles,
    BattleSchema,
    BothBadPolicy,
    EncodingPolicy,
)
from prefduel.ranking.battle_validation import check_columns, first_user_turn, validate_columns
from prefduel.ranking.errors import BattleFormatError

__all__ = [
    "BOTHBAD_POLICIES",
    "ENCODING_POLICIES",
    "FORMATS",
    "MISSING_USER_TOKENS",
    "NOTE_REASONS",
    "SKIP_REASONS",
    "TIE",
    "WIN_A",
    "WIN_B",
    "BattleSchema",
    "Battles",
    "BothBadPolicy",
    "EncodingPolicy",
    "battles_from_arrays",
    "battles_from_frame",
    "first_user_turn",
    "read_battles",
    "write_battles",
]


# -- public constructors ---------------------------------------------------------------------


def battles_from_frame(
    frame: Any,
    schema: BattleSchema | None = None,
    *,
    source: str = "<frame>",
    encoding_errors: EncodingPolicy = "error",
    counts: dict[str, int] | None = None,
) -> Battles:
    """Validate a table of battles (a pandas DataFrame, or a dict of equal-length columns).

    Args:
        frame: ``n_rows`` rows with at least the schema's model, winner and user columns.
        schema: Column names, winner labels and row policies (default: Arena's).
        source: Name used in messages (a path).
        encoding_errors: What to do with ``bytes`` values that are not UTF-8 (Parquet binary
            columns): ``"error"``, ``"replace"`` (kept, counted in notes) or ``"skip"``.
        counts: Skips and notes already counted while reading the file (merged in).

    Returns:
        The battles in time order (stable), with every skip and note counted.

    Raises:
        BattleFormatError: missing columns, unknown winner labels (unless
            ``schema.unknown_winner == "skip"``), unparsable timestamps, undecodable bytes
            (with ``encoding_errors="error"``), or no battle left.
    """
    pd = _deps.pandas()
    schema = schema or BattleSchema()
    if encoding_errors not in ENCODING_POLICIES:
        raise BattleFormatError(
            f"encoding_errors must be one of {ENCODING_POLICIES}, got {encoding_errors!r}"
        )
    if not isinstance(frame, pd.DataFrame):
        try:
            frame = pd.DataFrame(frame)
        except (ValueError, TypeError) as exc:
            raise BattleFormatError(
                f"{source}: cannot make a table of the battles: {exc}"
            ) from None
    time_col, prompt_col = check_columns(frame, schema, source)
    names = [schema.model_a, schema.model_b, schema.winner, schema.user, time_col, prompt_col]
    columns = {name: frame[name] for name in names if name is not None}
    return validate_columns(
        columns, len(frame), schema, time_col, prompt_col, source, encoding_errors, counts or {}
    )


def battles_from_arrays(
    model_a: Sequence[Any] | np.ndarray,
    model_b: Sequence[Any] | np.ndarray,
    winner: Sequence[Any] | np.ndarray,
    user: Sequence[Any] | np.ndarray | None = None,
    *,
    time: Sequence[float] | np.ndarray | None = None,
    prompt: Sequence[Any] | np.ndarray | None = None,
    schema: BattleSchema | None = None,
) -> Battles:
    """Battles from parallel arrays (``n`` entries each), validated like a file.

    Args:
        model_a: ``(n,)`` first model names.
        model_b: ``(n,)`` second model names.
        winner: ``(n,)`` winner labels of ``schema`` (default ``model_a``/``model_b``/``tie``).
        user: ``(n,)`` user ids; ``None`` puts every battle under one user ``"all"``.
        time: ``(n,)`` timestamps, optional.
        prompt: ``(n,)`` prompt texts or Arena conversations, optional.
        schema: Winner labels and row policies (its column names are ignored).

    Returns:
        The validated `Battles`.
    """
    base = schema or BattleSchema()
    n = len(model_a)
    columns: dict[str, Any] = {
        "model_a": np.asarray(model_a, dtype=object),
        "model_b": np.asarray(model_b, dtype=object),
        "winner": np.asarray(winner, dtype=object),
        "judge": None if user is None else np.asarray(user, dtype=object),
    }
    if time is not None:
        columns["tstamp"] = np.asarray(time, dtype=float)
    if prompt is not None:
        columns["prompt"] = np.asarray(prompt, dtype=object)
    for name, col in columns.items():
        if col is not None and col.shape != (n,):
            raise BattleFormatError(f"battles: {name} has shape {col.shape}, expected ({n},)")
    schema = dataclasses.replace(  # the labels and row policies of ``base``, our columns
        base,
        model_a="model_a",
        model_b="model_b",
        winner="winner",
        user="judge",
        time="tstamp" if time is not None else None,
        prompt="prompt" if prompt is not None else None,
    )
    time_col = "tstamp" if time is not None else None
    prompt_col = "prompt" if prompt is not None else None
    return validate_columns(columns, n, schema, time_col, prompt_col, "<arrays>", "error", {})


def read_battles(
    path: str | Path,
    schema: BattleSchema | None = None,
    *,
    fmt: str | None = None,
    encoding_errors: EncodingPolicy = "error",
) -> Battles:
    """Read and validate a battle log.

    Args:
        path: A ``.csv``, ``.json`` (a list of records), ``.jsonl``/``.ndjson`` (one record per
            line) or ``.parquet`` file.
        schema: Column names, winner labels and row policies (default: Arena's).
        fmt: Force a format (one of `FORMATS`) instead of the file suffix.
        encoding_errors: Invalid UTF-8 in a text file: ``"error"`` names the first bad line;
            ``"replace"`` keeps the rows with U+FFFD (counted in notes); ``"skip"`` drops the bad
            lines (CSV and JSONL only; counted in skips).

    Returns:
        The validated `Battles`.

    Raises:
        BattleFormatError: a missing file or one that is not a regular file (a device, a pipe,
            a folder: refused without reading), unreadable file, unknown format, bad JSON, bad
            UTF-8, or any error of `battles_from_frame`.
        MissingDependencyError: pandas (or pyarrow for Parquet) is not installed.
    """
    path = Path(path)
    if encoding_errors not in ENCODING_POLICIES:
        raise BattleFormatError(
            f"encoding_errors must be one of {ENCODING_POLICIES}, got {encoding_errors!r}"
        )
    check_regular_file(path)
    fmt = format_of(path, fmt)
    counts: dict[str, int] = {}
    frame = read_frame(path, fmt, encoding_errors, counts)
    return battles_from_frame(
        frame, schema, source=str(path), encoding_errors=encoding_errors, counts=counts
    )


def write_battles(frame: Any, path: str | Path, *, fmt: str | None = None) -> Path:
    """Write a table of battles as CSV, JSON (records), JSONL or Parquet (by suffix or ``fmt``).

    List-valued cells (Arena conversations) are stored as JSON strings in CSV, and CSV text
    cells that a spreadsheet would run as a formula get a leading apostrophe
    (`spreadsheet_safe`); the other formats keep every value as it is.

    Args:
        frame: A pandas DataFrame (e.g. from `synthetic_arena`).
        path: Output file.
        fmt: Force a format instead of the suffix.

    Returns:
        The path written.
    """
    pd = _deps.pandas()
    path = Path(path)
    fmt = format_of(path, fmt)
    frame = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_frame(frame, path, fmt)
    return path
