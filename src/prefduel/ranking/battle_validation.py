"""Validating a table of battles: column checks, text cleaning, winner codes, counted skips.

`validate_columns` turns the columns of a table (pandas Series or NumPy arrays) into
`Battles`; every row it drops is counted under one of `SKIP_REASONS`, every row kept with a
caveat under one of `NOTE_REASONS`. The public entry points are in `prefduel.ranking.battles`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prefduel.ranking import _deps
from prefduel.ranking.battle_cells import (
    CellError,
    cell_error,
    check_name,
    column_prompts,
    column_times,
    name_column,
    prompt_text,
    shown,
)
from prefduel.ranking.battle_filters import (
    duplicate_rows,
    exclude_rare_models,
    missing_user_counts,
    spelled_missing,
)
from prefduel.ranking.battle_schema import (
    NOTE_REASONS,
    SKIP_REASONS,
    TIE,
    WIN_A,
    WIN_B,
    Battles,
    BattleSchema,
)
from prefduel.ranking.errors import BattleFormatError

_AUTO_PROMPT_COLUMNS = ("conversation_a", "prompt")


def check_columns(frame: Any, schema: BattleSchema, source: str) -> tuple[str | None, str | None]:
    """Check the required columns; resolve the optional time and prompt columns.

    Returns:
        ``(time column, prompt column)``, each ``None`` when the table has none.

    Raises:
        BattleFormatError: naming the missing columns, the table's columns and the options.
    """
    have = [str(c) for c in frame.columns]
    required = {
        "--model-a-col": schema.model_a,
        "--model-b-col": schema.model_b,
        "--winner-col": schema.winner,
        "--user-col": schema.user,
    }
    if schema.time is not None:
        required["--time-col"] = schema.time
    if schema.prompt is not None:
        required["--prompt-col"] = schema.prompt
    missing = [f"{col!r} ({flag})" for flag, col in required.items() if col not in frame.columns]
    if missing:
        listed = ", ".join(shown(c) for c in have[:40]) + (" ..." if len(have) > 40 else "")
        raise BattleFormatError(
            f"{source}: missing column(s) {', '.join(missing)}; the table has "
            f"{len(have)} column(s): {listed or '(none)'}; name the right columns with the "
            "options in parentheses"
        )
    time_col = (
        schema.time
        if schema.time is not None
        else ("tstamp" if "tstamp" in frame.columns else None)
    )
    prompt_col = schema.prompt
    if prompt_col is None:
        prompt_col = next((c for c in _AUTO_PROMPT_COLUMNS if c in frame.columns), None)
    return time_col, prompt_col


def _as_text(value: Any, policy: str) -> tuple[str | None, bool]:
    """``(text, had_bad_bytes)`` of a cell; ``None`` for missing (NaN, None, blank)."""
    if value is None:
        return None, False
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8").strip() or None, False
        except UnicodeDecodeError:
            if policy == "error":
                raise
            return bytes(value).decode("utf-8", errors="replace").strip() or None, True
    if isinstance(value, float) and math.isnan(value):
        return None, False
    text = str(value).strip()
    return text or None, False


def _cleaned(uniques: Any, policy: str, what: str, name: str, source: str, codes: np.ndarray):
    """Stripped text of each unique value (``None`` when blank; each one a name by
    `check_name`) and a bad-bytes flag each."""
    cleaned: list[str | None] = []
    bad = np.zeros(len(uniques), dtype=bool)
    for i, value in enumerate(uniques):
        try:
            text, was_bad = _as_text(value, policy)
            if text is not None:
                check_name(text)
        except UnicodeDecodeError:
            row = int(np.flatnonzero(codes == i)[0])
            raise BattleFormatError(
                f"{source}: {what} of data row {row + 1} is not valid UTF-8 ({bytes(value)[:40]!r}"
                "); pass --encoding-errors replace or skip"
            ) from None
        except CellError as exc:
            raise cell_error(source, name, int(np.flatnonzero(codes == i)[0]), exc.what) from None
        cleaned.append(text)
        bad[i] = was_bad
    return cleaned, bad


def _factor(
    columns: Sequence[tuple[str, Any]], policy: str, what: str, source: str
) -> tuple[list[np.ndarray], list[str], list[np.ndarray]]:
    """Codes of one or more ``(name, column)`` into one sorted list of cleaned names.

    Every cell must be a name (`name_column`). Values are stripped; blank and missing values
    get code -1. Works on pandas Series (fast on Arrow strings) and NumPy arrays alike.

    Returns:
        ``(codes per column, names, bad-bytes flag per row per column)``.
    """
    pd = _deps.pandas()
    factored, texts = [], []
    for name, col in columns:
        codes, uniques = pd.factorize(name_column(col, name, source), use_na_sentinel=True)
        cleaned, bad = _cleaned(uniques, policy, what, name, source, codes)
        factored.append((codes, cleaned, bad))
        texts.extend(t for t in cleaned if t is not None)
    names = sorted(set(texts))
    index = {name: i for i, name in enumerate(names)}
    out_codes, out_bad = [], []
    for codes, cleaned, bad in factored:
        remap = np.array([index[t] if t is not None else -1 for t in cleaned] + [-1], np.int64)
        out_codes.append(remap[codes])  # code -1 (missing) picks the trailing -1
        out_bad.append(np.concatenate([bad, [False]])[codes])
    return out_codes, names, out_bad


def _winner_codes(
    values: Any, schema: BattleSchema
) -> tuple[np.ndarray, dict[str, int], np.ndarray]:
    """Outcome per row (-1 missing, -2 unknown label), the unknown labels with counts, and
    which rows are both-bad votes (their outcome is a tie)."""
    pd = _deps.pandas()
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    table = {lab: WIN_A for lab in schema.label_a}
    table.update({lab: WIN_B for lab in schema.label_b})
    table.update({lab: TIE for lab in (*schema.label_tie, *schema.label_bothbad)})
    bothbad_of_unique = np.zeros(len(uniques) + 1, dtype=bool)
    outcome_of_unique = np.empty(len(uniques) + 1)
    unknown: dict[str, int] = {}
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    for i, value in enumerate(uniques):
        text, _ = _as_text(value, "replace")
        if text is None:
            outcome_of_unique[i] = -1.0  # missing
        elif text in table:
            outcome_of_unique[i] = table[text]
            bothbad_of_unique[i] = text in schema.label_bothbad
        else:
            outcome_of_unique[i] = -2.0  # unknown
            unknown[text] = unknown.get(text, 0) + int(counts[i])
    outcome_of_unique[-1] = -1.0
    return outcome_of_unique[codes], unknown, bothbad_of_unique[codes]


def validate_columns(
    columns: dict[str, Any],
    n_rows: int,
    schema: BattleSchema,
    time_col: str | None,
    prompt_col: str | None,
    source: str,
    policy: str,
    counts: dict[str, int],
) -> Battles:
    """Validate columns (Series or arrays of ``n_rows``); see `battles_from_frame`.

    Args:
        columns: Column name -> ``(n_rows,)`` values; the schema's user column may be ``None``
            (every battle then belongs to one user ``"all"``).
        n_rows: Rows of the table.
        schema: Column names, labels and row policies.
        time_col: Column of the timestamps, or ``None``.
        prompt_col: Column of the prompts, or ``None``.
        source: Name used in messages.
        policy: Undecodable bytes: ``"error"``, ``"replace"`` or ``"skip"``.
        counts: Skips and notes counted while reading the file (merged in).

    Returns:
        The kept battles in time order (stable), models and users re-indexed on them.
    """
    skips = {k: int(counts.get(k, 0)) for k in SKIP_REASONS}
    notes = {k: int(counts.get(k, 0)) for k in NOTE_REASONS}
    n_read = n_rows + skips["non_utf8"]
    if n_rows == 0:
        raise BattleFormatError(f"{source}: no battles (the table has no rows)")
    coded = _code_rows(columns, n_rows, schema, policy, source)
    keep, missing_users = _usable_rows(coded, schema, policy, source, skips, notes)
    rows = np.flatnonzero(keep)
    time = None if time_col is None else column_times(columns[time_col], rows, time_col, source)
    prompts, repaired = None, np.zeros(rows.size, dtype=bool)
    if prompt_col is not None:
        texts, repaired = column_prompts(columns[prompt_col], rows, prompt_col, source, policy)
        prompts = np.array(texts, dtype=object)
    copies, untimed = duplicate_rows(coded, rows, time, prompts)
    skips["duplicate"] += int(copies.sum())
    keep[rows[copies]] = False
    excluded, skips["rare_model"] = exclude_rare_models(
        coded.a, coded.b, keep, coded.models, schema.min_model_battles
    )
    if not keep.any():
        raise _nothing_usable_error(source, n_read, skips)
    kept = keep[rows]  # which of ``rows`` are still kept
    notes["bothbad_as_tie"] += int(np.sum(coded.bothbad[rows[kept]]))
    notes["duplicate_untimed"] += int(np.sum(untimed & kept))
    notes["non_utf8_repaired"] += int(np.sum(repaired & kept))
    rows, time, prompts = _kept_in_time_order(rows, kept, time, prompts, notes)
    return _battles(coded, rows, time, prompts, skips, notes, source, n_read,
                    dataclasses.replace(schema, time=time_col, prompt=prompt_col),
                    missing_users, excluded)


def _kept_in_time_order(
    rows: np.ndarray,
    kept: np.ndarray,
    time: np.ndarray | None,
    prompts: np.ndarray | None,
    notes: dict[str, int],
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The ``kept`` of ``rows`` with their times and prompts (``""`` where missing), sorted by
    time (stable; rows without a time last); the rows without a prompt or a time are counted
    in ``notes``."""
    rows = rows[kept]
    if prompts is not None:
        prompts = prompts[kept]
        missing = np.array([p is None for p in prompts], dtype=bool)
        notes["missing_prompt"] += int(missing.sum())
        prompts[missing] = ""
    if time is not None:
        time = time[kept]
        notes["missing_time"] += int(np.isnan(time).sum())
        order = np.argsort(np.where(np.isnan(time), np.inf, time), kind="stable")
        rows, time = rows[order], time[order]
        prompts = None if prompts is None else prompts[order]
    return rows, time, prompts


