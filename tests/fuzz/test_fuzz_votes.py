"""Vote logs with generated damage, fed to ``prefduel rank``: a named error, or a result whose
counts add up, never a traceback, a hang or a runaway allocation.

A small seeded log (6 users, 4 models, 55 battles, with timestamps, Arena conversations and a
``category`` column that ``rank`` does not read) is written as JSONL, JSON, CSV and Parquet.
Every field of the first and the last row gets every bad value (JSON values in JSONL, text
cells in CSV; the first row's JSON values also in a JSON list), every column of the Parquet
file every other type, and each file structural damage (truncation, garbage, binary, UTF-16,
a BOM, CRLF, a duplicated line, deep nesting, a 65 MiB line, 200,000 columns).

What each case may do:

- a missing value (null, NaN, an empty cell, a dropped field) where the rules define a skip or
  a note: exit 0 with that count (``missing_model: 1`` ...);
- a list, an object, true/false or an infinity in a column ``rank`` reads: exit 2 naming the
  column and the data row; nesting too deep to parse: exit 2 naming the line;
- damage to the unread column: exit 0 with the leaderboard of the undamaged log (or exit 2
  when the file cannot be parsed at all);
- anything else: exit 2 with a named error, or exit 0 where the damage is a legitimate change
  of input (a new model name, a far timestamp, a shorter file).

Every exit 0 must print no ``nan`` or ``inf``, and its counts must add up: rows read = battles
kept + rows skipped, and rows read = the rows of the file when only a cell was damaged.

The figures are drawn for the CSV cases that put text in the model names and user ids of the
first row (the names that end up as figure labels); the other cases run without matplotlib (a
supported install: the report says the figures were omitted), since drawing takes most of a
case's time and depends on nothing else the damage changes.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from typing import Any

import pytest
from fuzz_harness import (
    JSON_BAD_VALUES,
    Case,
    failures,
    jsonl_field_damage,
    long_line,
    run_cases,
    structural_damage,
)

ARGV = ["--out", "o", "--no-features", "--no-progress", "--min-votes", "3", "--bootstrap", "5"]
#: Text cells a CSV file can hold where a name, label, time or prompt belongs.
CSV_BAD_TEXT: tuple[tuple[str, str], ...] = (
    ("nan", "NaN"),
    ("inf", "inf"),
    ("huge", "1e308"),
    ("huge-int", "1" + "0" * 400),
    ("negative", "-1"),
    ("zero", "0"),
    ("text", "x"),
    ("empty", ""),
    ("blank", "   "),
    ("list", "[1, 2]"),
    ("null", "null"),
    ("bool", "true"),
    ("nested", "[" * 5000 + "]" * 5000),
    ("formula", "=1+1"),
    ("script", "<script>alert(1)</script>"),
    ("dollars", "$\\frac{1}{$"),
    ("escape", "a\x1b[2Jb"),
    ("quotes-newline", 'a "quoted"\nline, with a comma'),
    ("nul", "a\x00b"),
    ("long", "y" * 100_000),
)
#: The column ``rank`` does not read.
UNUSED = "category"
#: The columns whose text the figures draw (model_b's names go through model_a's code).
NAMES = ("model_a", "judge")
#: What a missing value is counted as, per column.
MISSING_COUNT = {
    "model_a": "missing_model",
    "model_b": "missing_model",
    "winner": "missing_winner",
    "judge": "empty_user",
    "tstamp": "missing_time",
    "conversation_a": "missing_prompt",
}
MISSING_JSON = ("nan", "null", "empty-text", "missing")
MISSING_CSV = ("empty", "blank")
WRONG_TYPE = ("list", "object", "bool", "inf", "-inf")
_READ = re.compile(r"read (\d+) rows from \S+: (\d+) battles, \d+ models, \d+ users; skipped (\d+)")


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return vote_log()


def vote_log() -> dict[str, Any]:
    """The rows of the log, the log as a frame, and the log in each format."""
    from prefduel.ranking import synthetic_arena

    frame, _ = synthetic_arena(n_users=6, n_models=4, votes=(8, 10), seed=3)
    frame["tstamp"] = frame["tstamp"].round().astype("int64")
    frame[UNUSED] = ["coding" if i % 2 else "chat" for i in range(len(frame))]
    rows = json.loads(frame.to_json(orient="records"))
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    files = {
        "jsonl": ("\n".join(json.dumps(r) for r in rows) + "\n").encode(),
        "json": json.dumps(rows).encode(),
        "csv": _csv(rows),
        "parquet": buffer.getvalue(),
    }
    return {"rows": rows, "files": files, "frame": frame}


@pytest.fixture(scope="module")
def hidden_matplotlib(tmp_path_factory) -> str:
    """A folder that, first on ``PYTHONPATH``, makes ``import matplotlib`` fail."""
    folder = tmp_path_factory.mktemp("no-matplotlib")
    (folder / "matplotlib").mkdir()
    (folder / "matplotlib" / "__init__.py").write_text(
        'raise ImportError("hidden by the fuzz test")\n', encoding="utf-8"
    )
    return str(folder)


def _csv(
    rows: list[dict[str, Any]], line: int | None = None, name: str = "", text: str = ""
) -> bytes:
    """The rows as CSV text cells (conversations as JSON); cell ``name`` of ``line`` is
    ``text``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(rows[0]))
    for i, row in enumerate(rows):
        cells = [json.dumps(v) if isinstance(v, list | dict) else str(v) for v in row.values()]
        if i == line:
            cells[list(row).index(name)] = text
        writer.writerow(cells)
    return out.getvalue().encode()


