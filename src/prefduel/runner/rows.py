"""Result rows: the one schema of a line of a results file (docs/design.md, section 4).

A row is one finished cell: a policy (``kind == "policy"``) or a reference (``"reference"``) on
one world and seed. `ResultRow` holds its fields with their types; `ResultRow.to_json` is the
line written to a results file (fields in `ROW_FIELDS` order) and `ResultRow.from_json` reads
one back, checking every field. Rows travel between modules as those JSON mappings; the checks
that tolerate incomplete rows (`row_key`, `number_problem`, `curve_problem`, `row_version`)
live here too, so every reader judges rows the same way.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from prefduel import __version__
from prefduel.core.errors import ResultsFileError
from prefduel.core.regret import score
from prefduel.core.rng import SEED_LIMIT

#: Every field of a row, in the order rows are written.
ROW_FIELDS = (
    "kind",
    "world",
    "seed",
    "policy",
    "R",
    "G",
    "R_rand",
    "excess",
    "score",
    "excess_per_arrival",
    "excess_per_round",
    "wall_time",
    "version",
)
#: Fields that identify a row: a results file holds at most one row per key.
KEY_FIELDS = ("kind", "world", "seed", "policy")
KINDS = ("policy", "reference")
NUMBER_FIELDS = ("score", "excess")
CURVE_FIELDS = ("excess_per_arrival", "excess_per_round")
#: Shown for rows written before rows recorded the package version.
UNKNOWN_VERSION = "unknown"

RowKey = tuple[str, str, int, str]


def score_fields(total_r: float, total_g: float, total_rand: float, excess: np.ndarray) -> dict:
    """The score fields of a row from its totals and its ``(N, S)`` excess regret.

    Args:
        total_r: Total regret ``R``.
        total_g: Floor ``G``.
        total_rand: Exact expected regret of random pairs ``R_rand``.
        excess: ``(N, S)`` excess regret per arrival and round.

    Returns:
        ``R``, ``G``, ``R_rand``, ``excess`` (``R - G``), ``score``, ``excess_per_arrival``
        (N sums) and ``excess_per_round`` (S means over arrivals), rounded to 10 decimals.
    """
    return {
        "R": total_r,
        "G": total_g,
        "R_rand": total_rand,
        "excess": total_r - total_g,
        "score": score(total_r, total_rand, total_g),
        "excess_per_arrival": [round(float(x), 10) for x in excess.sum(axis=1)],
        "excess_per_round": [round(float(x), 10) for x in excess.mean(axis=0)],
    }


@dataclass(frozen=True)
class ResultRow:
    """One row of a results file (see the module docstring for the field order)."""

    kind: str
    world: str
    seed: int
    policy: str
    R: float
    G: float
    R_rand: float
    excess: float
    score: float
    excess_per_arrival: tuple[float, ...]
    excess_per_round: tuple[float, ...]
    wall_time: float
    version: str = __version__

    @classmethod
    def build(
        cls, kind: str, world: str, seed: int, policy: str, fields: Mapping[str, Any], wall: float
    ) -> ResultRow:
        """A row of this package version from `score_fields` output and a wall time."""
        return cls(
            kind=kind,
            world=world,
            seed=int(seed),
            policy=policy,
            R=fields["R"],
            G=fields["G"],
            R_rand=fields["R_rand"],
            excess=fields["excess"],
            score=fields["score"],
            excess_per_arrival=tuple(fields["excess_per_arrival"]),
            excess_per_round=tuple(fields["excess_per_round"]),
            wall_time=round(wall, 4),
        )

    @property
    def key(self) -> RowKey:
        """``(kind, world, seed, policy)``."""
        return self.kind, self.world, self.seed, self.policy

    def to_json(self) -> dict[str, Any]:
        """The mapping written as one line of a results file, fields in `ROW_FIELDS` order."""
        out = {name: getattr(self, name) for name in ROW_FIELDS}
        out["excess_per_arrival"] = list(self.excess_per_arrival)
        out["excess_per_round"] = list(self.excess_per_round)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "row") -> ResultRow:
        """Read a row back, checking every field.

        Raises:
            ResultsFileError: naming ``where`` and the first field that is missing or wrong.
        """
        kind, world, seed, policy = row_key(data, where)
        if kind not in KINDS:
            raise ResultsFileError(f"{where}: kind must be one of {list(KINDS)}, got {kind!r}")
        for name in ("R", "G", "R_rand", "excess", "score", "wall_time"):
            if name not in data:
                raise ResultsFileError(f"{where}: no field {name!r}")
            value = data[name]
            if not _is_number(value):
                raise ResultsFileError(f"{where}: field {name!r} is {value!r}, not a number")
        problem = curve_problem(data) or _version_problem(data)
        if problem:
            raise ResultsFileError(f"{where}: {problem}")
        row = cls(
            kind=kind,
            world=world,
            seed=seed,
            policy=policy,
            **{n: float(data[n]) for n in ("R", "G", "R_rand", "excess", "score", "wall_time")},
            excess_per_arrival=tuple(float(x) for x in data["excess_per_arrival"]),
            excess_per_round=tuple(float(x) for x in data["excess_per_round"]),
            version=row_version(data),
        )
        problem = consistency_problem(row)
        if problem:
            raise ResultsFileError(f"{where}: {problem}")
        return row


def consistency_problem(row: ResultRow) -> str | None:
    """Why a row's numbers contradict each other, or None when they agree.

    A row restates its totals several ways (``excess = R - G``, ``score`` from ``R``, ``R_rand``
    and ``G``, the curves summing to ``excess``); a row altered by hand or damaged otherwise
    breaks one of them, and averaging it in would report a number no run produced.
    """
    scale = max(1.0, abs(row.R), abs(row.G), abs(row.R_rand))
    tolerance = 1e-6 * scale + 1e-9 * len(row.excess_per_arrival)
    if row.R_rand - row.G <= 0:
        return f"R_rand ({row.R_rand}) is not above the floor G ({row.G}); no world gives that"
    if min(row.R, row.G, row.R_rand) < -tolerance or row.wall_time < 0:
        return "a regret total or the wall time is negative; regrets are never below 0"
    if abs(row.excess - (row.R - row.G)) > tolerance:
        return f"excess {row.excess} is not R - G = {row.R - row.G:.10g}"
    expected = score(row.R, row.R_rand, row.G)
    if not math.isfinite(expected) or abs(row.score - expected) > 1e-6 * max(1.0, abs(expected)):
        return f"score {row.score} disagrees with its regrets, which give {expected:.4f}"
    by_arrival = math.fsum(row.excess_per_arrival)
    if abs(by_arrival - row.excess) > tolerance:
        return f"excess_per_arrival sums to {by_arrival:.10g}, not to excess {row.excess:.10g}"
    by_round = math.fsum(row.excess_per_round) * len(row.excess_per_arrival)
    if abs(by_round - row.excess) > tolerance * len(row.excess_per_round):
        return (
            f"excess_per_round (means over {len(row.excess_per_arrival)} arrivals) gives "
            f"{by_round:.10g} in all, not excess {row.excess:.10g}"
        )
    return None


def row_key(row: Any, where: str = "row") -> RowKey:
    """The key ``(kind, world, seed, policy)`` of a row mapping.

    Raises:
        ResultsFileError: if a key field is missing or has the wrong type.
    """
    if not isinstance(row, dict):
        raise ResultsFileError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [f for f in KEY_FIELDS if f not in row]
    if missing:
        raise ResultsFileError(f"{where}: missing field(s) {', '.join(missing)}")
    kind, world, seed, policy = (row[f] for f in KEY_FIELDS)
    if not all(isinstance(v, str) and v.strip() for v in (kind, world, policy)):
        raise ResultsFileError(f"{where}: kind, world and policy must be non-empty strings")
    for name, value in (("world", world), ("policy", policy)):
        if _CONTROL.search(value):
            raise ResultsFileError(
                f"{where}: {name} {_short(value)} holds a control character (a NUL byte, a "
                "line break, an escape sequence); no world or policy name does"
            )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise ResultsFileError(
            f"{where}: seed must be an integer from 0 to 2**32 - 1, got {_short(seed)}"
        )
    return kind, world, seed, policy


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def row_version(row: Mapping[str, Any]) -> str:
    """The package version a row was written by (`UNKNOWN_VERSION` if not recorded)."""
    version = row.get("version")
    return str(version) if version not in (None, "") else UNKNOWN_VERSION


def _version_problem(row: Mapping[str, Any]) -> str | None:
    version = row.get("version")
    if version is None or (isinstance(version, str) and not _CONTROL.search(version)):
        return None
    return f"field 'version' is {_short(version)}, not a version string"


#: Characters no name or version holds: C0 and C1 controls (NUL, line breaks, escapes).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def number_problem(row: Mapping[str, Any]) -> str | None:
    """Why a row's ``score``/``excess`` cannot be summarized, or None when they can."""
    for name in NUMBER_FIELDS:
        if name not in row:
            return f"no field {name!r}"
        if not _is_number(row[name]):
            return f"field {name!r} is {row[name]!r}, not a finite number"
    return None


def curve_problem(row: Mapping[str, Any]) -> str | None:
    """Why a row's per-arrival/per-round curves cannot be drawn, or None when they can."""
    for name in CURVE_FIELDS:
        value = row.get(name)
        if value is None:
            return f"no field {name!r}"
        if not isinstance(value, list) or not value:
            return f"field {name!r} is not a non-empty list"
        try:
            arr = np.array(value, dtype=float)  # None -> nan; text or nested lists -> error
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.ndim != 1 or not np.isfinite(arr).all():
            return f"field {name!r} holds values that are not finite numbers"
    return None


def versions_note(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """``rows come from N package versions: V (n rows), ...`` when rows mix versions, else None.

    Readers (``stats``, the report) warn with it: means over rows of different versions pool
    results of different code.
    """
    counts = Counter(row_version(r) for r in rows)
    if len(counts) < 2:
        return None
    listed = ", ".join(f"{v} ({n} rows)" for v, n in sorted(counts.items()))
    return f"rows come from {len(counts)} package versions: {listed}"