def _battles(
    coded: _CodedRows,
    rows: np.ndarray,
    time: np.ndarray | None,
    prompts: np.ndarray | None,
    skips: dict[str, int],
    notes: dict[str, int],
    source: str,
    n_read: int,
    schema: BattleSchema,
    missing_users: dict[str, int],
    excluded: dict[str, int],
) -> Battles:
    """The `Battles` of the kept ``rows`` (in their final order), models and users re-indexed
    on them; ``schema`` names the time and prompt columns actually read."""
    models, model_of, users, user_of = _used_only(coded, rows)
    return Battles(
        models=models,
        users=users,
        a=model_of[coded.a[rows]],
        b=model_of[coded.b[rows]],
        outcome=np.asarray(coded.outcome[rows], dtype=float),
        user=user_of[coded.user[rows]],
        time=time,
        prompts=prompts,
        skips=skips,
        notes=notes,
        n_rows=n_read,
        source=source,
        schema=schema,
        missing_users=missing_users,
        excluded_models=excluded,
        rows=rows,
    )


def _nothing_usable_error(source: str, n_read: int, skips: dict[str, int]) -> BattleFormatError:
    """The error when every row was skipped: the counts, and the options that keep more."""
    detail = ", ".join(f"{k}: {v}" for k, v in skips.items() if v)
    hints = {
        "empty_user": "--keep-missing-users keeps ids such as NaN or null",
        "bothbad": "--bothbad tie counts both-bad votes as ties",
        "rare_model": "a lower --min-model-battles keeps rarer models",
    }
    advice = "; ".join(hint for key, hint in hints.items() if skips.get(key))
    return BattleFormatError(
        f"{source}: no usable battle among {n_read} rows ({detail})"
        + (f"; {advice}" if advice else "")
    )


