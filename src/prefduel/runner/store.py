"""A JSONL results store: one JSON object per line, one line per finished cell.

Each row is keyed by ``(kind, world, seed, policy)``; a key is never written twice, so a sweep
that is run again skips what is already there and appends only what is missing.

One writer at a time: a store opened with ``lock=True`` (as the sweep does) holds an exclusive
lock on the file until it is closed, so a second run on the same file stops with a clear error
instead of computing and writing the same cells again. The lock dies with its process.

Crash safety: every row is written as one line, flushed and ``fsync``-ed before the next cell is
recorded, so a crash can damage at most the last line. On opening, a last line that is
incomplete (no final newline) or not valid JSON is reported with a `ResultsFileWarning`
and cut off, so its cell is simply run again. A damaged line anywhere else cannot come from an
interrupted write and raises `ResultsFileError` naming the file
and line.
"""

from __future__ import annotations

import json
import os

try:
    import fcntl
except ImportError:  # Windows: no advisory file locks
    fcntl = None  # type: ignore[assignment]
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefduel.core.errors import ResultsFileError
from prefduel.runner.rows import RowKey, row_key


class ResultsFileWarning(UserWarning):
    """A results file had an incomplete last line (from a crash) that was dropped."""


class ResultsStore:
    """Rows of a JSONL results file, with crash-safe, duplicate-free appends.

    Args:
        path: The ``.jsonl`` file (need not exist yet; it is created on the first append).
        repair: Truncate the file after its last complete line when that line is damaged.
            With ``repair=False`` (read-only use) the damaged line is only skipped.
        lock: Take the writer's lock (created if missing) before reading; release it with
            `close` or by leaving a ``with`` block.

    Raises:
        ResultsFileError: a damaged line that is not the last one (names the file and line),
            another process holding the writer's lock, or a path that cannot be opened.
    """

    def __init__(self, path: str | Path, *, repair: bool = True, lock: bool = False) -> None:
        self.path = Path(path)
        self._rows: list[dict[str, Any]] = []
        self._keys: set[RowKey] = set()
        self._owner_pid = os.getpid()
        self._lock_handle: Any = self._lock() if lock else None
        try:
            if self.path.exists():
                self._load(repair)
        except BaseException:
            self.close()
            raise

    # -- the writer's lock -------------------------------------------------------------------

    def _lock(self) -> Any:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "ab")
        except OSError as exc:
            raise ResultsFileError(
                f"results file {self.path} cannot be opened for writing: {exc.strerror or exc}"
            ) from None
        if fcntl is None:  # no advisory locks on this platform
            return handle
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise ResultsFileError(
                f"results file {self.path} is being written by another prefduel process; wait "
                "for it to finish (re-running then resumes), or write to another file (--out)"
            ) from None
        return handle

    def close(self) -> None:
        """Release the writer's lock (if held)."""
        if self._lock_handle is not None:
            self._lock_handle.close()  # closing the descriptor releases the flock
            self._lock_handle = None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------

    def _load(self, repair: bool) -> None:
        data = self.path.read_bytes()
        keep = _complete_length(data)
        lines = data[:keep].split(b"\n")[:-1] if keep else []
        damaged_tail = keep < len(data) and data[keep:].strip() != b""
        last = _last_nonblank(lines)
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            row = _parse_line(raw)
            if row is None:
                if number == last and not damaged_tail:
                    keep = sum(len(line) + 1 for line in lines[: number - 1])
                    damaged_tail = True
                    break
                raise ResultsFileError(
                    f"results file {self.path}, line {number}: not a valid JSON row; "
                    "only the last line can be damaged by an interrupted write, so this file "
                    "was altered otherwise; fix or remove that line"
                )
            self._add(row, where=f"results file {self.path}, line {number}")
        if damaged_tail:
            self._drop_tail(keep, repair)

    def _add(self, row: dict[str, Any], where: str) -> None:
        key = row_key(row, where)
        if key in self._keys:
            warnings.warn(
                f"{where}: duplicate row for {key}; keeping the first one",
                ResultsFileWarning,
                stacklevel=3,
            )
            return
        self._keys.add(key)
        self._rows.append(row)

    def _drop_tail(self, keep: int, repair: bool) -> None:
        action = "cut it off; its cell will be run again" if repair else "ignoring it"
        warnings.warn(
            f"results file {self.path}: the last line is incomplete or damaged (probably an "
            f"interrupted run); {action}",
            ResultsFileWarning,
            stacklevel=3,
        )
        if repair:
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())

    # -- access ------------------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """All rows, in file order (a new list; the row dicts are shared)."""
        return list(self._rows)

    def keys(self) -> set[RowKey]:
        """The keys of all rows."""
        return set(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    # -- writing -----------------------------------------------------------------------------

    def append(self, row: dict[str, Any]) -> bool:
        """Write ``row`` as one line, flushed and fsync-ed, unless its key is already stored.

        Only the process that opened the store may append (workers return rows instead).

        Returns:
            True if the row was written, False if a row with its key was already there.

        Raises:
            ResultsFileError: if the row lacks a key field.
            RuntimeError: if called from another process than the one that opened the store.
        """
        if os.getpid() != self._owner_pid:
            raise RuntimeError(
                f"results file {self.path}: rows must be appended by the coordinating process "
                f"(opened by pid {self._owner_pid}, append called from pid {os.getpid()})"
            )
        key = row_key(row, where=f"row for {self.path}")
        if key in self._keys:
            return False
        line = json.dumps(row, separators=(",", ":")).encode("utf-8") + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self._keys.add(key)
        self._rows.append(row)
        return True


def _complete_length(data: bytes) -> int:
    """Length of the prefix of ``data`` that ends with its last newline (0 if none)."""
    return data.rfind(b"\n") + 1


def _last_nonblank(lines: list[bytes]) -> int:
    """1-based number of the last non-blank line (0 if all are blank)."""
    for number in range(len(lines), 0, -1):
        if lines[number - 1].strip():
            return number
    return 0


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    """The JSON object on a line, or None when the line is not a valid JSON object."""
    try:
        row = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return row if isinstance(row, dict) else None