def _as_json_array(jsonl: bytes) -> bytes:
    return b"[" + b",\n".join(x for x in jsonl.splitlines() if x.strip()) + b"]"


def _parquet_damage(frame: Any) -> list[tuple[str, bytes]]:
    """Each column of the log replaced by a column of another type."""
    import pandas as pd

    n = len(frame)
    kinds = {
        "int": list(range(n)),
        "float-inf": [float("inf")] + [1.5] * (n - 1),
        "bool": [True, False] * (n // 2) + [True] * (n % 2),
        "list": [[1, 2]] * n,
        "struct": [{"a": 1}] * n,
        "binary": [b"\xff\xfe"] * n,
        "null": [None] * n,
        "date": list(pd.date_range("2024-01-01", periods=n, freq="h")),
    }
    out = []
    for column in frame.columns:
        for kind, values in kinds.items():
            damaged = frame.copy()
            damaged[column] = values
            buffer = io.BytesIO()
            damaged.to_parquet(buffer, index=False)
            out.append((f"{column}={kind}", buffer.getvalue()))
    return out


def _damage(base: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """``(format, label, file)`` of every damaged file."""
    rows, files = base["rows"], base["files"]
    last = len(rows) - 1
    out = []
    for line in (0, last):
        for label, data in jsonl_field_damage(rows, line):
            out.append(("jsonl", label, data))
            if line == 0:  # the JSON reader parses the same records: one row is enough
                out.append(("json", label, _as_json_array(data)))
        out += [("csv", f"line{line + 1}.{name}={label}", _csv(rows, line, name, text))
                for name in rows[0] for label, text in CSV_BAD_TEXT]
    out += [("parquet", label, data) for label, data in _parquet_damage(base["frame"])]
    for fmt, data in files.items():
        out += [(fmt, label, damaged) for label, damaged in structural_damage(data, seed=1)]
    out += [(fmt, "long-line", long_line(files[fmt])) for fmt in ("jsonl", "csv")]
    out += [(fmt, "wide", data) for fmt, data in _wide(files).items()]
    return out


def _wide(files: dict[str, bytes], n: int = 200_000) -> dict[str, bytes]:
    """The log with a header (CSV) or a first record (JSONL, JSON) of ``n`` more columns."""
    extra = ",".join(f"c{i}" for i in range(n)).encode()
    record = ", ".join(f'"c{i}": 1' for i in range(n)).encode()
    csv_head, csv_rest = files["csv"].split(b"\n", 1)
    jsonl_head, jsonl_rest = files["jsonl"].split(b"\n", 1)
    return {
        "csv": csv_head + b"," + extra + b"\n" + csv_rest,
        "jsonl": jsonl_head[:-1] + b", " + record + b"}\n" + jsonl_rest,
        "json": files["json"][:-2] + b", " + record + b"}]",
    }


def _expectation(fmt: str, label: str, n_rows: int) -> dict[str, Any]:
    """The allowed exits, the error pattern, and what an exit 0 must show, for one damage."""
    if label == "wide":
        return {"allowed": (2,), "message": r"200,007 columns.*at most 1,000"}
    cell = re.fullmatch(r"line(\d+)\.(\w+)=([\w-]+)", label)
    if cell is None:
        return {"allowed": (0, 2), "rows": n_rows if label in ("crlf", "bom") else None}
    row, field, value = int(cell[1]), cell[2], cell[3]
    if field == UNUSED:
        return {"allowed": (0, 2) if value == "nested" else (0,), "rows": n_rows, "same": True}
    missing = MISSING_JSON if fmt != "csv" else MISSING_CSV
    if value in missing:
        return {"allowed": (0,), "rows": n_rows, "count": f"{MISSING_COUNT[field]}: 1"}
    if fmt != "csv" and value in WRONG_TYPE:
        return {"allowed": (2,), "message": rf"column '{field}', data row {row}\b"}
    if fmt != "csv" and value == "nested":  # row N is line N of the JSONL file
        return {"allowed": (2,), "message": rf"line {row} .*nest" if fmt == "jsonl" else "nest"}
    return {"allowed": (0, 2), "rows": n_rows}


def _oracle(rows: int | None, count: str | None, board: tuple[dict[str, str], str] | None):
    """For exit 0: no nan/inf printed, the counts add up, every row was read (``rows``), the
    skip or note ``count`` is shown, and the leaderboard is ``board`` (``(boards, format)``:
    the undamaged log's, looked up when the oracle runs)."""

    def check(result: dict[str, Any]) -> str | None:
        text = result["stdout"]
        lines = [x for x in text.lower().splitlines()
                 if not x.startswith(("excluded ", "missing user ids"))]
        if re.search(r"(^|[\s(=:,])-?(nan|inf)\b", "\n".join(lines)):
            return f"exit 0 printing nan or inf:\n{text[-1200:]}"
        found = _READ.search(text)
        if not found:
            return f"exit 0 without the 'read ... rows' line:\n{text[-800:]}"
        read, kept, skipped = (int(x) for x in found.groups())
        if read != kept + skipped:
            return f"rows read {read} != battles {kept} + skipped {skipped}"
        if rows is not None and read != rows:
            return f"read {read} rows, the file has {rows}"
        if count is not None and count not in text:
            return f"exit 0 without {count!r} in the terminal:\n{text[-800:]}"
        if board is not None and _board(text) != board[0][board[1]]:
            return f"damage to an unread column changed the result:\n{text[-800:]}"
        return None

    return check


def _board(stdout: str) -> str:
    """The counts and the leaderboard, whatever the file was called."""
    lines = [x for x in stdout.splitlines() if x.startswith(("read ", "global BT"))]
    return re.sub(r" from \S+:", ":", "\n".join(lines))


def _cases(base: dict[str, Any], boards: dict[str, str]) -> tuple[list[Case], list[Case]]:
    """The cases drawn with figures (text in CSV names of the first row), and the others;
    ``boards`` holds each format's undamaged leaderboard once the reference runs are done."""
    n_rows = len(base["rows"])
    drawn, plain = [], []
    for fmt, label, data in _damage(base):
        expect = _expectation(fmt, label, n_rows)
        case = Case(
            f"{fmt}:{label}",
            ["rank", f"v.{fmt}", *ARGV],
            {f"v.{fmt}": data},
            allowed=expect["allowed"],
            message=expect.get("message"),
            oracle=_oracle(expect.get("rows"), expect.get("count"),
                           (boards, fmt) if expect.get("same") else None),
        )
        field = label.split(".", 1)[-1].split("=")[0]
        (drawn if fmt == "csv" and label.startswith("line1.") and field in NAMES
         else plain).append(case)
    return drawn, plain


def test_damaged_vote_logs(base, hidden_matplotlib, monkeypatch):
    assert {label for label, _ in JSON_BAD_VALUES} >= set(WRONG_TYPE) | {"nested"}
    files = base["files"]
    reference = [Case(f"ref:{fmt}", ["rank", f"v.{fmt}", *ARGV], {f"v.{fmt}": data},
                      allowed=(0,)) for fmt, data in files.items()]
    boards: dict[str, str] = {}  # filled from the reference runs before any oracle runs
    drawn, plain = _cases(base, boards)
    results = run_cases(reference + drawn)
    assert not failures(reference, results), failures(reference, results)
    boards.update({fmt: _board(results[f"ref:{fmt}"]["stdout"]) for fmt in files})
    assert len(set(boards.values())) == 1  # every format reads the same battles
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [hidden_matplotlib,
                                                    os.environ.get("PYTHONPATH")]))
    )
    results.update(run_cases(plain))
    cases = drawn + plain
    problems = failures(cases, results)
    summary = "\n".join(p.splitlines()[0][:160] for p in problems)
    seconds = sum(r["seconds"] for r in results.values())
    assert not problems, (
        f"{len(problems)} of {len(cases)} cases failed ({seconds:.0f} s in cases):\n{summary}"
        "\n\n" + "\n\n".join(problems[:6])
    )
