"""``prefduel report``: one self-contained offline HTML report of a results file."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any, TextIO

from prefduel.cli.argtypes import positive_int

DESCRIPTION = (
    "Write DIR/report.html, one self-contained offline HTML page (inline CSS and SVG): the "
    "leaderboard per world, learning curves per arrival and per round with 95% bands, paired "
    "gains vs a competitor (t and bootstrap intervals), the per-profile breakdown, and the "
    "settings and versions. Every figure is also saved as PNG and SVG in DIR/figures/. "
    'The figures need matplotlib (pip install "prefduel[report]"); without it the page has '
    "every table and says where the figures would be."
)


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add ``report`` to the subcommands ``sub``; return ``{"report": handler}``."""
    report = sub.add_parser(
        "report",
        help="write a self-contained HTML report of a results file",
        description=DESCRIPTION,
    )
    report.add_argument("results", metavar="RESULTS", help="a JSONL results file")
    report.add_argument("--out", required=True, metavar="DIR", help="output directory")
    report.add_argument(
        "--competitor",
        default="random",
        help="policy the paired gains are measured against (default: %(default)s)",
    )
    report.add_argument("--worlds", default=None, help="only these worlds (comma list)")
    report.add_argument(
        "--policies",
        default=None,
        help="only these policies (comma list of specs); references are kept unless some "
        "ref:... names are listed",
    )
    report.add_argument(
        "--allow-test",
        action="store_true",
        help="allow reading the students of locked test-* rosters (per-profile breakdown)",
    )
    report.add_argument(
        "--window",
        type=positive_int,
        default=25,
        help="centered moving-mean window of the learning curves, in arrivals (default: 25)",
    )
    report.add_argument(
        "--only-version",
        default=None,
        metavar="VERSION",
        help="keep only rows written by this prefduel version (when a file mixes versions)",
    )
    return {"report": cmd_report}


def command_line(args: argparse.Namespace) -> str:
    """The ``prefduel report ...`` command that reproduces ``args``."""
    parts = ["prefduel", "report", args.results, "--out", args.out]
    parts += ["--competitor", args.competitor, "--window", str(args.window)]
    for flag, value in (
        ("--worlds", args.worlds),
        ("--policies", args.policies),
        ("--only-version", args.only_version),
    ):
        if value:
            parts += [flag, value]
    if args.allow_test:
        parts.append("--allow-test")
    return shlex.join(parts)


def cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    """Build the report and print where it went."""
    from prefduel.report import build_report

    result = build_report(
        args.results,
        args.out,
        competitor=args.competitor,
        worlds=args.worlds,
        policies=args.policies,
        allow_test=args.allow_test,
        window=args.window,
        only_version=args.only_version,
        command=command_line(args),
    )
    seconds = result.timings["total"]
    if result.figures_skipped:  # the one line saying why went to stderr as a warning
        out.write(f"wrote {result.html} without figures ({seconds:.1f} s)\n")
    else:
        out.write(
            f"wrote {result.html} and {len(result.figures)} figure files in "
            f"{result.html.parent / 'figures'} ({seconds:.1f} s)\n"
        )
    if result.warnings:
        print(
            f"prefduel: {len(result.warnings)} warning(s) above; the report shows them too",
            file=sys.stderr,
        )
    return 0
