"""Run a user's code once in a child process, so that ending the process ends only the child.

A user's policy is checked before a sweep starts. Python errors are reported by the check
itself; but a policy that calls ``os._exit`` (or crashes in native code) would end the
coordinator with no message at all. Run in a forked child, such a policy ends only the child,
and the coordinator names it.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable
from typing import Any

from prefduel.core.errors import PolicyError


def run_isolated(fn: Callable[[], Any], what: str) -> Any:
    """Return ``fn()`` computed in a forked child process (or re-raise what it raised).

    Args:
        fn: The work; its result and any exception it raises must pickle.
        what: What runs, for the message (``"policy 'x.py:P'"``).

    Raises:
        PolicyError: the child ended without a result (``os._exit``, a signal, a crash).
        Exception: whatever ``fn`` raised, re-raised in this process.
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        return fn()  # no fork (Windows): run here
    reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(
        target=_child, args=(fn, writer), daemon=True
    )
    child.start()
    writer.close()
    try:
        outcome = reader.recv()
    except EOFError:
        outcome = None
    child.join()
    if outcome is None:
        how = (
            f"was killed by signal {-child.exitcode}"
            if child.exitcode is not None and child.exitcode < 0
            else f"ended the process (exit status {child.exitcode}, e.g. os._exit or sys.exit "
            "from a thread)"
        )
        raise PolicyError(
            f"{what} {how} while it was checked before the run; a policy must return from "
            "its methods, never end the process"
        )
    ok, value = outcome
    if ok:
        return value
    raise value


def _child(fn: Callable[[], Any], writer: Any) -> None:
    try:
        outcome = (True, fn())
    except BaseException as exc:  # reported to the parent, which re-raises it
        outcome = (False, exc)
    try:
        writer.send(outcome)
    except (pickle.PicklingError, TypeError, AttributeError):
        writer.send((False, PolicyError(f"{type(outcome[1]).__name__}: {outcome[1]}")))
    writer.close()
    os._exit(0)  # no atexit handlers or inherited cleanup of the parent's state
