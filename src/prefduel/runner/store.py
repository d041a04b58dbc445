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
import stat

try:
    import fcntl
except ImportError:  # Windows: no advisory file locks
    fcntl = None  # type: ignore[assignment]
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefduel.core.errors import ResultsFileError
from prefduel.runner.rows import ResultRow, RowKey, row_key


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
        self._shapes: dict[str, tuple[tuple[int, int], str]] = {}
        self._first: dict[RowKey, tuple[dict[str, Any], str]] = {}
        self._owner_pid = os.getpid()
        self._lock_handle: Any = self._lock() if lock else None
        try:
            if self.path.exists():
                self._load(repair)
        except BaseException:
            self.close()
            raise

    # -- the writer's lock -------------------------------------------------------------------

    def _lock(self) -> list[Any]:
        """Lock the file's path (a sidecar lock file) and the file itself (its inode).

        The path lock holds when the results file is deleted and created again under a
        running writer; the inode lock holds when the same file is reached through a
        hard link under another name.
        """
        if self.path.exists():
            _check_regular_file(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResultsFileError(
                f"results file {self.path}: cannot create its folder: {exc.strerror or exc}"
            ) from None
        handles: list[Any] = []
        try:
            for target in (lock_path(self.path), self.path):
                handles.append(self._lock_one(target))
        except BaseException:
            for handle in handles:
                handle.close()
            raise
        return handles

    def _lock_one(self, target: Path) -> Any:
        try:
            handle = open(target, "ab")
        except OSError as exc:
            raise ResultsFileError(
                f"results file {self.path}: cannot open {target} for writing: "
                f"{exc.strerror or exc}"
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
        """Release the writer's locks (if held)."""
        for handle in self._lock_handle or ():
            handle.close()  # closing the descriptor releases the flock
        self._lock_handle = None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------

    def _load(self, repair: bool) -> None:
        """Read the rows line by line (a results file can be large; it is never read whole)."""
        _check_regular_file(self.path)
        damaged: tuple[int, int] | None = None  # (line number, byte offset) of a damaged line
        offset = 0
        with open(self.path, "rb") as handle:
            for number, raw in enumerate(_lines(handle, self.path), start=1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                if damaged is not None:
                    raise ResultsFileError(
                        f"results file {self.path}, line {damaged[0]}: not a valid JSON row; "
                        "only the last line can be damaged by an interrupted write, so this "
                        "file was altered otherwise; fix or remove that line"
                    )
                row = _parse_line(raw) if raw.endswith(b"\n") else None
                if row is None:
                    damaged = (number, start)
                    continue
                self._add(row, where=f"results file {self.path}, line {number}")
        if damaged is not None:
            self._drop_tail(damaged[1], repair)

    def _add(self, row: dict[str, Any], where: str) -> None:
        ResultRow.from_json(row, where)  # refuses a row whose fields are wrong or disagree
        key = row_key(row, where)
        if key in self._keys:
            first, first_where = self._first[key]
            if _numbers(first) != _numbers(row):
                raise ResultsFileError(
                    f"{where}: a second row for {key} with other numbers than {first_where}; "
                    "one of them was altered or copied from another run: remove the wrong one"
                )
            warnings.warn(
                f"{where}: duplicate row for {key} (same numbers as {first_where}); "
                "counted once",
                ResultsFileWarning,
                stacklevel=3,
            )
            return
        self._check_shape(row, where)
        self._keys.add(key)
        self._first[key] = (row, where)
        self._rows.append(row)

    def _check_shape(self, row: dict[str, Any], where: str) -> None:
        """Rows of one world have curves of one length (its arrivals, its rounds)."""
        shape = (len(row["excess_per_arrival"]), len(row["excess_per_round"]))
        first = self._shapes.setdefault(row["world"], (shape, where))
        if first[0] != shape:
            raise ResultsFileError(
                f"{where}: curves of {shape[0]} arrivals x {shape[1]} rounds, but {first[1]} "
                f"holds world {row['world']!r} with {first[0][0]} x {first[0][1]}; one of the "
                "two rows was altered; fix or remove it"
            )

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
        where = f"row for {self.path}"
        key = row_key(row, where)
        if key in self._keys:
            return False
        ResultRow.from_json(row, where)
        self._check_shape(row, where)
        line = json.dumps(row, separators=(",", ":")).encode("utf-8") + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self._keys.add(key)
        self._first[key] = (row, where)
        self._rows.append(row)
        return True


def lock_path(path: Path) -> Path:
    """The sidecar lock file of a results file: ``.NAME.lock`` beside the file it resolves to."""
    real = Path(os.path.realpath(path))
    return real.parent / f".{real.name}.lock"


#: A longer line cannot be a row (a row of 100,000 arrivals is about 2 MB).
MAX_LINE_BYTES = 64 * 2**20


def _numbers(row: dict[str, Any]) -> dict[str, Any]:
    """A row without its wall time (two runs of one cell differ only there)."""
    return {k: v for k, v in row.items() if k != "wall_time"}


def _check_regular_file(path: Path) -> None:
    """Refuse a device, a pipe or a directory: reading one may never end (``/dev/zero``)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ResultsFileError(f"results file {path} cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise ResultsFileError(f"results file {path} is a directory, not a JSONL file")
    if not stat.S_ISREG(mode):
        raise ResultsFileError(
            f"results file {path} is not a regular file (a device or a pipe); give a file path"
        )


def _lines(handle: Any, path: Path) -> Iterator[bytes]:
    """The file's lines with their newlines, each at most `MAX_LINE_BYTES` long."""
    number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise ResultsFileError(
                f"results file {path}, line {number}: longer than {MAX_LINE_BYTES >> 20} MiB, "
                "which no results row is; is this a results file?"
            )
        yield raw


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    """The JSON object on a line, or None when the line is not a valid JSON object."""
    try:
        row = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return row if isinstance(row, dict) else None