@dataclass(frozen=True)
class _CodedRows:
    """Every row of the table as codes, before any row is dropped (``n_rows`` rows).

    Attributes:
        a: ``(n_rows,)`` index of ``model_a`` in ``models``; -1 when blank or missing.
        b: ``(n_rows,)`` index of ``model_b``; -1 when blank or missing.
        models: Sorted cleaned model names of both columns.
        user: ``(n_rows,)`` index into ``users``; -1 when blank, missing or spelled as a
            missing value (``NaN``, ``null``, ... unless ``keep_missing_users``).
        users: Sorted cleaned user ids.
        user_spelling: ``(n_rows,)`` for the rows whose user id spells a missing value, its
            index into ``users``; -1 for every other row.
        outcome: ``(n_rows,)`` outcome code; -1 missing winner, -2 unknown label.
        unknown: Unknown winner labels with their row counts.
        bothbad: ``(n_rows,)`` the winner is a both-bad label (its outcome is a tie).
        bad_bytes: ``(n_rows,)`` a model name or user id had undecodable bytes.
    """

    a: np.ndarray
    b: np.ndarray
    models: list[str]
    user: np.ndarray
    users: list[str]
    user_spelling: np.ndarray
    outcome: np.ndarray
    unknown: dict[str, int]
    bothbad: np.ndarray
    bad_bytes: np.ndarray


def _code_rows(
    columns: dict[str, Any], n_rows: int, schema: BattleSchema, policy: str, source: str
) -> _CodedRows:
    """Factor the model, user and winner columns into codes (see `_CodedRows`)."""
    models_in = [(name, columns[name]) for name in (schema.model_a, schema.model_b)]
    (a, b), models, (bad_a, bad_b) = _factor(models_in, policy, "a model name", source)
    if columns.get(schema.user) is None:  # battles_from_arrays without users
        user, users, bad_user = np.zeros(n_rows, np.int64), ["all"], np.zeros(n_rows, bool)
    else:
        (user,), users, (bad_user,) = _factor(
            [(schema.user, columns[schema.user])], policy, "the user id", source
        )
    user, spelling = spelled_missing(user, users, schema.keep_missing_users)
    winners = name_column(columns[schema.winner], schema.winner, source)
    outcome, unknown, bothbad = _winner_codes(winners, schema)
    return _CodedRows(
        a, b, models, user, users, spelling, outcome, unknown, bothbad, bad_a | bad_b | bad_user
    )


