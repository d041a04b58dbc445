"""Local worker processes for a sweep, and what to say when one of them dies.

A worker can be killed from outside (the kernel's out-of-memory killer sends SIGKILL) or crash
in native code; `concurrent.futures` then fails every unfinished unit with `BrokenProcessPool`,
which names nothing. Each worker here marks the unit it is running in a small file of a
scratch folder, so the coordinator can say which cells were running when the pool broke.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Protocol


class UnitLike(Protocol):
    """What the pool needs to know of a unit to name it."""

    world: str
    seed: int
    policies: tuple[str, ...]
    references: bool


def describe_unit(unit: UnitLike) -> str:
    """``world dev, seed 3: coduel`` (or ``... : the reference rows``)."""
    what = ", ".join(unit.policies) if unit.policies else ""
    if unit.references:
        what = f"{what} and the reference rows" if what else "the reference rows"
    return f"world {unit.world}, seed {unit.seed}: {what}"


class LocalPool:
    """A `ProcessPoolExecutor` whose workers leave a mark for the unit they are running.

    Args:
        workers: Number of worker processes.
    """

    def __init__(self, workers: int) -> None:
        self.marks = Path(tempfile.mkdtemp(prefix="prefduel-workers-"))
        self.executor = ProcessPoolExecutor(
            max_workers=workers, initializer=_worker_setup, initargs=(os.getpid(),)
        )

    def submit(self, fn: Callable[[Any], Any], unit: UnitLike) -> Future:
        """Run ``fn(unit)`` in a worker, marked while it runs."""
        return self.executor.submit(_marked, fn, unit, str(self.marks))

    def running(self) -> list[str]:
        """The units that were started and not finished, described (from the marks)."""
        with contextlib.suppress(OSError):
            marks = (p for p in self.marks.iterdir() if not p.suffix)
            return sorted(text for p in marks if (text := p.read_text(encoding="utf-8")))
        return []

    def stop(self) -> None:
        """Terminate the worker processes now (an interrupted sweep keeps no unit running)."""
        # ProcessPoolExecutor has no public way to stop running tasks; its processes are private.
        for process in list(getattr(self.executor, "_processes", {}).values()):
            process.terminate()

    def shutdown(self, wait: bool) -> None:
        """Shut the pool down and remove the marks folder."""
        self.executor.shutdown(wait=wait, cancel_futures=True)
        shutil.rmtree(self.marks, ignore_errors=True)


def _marked(fn: Callable[[Any], Any], unit: UnitLike, marks: str) -> Any:
    mark = Path(marks) / f"{os.getpid()}"
    with contextlib.suppress(OSError):  # written whole, then renamed: never read half-written
        scratch = mark.with_suffix(".new")
        scratch.write_text(describe_unit(unit), encoding="utf-8")
        os.replace(scratch, mark)
    result = fn(unit)
    with contextlib.suppress(OSError):
        mark.unlink()
    return result


def _worker_setup(coordinator: int) -> None:
    """Run in each local worker process: leave Ctrl-C to the coordinator (which stops the
    workers itself, so no worker prints a traceback), and exit when the coordinator is gone
    (killed by SIGKILL, say), instead of finishing a unit whose rows nobody will store."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler, inherited by fork

    def watch() -> None:
        while os.getppid() == coordinator:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="prefduel-parent-watch", daemon=True).start()
