"""Output paths checked before any work: a command that would fail to write its result fails
first, so nothing it computed or paid for is lost.

`output_dir` and `output_file` raise the error type the caller gives, naming what the path was
for and why it cannot be written (an existing file where a folder is needed, a read-only or
missing location, a device).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

ErrorFactory = Callable[[str], Exception]


def output_dir(path: str | Path, what: str, error: ErrorFactory) -> Path:
    """Create (if needed) and check a folder that a command will write into.

    Args:
        path: The folder.
        what: What it is for, for messages (``"report folder"``).
        error: Builds the exception to raise from a message.

    Returns:
        The folder as a `Path`, existing and writable.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise error(f"{what} {folder} is an existing file, not a folder; give a folder path")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(f"{what} {folder} cannot be created: {exc.strerror or exc}") from None
    _probe(folder, what, error)
    return folder


def output_file(path: str | Path, what: str, error: ErrorFactory) -> Path:
    """Check that a file can be written (its folder is created if needed; the file is not).

    Args:
        path: The file.
        what: What it is for, for messages (``"Markdown output"``).
        error: Builds the exception to raise from a message.

    Returns:
        The file as a `Path`.
    """
    file = Path(path)
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise error(f"{what} {file} cannot be written: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise error(f"{what} {file} is a folder; give a file path")
    if mode is not None and not stat.S_ISREG(mode):
        raise error(f"{what} {file} is not a regular file (a device or a pipe)")
    output_dir(file.parent if str(file.parent) else Path("."), f"folder of {what}", error)
    if mode is not None:
        try:
            with open(file, "ab"):
                pass
        except OSError as exc:
            raise error(f"{what} {file} cannot be written: {exc.strerror or exc}") from None
    return file


def _probe(folder: Path, what: str, error: ErrorFactory) -> None:
    """Write and remove a scratch file: permission bits do not tell (root, read-only mounts)."""
    probe = folder / f".prefduel-write-test-{os.getpid()}"
    try:
        with open(probe, "xb"):
            pass
        probe.unlink()
    except FileExistsError:
        return
    except OSError as exc:
        raise error(f"{what} {folder} is not writable: {exc.strerror or exc}") from None
