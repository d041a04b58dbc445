"""Reading and checking the result rows a report is built from.

Everything that could turn into a silently wrong number is either refused with a
`ResultsFileError` / `SpecError`
naming the file, line or option, or kept and reported as a `ReportWarning` (printed on
stderr by the CLI and shown in the report's "Warnings" box):

* a missing, empty or unreadable results file, or one without usable rows: error;
* a damaged line in the middle of the file: error from
  `ResultsStore` naming the line (a damaged *last* line comes
  from an interrupted run: ``ResultsStore(repair=False)`` skips it without touching the file,
  and the report warns that its cell is missing);
* a row without a usable ``score`` or ``excess`` (missing, not a number, NaN): error naming
  the lines (these numbers are the leaderboard);
* a row without usable ``excess_per_arrival`` / ``excess_per_round`` (missing, not numbers, or
  another length than the world's other rows): kept in the leaderboard and paired gains,
  left out of the curves and the per-profile breakdown, with a warning naming the lines;
* rows from several package versions: warning listing the versions, and the
  ``(world, policy)`` entries whose seeds mix versions (``only_version`` keeps one version);
* filters naming worlds or policies that have no rows: error listing what the file has.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefduel.core.errors import ResultsFileError, SpecError
from prefduel.core.registry import parse_spec, split_specs
from prefduel.runner.rows import curve_problem, number_problem, row_version, versions_note
from prefduel.runner.store import ResultsFileWarning, ResultsStore
from prefduel.worlds.spec import world_label

#: At most this many offending lines are quoted in a message.
MAX_QUOTED = 5


class ReportWarning(UserWarning):
    """Something in the input the reader of a report must know about (also shown in it)."""


@dataclass
class ReportInput:
    """Checked, filtered rows and what was noticed while reading them.

    Attributes:
        path: The results file.
        rows: Rows kept after the filters (policy and reference rows, file order).
        total_rows: Rows in the file before filtering.
        sha256: Digest of the file's bytes.
        shown: Policies (and references) the report shows; None for all. ``rows`` may hold
            more (the competitor of the paired gains is always kept).
        curve_ok: ``id(row)`` of the rows whose curves are usable.
        versions: Rows per package version (after filtering).
        warnings: Messages for the report (each also issued as a `ReportWarning`).
    """

    path: Path
    rows: list[dict[str, Any]]
    total_rows: int
    sha256: str
    shown: set[str] | None = None
    curve_ok: set[int] = field(default_factory=set)
    versions: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        """Record ``message`` for the report and issue it as a `ReportWarning`."""
        self.warnings.append(message)
        warnings.warn(message, ReportWarning, stacklevel=2)

    def curve_rows(self) -> list[dict[str, Any]]:
        """The rows whose ``excess_per_arrival`` and ``excess_per_round`` are usable."""
        return [r for r in self.rows if id(r) in self.curve_ok]


def canonical_policy(spec: str) -> str:
    """The name rows carry for a policy spec (canonical when it parses, else as written)."""
    try:
        return str(parse_spec(spec))
    except SpecError:
        return spec.strip()


def _describe(row: dict[str, Any]) -> str:
    return f"world {row.get('world')!r}, seed {row.get('seed')}, policy {row.get('policy')!r}"


def _line_numbers(path: Path, rows: Iterable[dict[str, Any]]) -> dict[int, int]:
    """Line number (1-based) of each of ``rows`` in ``path`` (slow path, used for messages)."""
    wanted = {(r.get("kind"), r.get("world"), r.get("seed"), r.get("policy")): id(r) for r in rows}
    found: dict[int, int] = {}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                row = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            if not isinstance(row, dict):
                continue
            key = (row.get("kind"), row.get("world"), row.get("seed"), row.get("policy"))
            if key in wanted and wanted[key] not in found:
                found[wanted[key]] = number
    return found


def _quote(path: Path, problems: Sequence[tuple[dict[str, Any], str]]) -> str:
    """``line L (world ..., seed ..., policy ...): problem; ...`` for the first few problems."""
    lines = _line_numbers(path, [row for row, _ in problems[:MAX_QUOTED]])
    parts = []
    for row, problem in problems[:MAX_QUOTED]:
        where = f"line {lines[id(row)]}" if id(row) in lines else "a line"
        parts.append(f"{where} ({_describe(row)}): {problem}")
    more = len(problems) - MAX_QUOTED
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def read_rows(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """All rows of a results file, and the store's messages about a damaged last line.

    Uses ``ResultsStore(path, repair=False)``: the file is never modified; a damaged last line
    (an interrupted write) is skipped and reported, a damaged line elsewhere is an error.

    Raises:
        ResultsFileError: the file does not exist, is a directory, is empty, or has a damaged
            line that is not the last one or a row without its key fields (names the line).
    """
    path = Path(path)
    if not path.exists():
        raise ResultsFileError(f"results file {path} does not exist")
    if path.is_dir():
        raise ResultsFileError(f"results file {path} is a directory, not a JSONL file")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsFileWarning)
        store = ResultsStore(path, repair=False)
    notes = []
    for item in caught:
        if not issubclass(item.category, ResultsFileWarning):
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
            continue
        message = str(item.message)
        if "last line" in message:
            total = len(path.read_bytes().rstrip(b"\n").split(b"\n"))
            message = (
                f"results file {path}: the last line (line {total}) is incomplete or damaged "
                "(probably an interrupted run) and was ignored, so its cell is missing from this "
                "report; `prefduel run` with the same grid cuts it off and runs the cell "
                "again"
            )
        notes.append(message)
    rows = store.rows()
    if not rows:
        raise ResultsFileError(
            f"results file {path} is empty (no rows); write results with "
            f"`prefduel run --out {path}` first"
        )
    return rows, notes


def _filter(
    rows: list[dict[str, Any]],
    worlds: Sequence[str] | None,
    policies: Sequence[str] | None,
    always: Sequence[str] = (),
) -> tuple[list[dict[str, Any]], set[str] | None]:
    """Rows of the listed worlds and policies, plus the policies in ``always``.

    Returns:
        The kept rows and the names to *show* (None: all): the listed policies, and the
        references unless some ``ref:`` names are listed (as ``prefduel stats``).

    Raises:
        SpecError: a listed world or policy has no rows (naming what the file has).
    """
    if worlds:
        keep = {world_label(w) for w in worlds}
        present = list(dict.fromkeys(r["world"] for r in rows))
        missing = sorted(keep - set(present))
        if missing:
            raise SpecError(
                f"--worlds: no rows for {', '.join(map(repr, missing))}; "
                f"worlds in the results file: {', '.join(present)}"
            )
        rows = [r for r in rows if r["world"] in keep]
    if not policies:
        return rows, None
    present = {r["policy"] for r in rows}
    names: set[str] = set()
    missing = []
    for spec in policies:
        found = {spec.strip(), canonical_policy(spec)} & present
        if not found:
            missing.append(canonical_policy(spec))
        names |= found
    if missing:
        raise SpecError(
            f"--policies: no rows for {', '.join(map(repr, missing))}; "
            f"policies in the results file: {', '.join(sorted(present))}"
        )
    if not any(n.startswith("ref:") for n in names):
        names |= {r["policy"] for r in rows if r["kind"] == "reference"}
    wanted = names | set(always)
    return [r for r in rows if r["policy"] in wanted], names


def _check_versions(data: ReportInput) -> None:
    """Warn when rows come from several package versions, naming mixed (world, policy) cells."""
    note = versions_note(data.rows)
    if note is None:
        return
    data.warn(
        f"{note}. Results of different versions may not be comparable; pass --only-version "
        "to report one version"
    )
    mixed: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in data.rows:
        mixed[(row["world"], row["policy"])].add(row_version(row))
    cells = [(w, p, vs) for (w, p), vs in mixed.items() if len(vs) > 1]
    if cells:
        shown = "; ".join(
            f"{p} on {w} ({', '.join(sorted(vs))})" for w, p, vs in cells[:MAX_QUOTED]
        )
        more = f"; and {len(cells) - MAX_QUOTED} more" if len(cells) > MAX_QUOTED else ""
        data.warn(
            f"{len(cells)} world/policy entries pool seeds written by different versions, so "
            f"their means mix code versions: {shown}{more}"
        )


def _check_curves(data: ReportInput) -> None:
    """Mark rows with usable curves; warn about the others (they stay in the leaderboard)."""
    problems: list[tuple[dict[str, Any], str]] = []
    shapes: dict[str, Counter] = defaultdict(Counter)
    candidates = []
    for row in data.rows:
        problem = curve_problem(row)
        if problem:
            problems.append((row, problem))
            continue
        shape = (len(row["excess_per_arrival"]), len(row["excess_per_round"]))
        shapes[row["world"]][shape] += 1
        candidates.append((row, shape))
    for row, shape in candidates:
        usual = shapes[row["world"]].most_common(1)[0][0]
        if shape != usual:
            problems.append(
                (
                    row,
                    f"curves of length {shape[0]} arrivals x {shape[1]} rounds, but most rows of "
                    f"this world have {usual[0]} x {usual[1]}",
                )
            )
            continue
        data.curve_ok.add(id(row))
    if problems:
        data.warn(
            f"{len(problems)} row(s) have no usable excess_per_arrival/excess_per_round and are "
            "left out of the learning curves and the per-profile breakdown (they still count in "
            f"the leaderboard and the paired gains): {_quote(data.path, problems)}"
        )


def load_input(
    path: str | Path,
    *,
    worlds: Sequence[str] | str | None = None,
    policies: Sequence[str] | str | None = None,
    only_version: str | None = None,
    always: Sequence[str] = (),
) -> ReportInput:
    """Read, check and filter the rows of a results file for a report.

    Args:
        path: A JSONL results file.
        worlds: Keep only these worlds (roster ids or stored-world paths; a comma string or a
            list).
        policies: Keep only these policies (specs; a comma string or a list); references stay
            unless some ``ref:...`` names are listed.
        only_version: Keep only rows written by this package version.
        always: Policies whose rows are kept whatever ``policies`` says (not shown unless
            listed), e.g. the competitor of the paired gains.

    Returns:
        The checked rows with the warnings raised on the way.

    Raises:
        ResultsFileError: missing, empty or corrupt file, or rows without usable numbers.
        SpecError: a filter that matches nothing.
    """
    path = Path(path)
    rows, notes = read_rows(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    bad = [(row, p) for row in rows if (p := number_problem(row))]
    if bad:
        raise ResultsFileError(
            f"results file {path}: {len(bad)} row(s) lack a usable score or excess, so the "
            f"report would show wrong numbers: {_quote(path, bad)}. Fix or remove these lines, "
            "or leave their worlds/policies out with --worlds/--policies"
        )
    total = len(rows)
    if isinstance(worlds, str):
        worlds = [w.strip() for w in worlds.split(",") if w.strip()]
    if isinstance(policies, str):
        policies = split_specs(policies)
    rows, shown = _filter(rows, worlds, policies, always)
    if only_version is not None:
        present = Counter(row_version(r) for r in rows)
        rows = [r for r in rows if row_version(r) == only_version]
        if not rows:
            listed = ", ".join(f"{v} ({n} rows)" for v, n in sorted(present.items()))
            raise SpecError(f"--only-version: no rows of version {only_version!r}; found {listed}")
    if not rows:
        raise SpecError(f"no rows in {path} match the filters")
    data = ReportInput(path=path, rows=rows, total_rows=total, sha256=digest, shown=shown)
    data.versions = dict(Counter(row_version(r) for r in rows))
    for note in notes:
        data.warn(note)
    _check_versions(data)
    _check_curves(data)
    return data
