"""``prefduel worlds build --from-votes LOG --out DIR``: a world built from a vote log.

The ``worlds`` command (`prefduel.cli.grid_cmd`) lists rosters; given ``build`` as its first
name it builds a world instead (`prefduel.voteworlds.build_votes_world`). The log is read with
every format, column and row option of ``prefduel rank`` (`prefduel.cli.rank_args`), plus the
category column.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from prefduel.cli.argtypes import int_at_least, seed_int
from prefduel.cli.rank_args import _add_column_options
from prefduel.cli.rank_cmd import _input_summary, _schema
from prefduel.core.errors import SpecError

#: The first name that turns ``prefduel worlds`` into a build.
BUILD = "build"
#: The options of a build, with their defaults (refused without ``build``).
_BUILD_DEFAULTS: dict[str, Any] = {}

BUILD_HELP = (
    "prefduel worlds build --from-votes LOG --out DIR builds a world from a vote log: the K "
    "models with the most votes are the personas, the voters with at least --min-votes votes "
    "among them the users, each round one of the voter's own prompts; utilities come from the "
    "log's hierarchical Bradley-Terry model (rank --bt-mode hier, with prompt-category "
    "effects), and each seed redraws them from the voters' posteriors. Prints and saves a "
    "posterior predictive check (DIR/votes/check.md). The log is read as prefduel rank reads "
    'it (every column option below). Needs pip install "prefduel[rank]".'
)


def add_build_options(worlds: argparse.ArgumentParser) -> None:
    """Add the build's options to the ``worlds`` parser (one argument group each)."""
    before = set(vars(worlds.parse_args([])))
    group = worlds.add_argument_group("worlds build: a world from a vote log")
    group.add_argument("--from-votes", metavar="LOG", default=None, help="the vote log")
    group.add_argument("--out", metavar="DIR", default=None, help="the world's new folder")
    group.add_argument(
        "--format", choices=("csv", "json", "jsonl", "parquet"), default=None,
        help="file format (default: from the suffix)",
    )
    _add_world_options(group)
    columns = worlds.add_argument_group("worlds build: input columns and labels (as rank)")
    _add_column_options(columns)
    columns.add_argument(
        "--category-col", default=None, metavar="COL",
        help="prompt category column (default: category, if the log has it)",
    )
    columns.add_argument(
        "--no-categories", action="store_true", help="ignore any category column"
    )
    after = vars(worlds.parse_args([]))
    _BUILD_DEFAULTS.update({dest: value for dest, value in after.items() if dest not in before})


def _add_world_options(group: Any) -> None:
    """What the world is made of, and its check."""
    group.add_argument(
        "--models", type=int_at_least(2, 100), default=6, metavar="K",
        help="personas: the K models with the most votes (default: %(default)s)",
    )
    group.add_argument(
        "--min-votes", type=int_at_least(1, 1_000_000), default=10, metavar="N",
        help="voters need at least N votes among those models (default: %(default)s)",
    )
    group.add_argument(
        "--rounds", type=int_at_least(1, 1000), default=None, metavar="S",
        help="rounds per arrival (default: 24, or the median kept voter's votes if fewer)",
    )
    group.add_argument(
        "--arrivals", type=int_at_least(1, 100_000), default=None, metavar="N",
        help="arrivals (default: every kept voter once, at most 2,000: a seeded sample)",
    )
    group.add_argument(
        "--seed", type=seed_int, default=0,
        help="the world's stored seed, and the seed of the fits (default: 0)",
    )
    group.add_argument(
        "--folds", type=int_at_least(2, 100), default=5,
        help="folds of the held-out check (default: %(default)s)",
    )
    group.add_argument(
        "--replicates", type=int_at_least(1, 100), default=5,
        help="logs replicated from the world for the correlation check (default: %(default)s)",
    )


def refuse_build_options(args: argparse.Namespace) -> None:
    """Refuse build options given to ``prefduel worlds`` without ``build``.

    Raises:
        SpecError: naming the options and the command that takes them.
    """
    given = [
        "--" + dest.replace("_", "-")
        for dest, default in _BUILD_DEFAULTS.items()
        if getattr(args, dest, default) != default
    ]
    if given:
        raise SpecError(
            f"worlds: {', '.join(given)} go with `prefduel worlds build --from-votes LOG --out "
            "DIR`"
        )


def cmd_worlds_build(args: argparse.Namespace, out: TextIO) -> int:
    """Build the world, printing what was read, chosen and checked."""
    from prefduel.voteworlds import (
        BuildSettings,
        LogOptions,
        build_summary,
        build_votes_world,
        check_text,
    )

    if args.rosters != [BUILD]:
        raise SpecError(f"worlds build: takes no names, got {' '.join(args.rosters[1:])}")
    if not args.from_votes or not args.out:
        raise SpecError(
            "worlds build: give the vote log and the new folder: --from-votes LOG --out DIR"
        )
    if args.no_categories and args.category_col is not None:
        raise SpecError("worlds build: --category-col and --no-categories contradict each other")
    settings = BuildSettings(
        models=args.models, min_votes=args.min_votes, rounds=args.rounds,
        arrivals=args.arrivals, seed=args.seed, folds=args.folds, replicates=args.replicates,
    )
    options = LogOptions(
        schema=_schema(args, args.prompt_col),
        fmt=args.format,
        encoding_errors=args.encoding_errors,
        category=None if args.no_categories else (args.category_col or "category"),
        auto_category=args.category_col is None,
    )
    stages = _Stages()
    result = build_votes_world(args.from_votes, args.out, settings, options, on_stage=stages)
    stages.end()
    out.write(_input_summary(result.log.battles.summary()))
    out.write(build_summary(result))
    out.write("\n" + check_text(result.check) + "\n")
    out.write(
        f"wrote {result.out}/: world.json, arrays.npz, votes/posterior.npz, votes/check.json, "
        f"votes/check.md\nrun it: prefduel run --worlds {result.out} --policies "
        "random,notransfer,coduel\n"
    )
    return 0


class _Stages:
    """Each stage's duration on stderr as it ends, then the total."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.started = self.first = time.perf_counter()

    def __call__(self, name: str) -> None:
        self._close()
        self.name, self.started = name, time.perf_counter()

    def _close(self) -> None:
        if self.name is not None:
            seconds = time.perf_counter() - self.started
            print(f"prefduel worlds build: {self.name}: {seconds:.1f} s", file=sys.stderr)

    def end(self) -> None:
        """Close the last stage and print the total."""
        self._close()
        self.name = None
        total = time.perf_counter() - self.first
        print(f"prefduel worlds build: total: {total:.1f} s", file=sys.stderr)
