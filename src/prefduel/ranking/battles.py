"""Arena-format battle logs: schema, reading (CSV, JSON, JSONL, Parquet), validation.

A *battle* is one pairwise vote: a user saw the answers of ``model_a`` and ``model_b`` to a
prompt and picked a winner (or a tie). Chatbot Arena publishes its votes in this shape::

    model_a, model_b, winner ("model_a" | "model_b" | "tie" | "tie (bothbad)"), judge, tstamp,
    conversation_a (list of {"role", "content"} turns), ...

Real vote logs name things differently, so every column name and every winner label is a
setting of `BattleSchema`. Rows that cannot be used are never dropped silently: each is
either an error (with the row and the option that changes the outcome) or a counted skip listed
in `Battles.skips`; rows kept with a caveat are counted in `Battles.notes`.

References:
    Chiang et al. (2024), Chatbot Arena: An Open Platform for Evaluating LLMs by Human
    Preference. ICML.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from prefduel.ranking import _deps
from prefduel.core.csvcells import spreadsheet_safe
from prefduel.ranking.errors import BattleFormatError

#: Outcome codes of a battle, from ``model_a``'s side: 1 win, 0 loss, 0.5 tie (a half win each).
WIN_A, WIN_B, TIE = 1.0, 0.0, 0.5

FORMATS = ("csv", "json", "jsonl", "parquet")
EncodingPolicy = Literal["error", "replace", "skip"]
ENCODING_POLICIES: tuple[str, ...] = ("error", "replace", "skip")

#: Every reason a row can be skipped, in the order the checks run (a row counts once, under the
#: first reason that applies). All are reported, zeros included.
SKIP_REASONS: tuple[str, ...] = (
    "non_utf8",  # a line with invalid UTF-8 bytes, dropped under encoding_errors="skip"
    "missing_model",  # model_a or model_b empty or missing
    "missing_winner",  # winner empty or missing
    "unknown_winner",  # winner label not configured (only with unknown_winner="skip")
    "self_battle",  # model_a == model_b
    "empty_user",  # user id empty or missing
)
#: Rows kept with a caveat.
NOTE_REASONS: tuple[str, ...] = (
    "non_utf8_repaired",  # invalid bytes replaced by U+FFFD (encoding_errors="replace")
    "missing_time",  # no timestamp: kept, ordered after every timed row (stable)
    "missing_prompt",  # no prompt text: kept for ratings, left out of topic/style features
)

_AUTO_PROMPT_COLUMNS = ("conversation_a", "prompt")


@dataclass(frozen=True)
class BattleSchema:
    """Where the fields of a battle are, and what the winner labels mean.

    Attributes:
        model_a: Column of the first model.
        model_b: Column of the second model.
        winner: Column of the outcome.
        user: Column of the user (voter) id.
        time: Column of the timestamp (numbers, or dates pandas can parse). ``None``: use
            ``tstamp`` when the file has it, else the file order.
        prompt: Column of the prompt text, either plain text or an Arena conversation (a list of
            ``{"role", "content"}`` turns, or its JSON string; the first user turn is used).
            ``None``: ``conversation_a`` when present, else ``prompt``, else no prompts.
        label_a: Winner labels meaning "model_a won".
        label_b: Winner labels meaning "model_b won".
        label_tie: Winner labels meaning a tie (each side gets half a win).
        unknown_winner: ``"error"`` (default) stops at labels outside the three lists;
            ``"skip"`` drops those rows and counts them.
    """

    model_a: str = "model_a"
    model_b: str = "model_b"
    winner: str = "winner"
    user: str = "judge"
    time: str | None = None
    prompt: str | None = None
    label_a: tuple[str, ...] = ("model_a",)
    label_b: tuple[str, ...] = ("model_b",)
    label_tie: tuple[str, ...] = ("tie", "tie (bothbad)")
    unknown_winner: Literal["error", "skip"] = "error"

    def __post_init__(self) -> None:
        for name in ("label_a", "label_b", "label_tie"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
        labels = [*self.label_a, *self.label_b, *self.label_tie]
        if not self.label_a or not self.label_b:
            raise BattleFormatError(
                "winner labels: need at least one label for 'model_a won' and one for "
                f"'model_b won', got label_a={self.label_a!r}, label_b={self.label_b!r}"
            )
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise BattleFormatError(f"winner labels: {dup} listed for more than one outcome")
        if self.unknown_winner not in ("error", "skip"):
            raise BattleFormatError(
                f"unknown_winner must be 'error' or 'skip', got {self.unknown_winner!r}"
            )

    @classmethod
    def with_labels(cls, text: str, **columns: Any) -> BattleSchema:
        """A schema whose winner labels come from ``"A,B[,TIE,...]"`` (or ``"A/B/TIE"``).

        The first label means ``model_a`` won, the second ``model_b`` won, every further one a
        tie. Commas separate when present, else slashes (so ``left/right/tie`` works).
        """
        sep = "," if "," in text else "/"
        labels = [p.strip() for p in text.split(sep) if p.strip()]
        if len(labels) < 2:
            raise BattleFormatError(
                f"winner labels: expected 'A,B[,TIE,...]' (first: model_a won, second: model_b "
                f"won, rest: ties), got {text!r}"
            )
        return cls(
            label_a=(labels[0],), label_b=(labels[1],), label_tie=tuple(labels[2:]), **columns
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable settings."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True, eq=False)
class Battles:
    """Validated battles in time order (``n`` battles, ``M`` models, ``U`` users).

    Attributes:
        models: ``M`` model names, sorted.
        users: ``U`` user ids, sorted (as strings).
        a: ``(n,)`` index of ``model_a`` in ``models``.
        b: ``(n,)`` index of ``model_b``; never equal to ``a``.
        outcome: ``(n,)`` 1.0 if ``model_a`` won, 0.0 if ``model_b`` won, 0.5 for a tie.
        user: ``(n,)`` index into ``users``.
        time: ``(n,)`` timestamps in seconds (NaN where missing), or ``None`` (file order).
        prompts: ``(n,)`` object array of prompt texts (``""`` where missing), or ``None``.
        skips: Rows dropped, by reason (every key of `SKIP_REASONS`).
        notes: Rows kept with a caveat, by reason (every key of `NOTE_REASONS`).
        n_rows: Rows read from the source (kept + skipped).
        source: Where the battles came from (a path or a description).
        schema: The schema used.
    """

    models: tuple[str, ...]
    users: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    user: np.ndarray
    time: np.ndarray | None = None
    prompts: np.ndarray | None = None
    skips: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    n_rows: int = 0
    source: str = "<arrays>"
    schema: BattleSchema = field(default_factory=BattleSchema)

    @property
    def n(self) -> int:
        """Number of battles."""
        return int(self.a.shape[0])

    @property
    def n_models(self) -> int:
        """Number of models ``M``."""
        return len(self.models)

    @property
    def n_users(self) -> int:
        """Number of users ``U``."""
        return len(self.users)

    def votes_per_user(self) -> np.ndarray:
        """Battles per user, shape ``(U,)``."""
        return np.bincount(self.user, minlength=self.n_users)

    def summary(self) -> dict[str, Any]:
        """Counts for reports: rows read, battles kept, models, users, skips and notes."""
        return {
            "source": self.source,
            "rows_read": int(self.n_rows),
            "battles": self.n,
            "models": self.n_models,
            "users": self.n_users,
            "ties": int(np.sum(self.outcome == TIE)),
            "has_time": self.time is not None,
            "has_prompts": self.prompts is not None,
            "skipped": {k: int(self.skips.get(k, 0)) for k in SKIP_REASONS},
            "skipped_total": int(sum(self.skips.values())),
            "notes": {k: int(self.notes.get(k, 0)) for k in NOTE_REASONS},
        }


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
        schema: Column names and winner labels (default: Arena's).
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
    time_col, prompt_col = _check_columns(frame, schema, source)
    names = [schema.model_a, schema.model_b, schema.winner, schema.user, time_col, prompt_col]
    columns = {name: frame[name] for name in names if name is not None}
    return _validate(
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
        schema: Winner labels (column names are ignored).

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
    schema = BattleSchema(
        time="tstamp" if time is not None else None,
        prompt="prompt" if prompt is not None else None,
        label_a=base.label_a,
        label_b=base.label_b,
        label_tie=base.label_tie,
        unknown_winner=base.unknown_winner,
    )
    time_col = "tstamp" if time is not None else None
    prompt_col = "prompt" if prompt is not None else None
    return _validate(columns, n, schema, time_col, prompt_col, "<arrays>", "error", {})


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
        schema: Column names and winner labels (default: Arena's).
        fmt: Force a format (one of `FORMATS`) instead of the file suffix.
        encoding_errors: Invalid UTF-8 in a text file: ``"error"`` names the first bad line;
            ``"replace"`` keeps the rows with U+FFFD (counted in notes); ``"skip"`` drops the bad
            lines (CSV and JSONL only; counted in skips).

    Returns:
        The validated `Battles`.

    Raises:
        BattleFormatError: unreadable file, unknown format, bad JSON, bad UTF-8, or any error of
            `battles_from_frame`.
        MissingDependencyError: pandas (or pyarrow for Parquet) is not installed.
    """
    path = Path(path)
    if encoding_errors not in ENCODING_POLICIES:
        raise BattleFormatError(
            f"encoding_errors must be one of {ENCODING_POLICIES}, got {encoding_errors!r}"
        )
    fmt = _format_of(path, fmt)
    if not path.is_file():
        raise BattleFormatError(f"battle file {path} does not exist")
    counts: dict[str, int] = {}
    frame = _read_frame(path, fmt, encoding_errors, counts)
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
    fmt = _format_of(path, fmt)
    frame = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
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
    elif fmt == "json":
        path.write_text(frame.to_json(orient="records", force_ascii=False), encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text(
            frame.to_json(orient="records", lines=True, force_ascii=False), encoding="utf-8"
        )
    else:
        _deps.require("pyarrow", "writing Parquet")
        frame.to_parquet(path, index=False)
    return path


# -- reading ---------------------------------------------------------------------------------


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise BattleFormatError(f"format must be one of {FORMATS}, got {fmt!r}")
        return fmt
    suffix = path.suffix.lower()
    by_suffix = {
        ".csv": "csv",
        ".json": "json",
        ".jsonl": "jsonl",
        ".ndjson": "jsonl",
        ".parquet": "parquet",
        ".pq": "parquet",
    }
    if suffix not in by_suffix:
        raise BattleFormatError(
            f"{path}: cannot tell the format from the suffix {suffix or '(none)'!r}; expected "
            f".csv, .json, .jsonl/.ndjson or .parquet, or pass the format explicitly (--format)"
        )
    return by_suffix[suffix]


def _read_frame(path: Path, fmt: str, policy: str, counts: dict[str, int]) -> Any:
    pd = _deps.pandas()
    if fmt == "parquet":
        _deps.require("pyarrow", "reading Parquet battle files")
        try:
            return pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise BattleFormatError(f"{path}: not a readable Parquet file: {exc}") from None
    text = _read_text(path, policy, line_based=fmt in ("csv", "jsonl"), counts=counts)
    if fmt == "csv":
        try:
            return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""])
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
            raise BattleFormatError(f"{path}: not a readable CSV file: {exc}") from None
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BattleFormatError(
                f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} "
                "(a .json file must hold one list of records; use .jsonl for one record per line)"
            ) from None
        if isinstance(data, dict) and isinstance(data.get("battles"), list):
            data = data["battles"]
        if not isinstance(data, list | dict) or (
            isinstance(data, list) and data and not isinstance(data[0], dict)
        ):
            raise BattleFormatError(
                f"{path}: expected a JSON list of records (objects), got {type(data).__name__}"
            )
        try:
            return pd.DataFrame(data)
        except ValueError as exc:
            raise BattleFormatError(f"{path}: cannot make a table of the JSON: {exc}") from None
    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BattleFormatError(
                f"{path}: line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(record, dict):
            raise BattleFormatError(
                f"{path}: line {number} is a JSON {type(record).__name__}, expected an object"
            )
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


# -- validation ------------------------------------------------------------------------------


def _check_columns(frame: Any, schema: BattleSchema, source: str) -> tuple[str | None, str | None]:
    """Check the required columns; resolve the optional time and prompt columns."""
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
        shown = ", ".join(repr(c) for c in have[:40]) + (" ..." if len(have) > 40 else "")
        raise BattleFormatError(
            f"{source}: missing column(s) {', '.join(missing)}; the table has "
            f"{len(have)} column(s): {shown or '(none)'}; name the right columns with the "
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


def _cleaned(uniques: Any, policy: str, what: str, source: str, codes: np.ndarray):
    """Stripped text of each unique value (``None`` when blank) and a bad-bytes flag each."""
    cleaned: list[str | None] = []
    bad = np.zeros(len(uniques), dtype=bool)
    for i, value in enumerate(uniques):
        try:
            text, was_bad = _as_text(value, policy)
        except UnicodeDecodeError:
            row = int(np.flatnonzero(codes == i)[0])
            raise BattleFormatError(
                f"{source}: {what} of data row {row + 1} is not valid UTF-8 ({bytes(value)[:40]!r}"
                "); pass --encoding-errors replace or skip"
            ) from None
        cleaned.append(text)
        bad[i] = was_bad
    return cleaned, bad


def _factor(
    columns: Sequence[Any], policy: str, what: str, source: str
) -> tuple[list[np.ndarray], list[str], list[np.ndarray]]:
    """Codes of one or more columns into one sorted list of cleaned names.

    Values are stripped; blank and missing values get code -1. Works on pandas Series (fast on
    Arrow strings) and NumPy arrays alike.

    Returns:
        ``(codes per column, names, bad-bytes flag per row per column)``.
    """
    pd = _deps.pandas()
    factored, texts = [], []
    for col in columns:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        cleaned, bad = _cleaned(uniques, policy, what, source, codes)
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


def _winner_codes(values: Any, schema: BattleSchema) -> tuple[np.ndarray, dict[str, int]]:
    """Outcome per row (-1 missing, -2 unknown label) and the unknown labels with counts."""
    pd = _deps.pandas()
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    table = {lab: WIN_A for lab in schema.label_a}
    table.update({lab: WIN_B for lab in schema.label_b})
    table.update({lab: TIE for lab in schema.label_tie})
    outcome_of_unique = np.empty(len(uniques) + 1)
    unknown: dict[str, int] = {}
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    for i, value in enumerate(uniques):
        text, _ = _as_text(value, "replace")
        if text is None:
            outcome_of_unique[i] = -1.0  # missing
        elif text in table:
            outcome_of_unique[i] = table[text]
        else:
            outcome_of_unique[i] = -2.0  # unknown
            unknown[text] = unknown.get(text, 0) + int(counts[i])
    outcome_of_unique[-1] = -1.0
    return outcome_of_unique[codes], unknown


def _validate(
    columns: dict[str, Any],
    n_rows: int,
    schema: BattleSchema,
    time_col: str | None,
    prompt_col: str | None,
    source: str,
    policy: str,
    counts: dict[str, int],
) -> Battles:
    """Validate columns (Series or arrays of ``n_rows``); see `battles_from_frame`."""
    skips = {k: int(counts.get(k, 0)) for k in SKIP_REASONS}
    notes = {k: int(counts.get(k, 0)) for k in NOTE_REASONS}
    n_read = n_rows + skips["non_utf8"]
    if n_rows == 0:
        raise BattleFormatError(f"{source}: no battles (the table has no rows)")

    (a, b), models, (bad_a, bad_b) = _factor(
        [columns[schema.model_a], columns[schema.model_b]], policy, "a model name", source
    )
    if columns.get(schema.user) is None:  # battles_from_arrays without users
        user, users, bad_user = np.zeros(n_rows, np.int64), ["all"], np.zeros(n_rows, bool)
    else:
        (user,), users, (bad_user,) = _factor([columns[schema.user]], policy, "the user id", source)
    outcome, unknown = _winner_codes(columns[schema.winner], schema)

    keep = np.ones(n_rows, dtype=bool)
    bad_bytes = bad_a | bad_b | bad_user
    if policy == "skip":
        skips["non_utf8"] += int(bad_bytes.sum())
        keep &= ~bad_bytes
    else:
        notes["non_utf8_repaired"] += int(bad_bytes.sum())

    def _drop(reason: str, mask: np.ndarray) -> None:
        hit = keep & mask
        skips[reason] += int(hit.sum())
        keep[hit] = False

    _drop("missing_model", (a < 0) | (b < 0))
    _drop("missing_winner", outcome == -1.0)
    unknown_rows = keep & (outcome == -2.0)
    if unknown_rows.any():
        if schema.unknown_winner == "error":
            first = int(np.flatnonzero(unknown_rows)[0])
            labels = ", ".join(f"{k!r} ({v} rows)" for k, v in sorted(unknown.items()))
            expected = [*schema.label_a, *schema.label_b, *schema.label_tie]
            raise BattleFormatError(
                f"{source}: unknown winner label(s) in column {schema.winner!r}: {labels}; "
                f"first at data row {first + 1}; expected one of {expected} (set them with "
                "--winner-labels A,B[,TIE...], or pass --unknown-winner skip to drop and count "
                "those rows)"
            )
        _drop("unknown_winner", outcome == -2.0)
    _drop("self_battle", a == b)
    _drop("empty_user", user < 0)
    if not keep.any():
        detail = ", ".join(f"{k}: {v}" for k, v in skips.items() if v)
        raise BattleFormatError(f"{source}: no usable battle among {n_read} rows ({detail})")

    rows = np.flatnonzero(keep)
    time = None
    if time_col is not None:
        time = _times(columns[time_col], rows, time_col, source)
        notes["missing_time"] += int(np.isnan(time).sum())
        order = np.argsort(np.where(np.isnan(time), np.inf, time), kind="stable")
        rows, time = rows[order], time[order]
    prompts = None
    if prompt_col is not None:
        prompts, n_missing, n_bad = _prompts(columns[prompt_col], rows, policy, source)
        notes["missing_prompt"] += n_missing
        notes["non_utf8_repaired"] += n_bad

    # Re-index models and users on the kept rows only, so that nothing unseen is listed.
    a, b, user = a[rows], b[rows], user[rows]
    used_models = np.flatnonzero(
        np.bincount(a, minlength=len(models)) + np.bincount(b, minlength=len(models))
    )
    model_map = np.full(len(models), -1, dtype=np.int64)
    model_map[used_models] = np.arange(used_models.size)
    used_users = np.flatnonzero(np.bincount(user, minlength=len(users)))
    user_map = np.full(len(users), -1, dtype=np.int64)
    user_map[used_users] = np.arange(used_users.size)
    return Battles(
        models=tuple(models[i] for i in used_models),
        users=tuple(users[i] for i in used_users),
        a=model_map[a],
        b=model_map[b],
        outcome=np.asarray(outcome[rows], dtype=float),
        user=user_map[user],
        time=time,
        prompts=prompts,
        skips=skips,
        notes=notes,
        n_rows=n_read,
        source=source,
        schema=schema,
    )


def _take(column: Any, rows: np.ndarray) -> Any:
    """``column[rows]`` as a pandas Series (column: Series or array)."""
    pd = _deps.pandas()
    if isinstance(column, pd.Series):
        return column.iloc[rows].reset_index(drop=True)
    return pd.Series(np.asarray(column)[rows])


def _times(values: Any, rows: np.ndarray, column: str, source: str) -> np.ndarray:
    """Timestamps in seconds of the kept rows (NaN where missing)."""
    pd = _deps.pandas()
    raw = _take(values, rows)
    numeric = pd.to_numeric(raw, errors="coerce")
    values = np.array(numeric, dtype=float)  # a writable copy
    present = np.asarray(raw.notna()) & np.asarray(
        raw.map(lambda v: not (isinstance(v, str) and not v.strip()))
    )
    unparsed = present & np.isnan(values)
    if unparsed.any():
        dates = pd.to_datetime(raw[unparsed], errors="coerce", utc=True, format="mixed")
        seconds = (dates - pd.Timestamp("1970-01-01", tz="UTC")) / pd.Timedelta(seconds=1)
        values[unparsed] = np.asarray(seconds, dtype=float)
        still = present & np.isnan(values)
        if still.any():
            first = int(np.flatnonzero(still)[0])
            raise BattleFormatError(
                f"{source}: timestamp {raw.iloc[first]!r} in column {column!r} (data row "
                f"{int(rows[first]) + 1}) is neither a number nor a date; fix it, or name another "
                "column with --time-col"
            )
    return values


def first_user_turn(value: Any) -> Any:
    """The prompt of an Arena conversation: the content of its first user turn.

    Accepts a list (or array) of ``{"role", "content"}`` turns, its JSON string, or plain text
    (returned as is). Content given as a list of parts (``{"type": "text", "text": ...}``) is
    joined.
    """
    if isinstance(value, str):
        stripped = value.lstrip()
        if not stripped.startswith("["):
            return value
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            return value
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        turns = [t for t in value if isinstance(t, dict)]
        for turn in turns:
            if str(turn.get("role", "")).lower() in ("user", "human"):
                return _content_text(turn.get("content"))
        return _content_text(turns[0].get("content")) if turns else None
    return value


def _content_text(content: Any) -> Any:
    if isinstance(content, np.ndarray):
        content = content.tolist()
    if isinstance(content, list):
        parts = [
            p.get("text", "") if isinstance(p, dict) else str(p)
            for p in content
            if not isinstance(p, dict) or p.get("type", "text") == "text"
        ]
        return "\n".join(x for x in parts if x)
    return content


def _prompts(
    column: Any, rows: np.ndarray, policy: str, source: str
) -> tuple[np.ndarray, int, int]:
    """Prompt texts of the kept rows, the number missing, and the number repaired."""
    values = _take(column, rows).tolist()
    out = np.empty(len(values), dtype=object)
    missing = bad_count = 0
    for i, value in enumerate(values):
        try:
            text, bad = _as_text(first_user_turn(value), policy)
        except UnicodeDecodeError:
            raise BattleFormatError(
                f"{source}: the prompt of data row {int(rows[i]) + 1} is not valid UTF-8; pass "
                "--encoding-errors replace"
            ) from None
        bad_count += bad
        if text is None:
            missing += 1
            text = ""
        out[i] = text
    return out, missing, bad_count