def _usable_rows(
    coded: _CodedRows,
    schema: BattleSchema,
    policy: str,
    source: str,
    skips: dict[str, int],
    notes: dict[str, int],
) -> tuple[np.ndarray, dict[str, int]]:
    """``(n_rows,)`` mask of the rows that pass every check of one row; each dropped row
    counted once in ``skips``, under the first reason of `SKIP_REASONS` that applies
    (``skips`` and ``notes`` are updated). Duplicates and rare models are looked for next, on
    the rows left.

    Returns:
        ``(kept rows, rows skipped for a missing user id by how the id was written)``.

    Raises:
        BattleFormatError: unknown winner labels while ``schema.unknown_winner == "error"``.
    """
    a, b, outcome = coded.a, coded.b, coded.outcome
    keep = np.ones(a.shape[0], dtype=bool)
    if policy == "skip":
        skips["non_utf8"] += int(coded.bad_bytes.sum())
        keep &= ~coded.bad_bytes
    else:
        notes["non_utf8_repaired"] += int(coded.bad_bytes.sum())

    def drop(reason: str, mask: np.ndarray) -> np.ndarray:
        hit = keep & mask
        skips[reason] += int(hit.sum())
        keep[hit] = False
        return hit

    drop("missing_model", (a < 0) | (b < 0))
    drop("missing_winner", outcome == -1.0)
    unknown_rows = keep & (outcome == -2.0)
    if unknown_rows.any():
        if schema.unknown_winner == "error":
            raise _unknown_winner_error(coded.unknown, unknown_rows, schema, source)
        drop("unknown_winner", outcome == -2.0)
    drop("self_battle", a == b)
    no_user = drop("empty_user", coded.user < 0)
    if schema.bothbad == "skip":
        drop("bothbad", coded.bothbad)
    return keep, missing_user_counts(no_user, coded.user_spelling, coded.users)


def _unknown_winner_error(
    unknown: dict[str, int], rows: np.ndarray, schema: BattleSchema, source: str
) -> BattleFormatError:
    """The error naming the unknown labels, the first such row and the options."""
    first = int(np.flatnonzero(rows)[0])
    labels = ", ".join(f"{shown(k)} ({v} rows)" for k, v in sorted(unknown.items())[:10])
    if len(unknown) > 10:
        labels += f" and {len(unknown) - 10} more"
    expected = [*schema.label_a, *schema.label_b, *schema.label_tie, *schema.label_bothbad]
    return BattleFormatError(
        f"{source}: unknown winner label(s) in column {schema.winner!r}: {labels}; "
        f"first at data row {first + 1}; expected one of {expected} (set them with "
        "--winner-labels A,B[,TIE...], or pass --unknown-winner skip to drop and count "
        "those rows)"
    )


def _used_only(
    coded: _CodedRows, rows: np.ndarray
) -> tuple[tuple[str, ...], np.ndarray, tuple[str, ...], np.ndarray]:
    """Models and users of the kept ``rows`` only, so that nothing unseen is listed.

    Returns:
        ``(models, model map, users, user map)``: each map takes an old code to the new one
        (-1 for names no kept row uses).
    """
    a, b, user = coded.a[rows], coded.b[rows], coded.user[rows]
    n_models, n_users = len(coded.models), len(coded.users)
    used_models = np.flatnonzero(
        np.bincount(a, minlength=n_models) + np.bincount(b, minlength=n_models)
    )
    model_map = np.full(n_models, -1, dtype=np.int64)
    model_map[used_models] = np.arange(used_models.size)
    used_users = np.flatnonzero(np.bincount(user, minlength=n_users))
    user_map = np.full(n_users, -1, dtype=np.int64)
    user_map[used_users] = np.arange(used_users.size)
    models = tuple(coded.models[i] for i in used_models)
    return models, model_map, tuple(coded.users[i] for i in used_users), user_map


def first_user_turn(value: Any) -> Any:
    """The prompt of an Arena conversation: the content of its first user turn.

    Accepts a list (or array) of ``{"role", "content"}`` turns, its JSON string, or plain text
    (returned as is, also when it starts with ``[`` without being a conversation). Content
    given as a list of parts (``{"type": "text", "text": ...}``) is joined.

    Raises:
        BattleFormatError: a list that is not a conversation, or content that is not text.
    """
    if not isinstance(value, str | list | tuple | np.ndarray):
        return value
    try:
        return prompt_text(value)
    except CellError as exc:
        raise BattleFormatError(f"not an Arena conversation: {exc.what}") from None
