"""A vote log read as `prefduel rank` reads it, with each battle's prompt category and the
file's digest: the input of a world built from a vote log.

Every format, column name, label and row policy of `read_battles` applies; the category is one
more column (``category`` when the log has one, or any column named), read like a model name
(text or a whole number, one printable line). A missing category cell is its own category,
``(none)``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prefduel.ranking.battle_files import check_regular_file, format_of, read_frame
from prefduel.ranking.battle_schema import ENCODING_POLICIES, Battles, BattleSchema, EncodingPolicy
from prefduel.ranking.battle_validation import _factor
from prefduel.ranking.battles import battles_from_frame
from prefduel.ranking.errors import BattleFormatError

#: The column read as the category when none is named (and the log has it).
AUTO_CATEGORY_COLUMN = "category"
#: The category of a battle whose category cell is empty or missing.
NO_CATEGORY = "(none)"


@dataclass(frozen=True, eq=False)
class VoteLog:
    """A validated vote log with categories.

    Attributes:
        battles: The validated battles (`read_battles`), with their data rows.
        category: ``(n,)`` category of each battle (index into ``categories``).
        categories: The category names (one, ``""``, when the log has none).
        category_column: The column read as the category, or None.
        format: The file format read.
        sha256: SHA-256 of the file's bytes.
        size: The file's size in bytes.
    """

    battles: Battles
    category: np.ndarray
    categories: tuple[str, ...]
    category_column: str | None
    format: str
    sha256: str
    size: int


def read_vote_log(
    path: str | Path,
    schema: BattleSchema | None = None,
    *,
    fmt: str | None = None,
    encoding_errors: EncodingPolicy = "error",
    category: str | None = AUTO_CATEGORY_COLUMN,
    auto_category: bool = True,
) -> VoteLog:
    """Read and validate a vote log, with each battle's category.

    Args:
        path: A ``.csv``, ``.json``, ``.jsonl``/``.ndjson`` or ``.parquet`` file.
        schema: Column names, winner labels and row policies (as `read_battles`).
        fmt: Force a format instead of the suffix.
        encoding_errors: Invalid UTF-8: ``"error"``, ``"replace"`` or ``"skip"``.
        category: The category column; None: no categories.
        auto_category: The column may be missing (then there are no categories): true for
            the default column, false for one the user named.

    Raises:
        BattleFormatError: every error of `read_battles`; a named category column the table
            does not have; a category cell that is not a name.
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
    if category is not None and category not in frame.columns:
        if not auto_category:
            have = ", ".join(repr(str(c)) for c in list(frame.columns)[:40])
            raise BattleFormatError(
                f"{path}: missing column {category!r} (--category-col); the table has "
                f"{len(frame.columns)} column(s): {have or '(none)'}"
            )
        category = None
    battles = battles_from_frame(
        frame, schema, source=str(path), encoding_errors=encoding_errors, counts=counts
    )
    codes, names = _categories(frame, category, battles, encoding_errors, str(path))
    sha, size = _digest(path)
    return VoteLog(battles, codes, names, category, fmt, sha, size)


def _categories(
    frame, column: str | None, battles: Battles, policy: str, source: str
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each battle's category code and the names (``("",)`` without a column)."""
    if column is None or battles.rows is None:
        return np.zeros(battles.n, dtype=np.int64), ("",)
    (codes,), names, _ = _factor([(column, frame[column])], policy, "the category", source)
    codes = codes[battles.rows]
    if np.any(codes < 0):
        names = [*names, NO_CATEGORY]
        codes = np.where(codes < 0, len(names) - 1, codes)
    used, codes = np.unique(codes, return_inverse=True)
    return codes.astype(np.int64), tuple(names[i] for i in used.tolist())


def _digest(path: Path) -> tuple[str, int]:
    """SHA-256 and size of a file, read in blocks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


__all__ = ["AUTO_CATEGORY_COLUMN", "NO_CATEGORY", "VoteLog", "read_vote_log"]
