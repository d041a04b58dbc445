"""The ``prefduel`` command: a thin layer that parses, calls the library, and prints.

Subcommands::

    prefduel worlds [ROSTER ...]         the roster table (ids or roster files)
    prefduel run [--worlds ...] ...      sweep worlds x seeds x policies, print the table
    prefduel leaderboard [...]           run or read a grid, write the leaderboard
    prefduel stats RESULTS [--format]    summarize a results file
    prefduel report RESULTS --out DIR    offline HTML report with figures
    prefduel play | replay               interactive pages
    prefduel cache stats|clear           the LLM response cache
    prefduel rank BATTLES --out DIR      personalized rankings from a vote log
    prefduel datagen CONFIG.yaml         build a world from LLM calls (--dry-run first)
    prefduel prefdisco generate|run|report   cold-start preference discovery

Errors raised on purpose by prefduel print ``prefduel: error: <message>`` and exit
with status 2; an interrupted run exits with 130 and keeps its finished rows.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from prefduel import __version__
from prefduel.cli import (
    cache_cmd,
    datagen_cmd,
    grid_cmd,
    pages_cmd,
    prefdisco_cmd,
    rank_cmd,
    report_cmd,
)
from prefduel.cli.grid_cmd import EVALUATION_COMMAND, parse_seeds
from prefduel.core.errors import PrefduelError

PROG = "prefduel"
#: Re-exported: benchmarks parse seed lists as the command does.
__all__ = ["build_parser", "main", "parse_seeds"]


DESCRIPTION = """\
Personalize LLM answers to individual users from pairwise preferences, and evaluate it.
Three systems on one core, all offline on built-in defaults (no API key, no network):

  TutorDuel + CODuel    benchmark online policies that show two of six persona answers per
                        question and learn from one click, across arriving users; CODuel, eight
                        baselines, exact scoring, statistics, reports: worlds, run,
                        leaderboard, stats, report, play, replay
  personalized rankings per-user Elo and Bradley-Terry rankings vs the global one from
                        Arena-style vote logs, significance tests, prediction: rank
  PrefDisco             cold-start preference discovery: can a model find out what a user
                        wants by asking a simulated user? prefdisco generate|run|report

LLM tooling: datagen builds TutorDuel worlds from LLM calls (a scripted backend offline, or any
OpenAI-compatible endpoint); cache inspects or clears the LLM response cache."""

EPILOG = f"""\
Start with: {PROG} run (dev roster, 4 seeds, four policies). Each command has --help.
The published leaderboard, on the locked evaluation rosters:
  {EVALUATION_COMMAND}"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``prefduel``."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    handlers: dict[str, Any] = {}
    modules = (grid_cmd, report_cmd, pages_cmd, cache_cmd, rank_cmd, datagen_cmd, prefdisco_cmd)
    for module in modules:
        handlers.update(module.register(sub))
    for name, handler in handlers.items():
        sub.choices[name].set_defaults(handler=handler)
    return parser


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Print warnings as one ``prefduel: warning: ...`` line (no source location)."""
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``prefduel``; returns the exit status.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        0 on success, 1 when ``stats`` finds no matching rows, 2 on a usage or prefduel
        error, 130 when interrupted.
    """
    problem = _usable_streams()
    if problem:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    with warnings.catch_warnings(), _sigterm_as_interrupt():
        warnings.showwarning = _show_warning
        try:
            return args.handler(args, sys.stdout)
        except PrefduelError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"\n{PROG}: interrupted{_resume_hint(args)}", file=sys.stderr)
            return 130
        except BrokenPipeError:  # the reader went away (``prefduel stats r.jsonl | head``)
            _silence_stdout()
            return 128 + signal.SIGPIPE


def _usable_streams() -> str | None:
    """Make stdout and stderr safe to write, or say why the command cannot run.

    A closed stderr becomes a sink (nothing could be reported anyway); a closed stdout is an
    error, since the command's output would be lost. Under ``LC_ALL=C`` Python writes ASCII,
    which cannot carry the tables' ``±``: the streams are switched to UTF-8.
    """
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    if sys.stdout is None:
        return "standard output is closed; redirect it to a file or to /dev/null"
    for stream in (sys.stdout, sys.stderr):
        try:
            "±…".encode(stream.encoding or "ascii")
        except (UnicodeEncodeError, LookupError):
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(encoding="utf-8")
    return None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (``kill PID``) like Ctrl-C: stop workers, keep finished rows, exit 130."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not in the main thread (e.g. main() called from a worker thread)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _resume_hint(args: argparse.Namespace) -> str:
    store = {"run": "out", "leaderboard": "results"}.get(args.command)
    if store is None:
        return ""
    path = getattr(args, store)
    return f"; finished rows are kept in {path}, and re-running the same command resumes"


if __name__ == "__main__":
    sys.exit(main())
