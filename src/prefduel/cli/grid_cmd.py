"""The TutorDuel grid commands: ``worlds``, ``run``, ``leaderboard`` and ``stats``.

Each parses its options here and calls the library (the sweep, the results store, the stats
tables); `register` adds them to the ``prefduel`` command.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from prefduel.cli.argtypes import positive_int
from prefduel.cli.votes_cmd import (
    BUILD,
    BUILD_HELP,
    add_build_options,
    cmd_worlds_build,
    refuse_build_options,
)
from prefduel.core.errors import PrefduelError, ResultsFileError, SpecError
from prefduel.core.outputs import output_file
from prefduel.core.registry import split_specs
from prefduel.core.rng import SEED_LIMIT
from prefduel.policies import POLICIES
from prefduel.runner.distributed import dask_executor
from prefduel.runner.store import ResultsStore
from prefduel.runner.sweep import sweep
from prefduel.stats.sections import StatsOptions, parse_names, stats_report
from prefduel.stats.summary import summary_report
from prefduel.stats.table import FORMATS, format_table, summarize_rows
from prefduel.worlds import ROSTERS, get_roster, world_kind
from prefduel.worlds.spec import MAX_ASK_BUDGET, ask_label

PROG = "prefduel"
DEFAULT_POLICIES = "random,notransfer,pooled,coduel"
#: The leaderboard's default rosters: the unlocked ones, so that it runs as typed.
LEADERBOARD_WORLDS = "dev,control-scrambled,control-unstructured"
#: The evaluation rosters of the published leaderboard (locked: they need --allow-test).
EVALUATION_WORLDS = "test-profiles,test-composite,test-quirky"
EVALUATION_COMMAND = f"{PROG} leaderboard --worlds {EVALUATION_WORLDS} --allow-test"
#: Every registered policy (the built-in ones and the baselines).
LEADERBOARD_POLICIES = ",".join(POLICIES.ids())


# -- argument parsing helpers ----------------------------------------------------------------


#: Most seeds one grid may have (each seed is a whole world per roster).
MAX_SEEDS = 100_000


def parse_seeds(text: str) -> list[int]:
    """Parse a seed list: ``"0-31"``, ``"0,2,5"``, ``"0-3,8"`` (ranges inclusive).

    Raises:
        SpecError: naming the piece that is not a seed or a ``lo-hi`` range, a seed outside
            ``[0, 2**32)``, or more than `MAX_SEEDS` seeds (counted before any list is built).
    """
    ranges: list[tuple[int, int]] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        lo, sep, hi = piece.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise SpecError(
                f"seeds: {piece!r} is not a seed or a range; expected e.g. 0-31, 0,2,5 or 0-3,8"
            ) from None
        if first < 0 or last < first:
            raise SpecError(f"seeds: range {piece!r} is empty; expected lo-hi with 0 <= lo <= hi")
        if last >= SEED_LIMIT:
            raise SpecError(f"seeds: {piece!r} goes beyond {SEED_LIMIT - 1:,}, the largest seed")
        ranges.append((first, last))
        if sum(b - a + 1 for a, b in ranges) > MAX_SEEDS:
            raise SpecError(
                f"seeds: {text!r} names more than {MAX_SEEDS:,} seeds; a grid takes at most "
                f"{MAX_SEEDS:,} (the protocols use 32)"
            )
    seeds = [seed for first, last in ranges for seed in range(first, last + 1)]
    if not seeds:
        raise SpecError(f"seeds: no seeds in {text!r}")
    return list(dict.fromkeys(seeds))


def parse_budgets(text: str) -> list[int]:
    """``"0,1,3"`` -> ``[0, 1, 3]``: the ask tracks of ``--ask-budget``.

    Raises:
        SpecError: naming a piece that is not a budget from 0 to `MAX_ASK_BUDGET`.
    """
    budgets = []
    for piece in (p.strip() for p in text.split(",") if p.strip()):
        if not piece.isdigit() or int(piece) > MAX_ASK_BUDGET:
            raise SpecError(
                f"--ask-budget: {piece!r} is not a number of questions from 0 to "
                f"{MAX_ASK_BUDGET}; expected e.g. 0,1,3,5"
            )
        budgets.append(int(piece))
    if not budgets:
        raise SpecError(f"--ask-budget: no budget in {text!r}")
    return list(dict.fromkeys(budgets))


def default_jobs() -> int:
    """Number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _add_execution_options(parser: argparse.ArgumentParser) -> None:
    """How a grid runs (shared by ``run`` and ``leaderboard``): workers or a Dask cluster,
    the locked rosters, the progress bar."""
    parser.add_argument(
        "--jobs", type=positive_int, default=None, help="worker processes (default: number of CPUs)"
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the units on the Dask cluster of this scheduler, e.g. tcp://HOST:8786 "
        '(needs pip install "prefduel[dask]"); --jobs is then ignored',
    )
    parser.add_argument(
        "--allow-test", action="store_true", help="allow the locked held-out test-* rosters"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--ask-budget",
        default="0",
        metavar="B[,B...]",
        help="the ask tracks to run: preference questions a policy may ask each arrival, e.g. "
        "0,1,3,5; each B > 0 is a world of its own, named WORLD+askB (default: 0, the "
        "benchmark without questions)",
    )




def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add ``worlds``, ``run``, ``leaderboard`` and ``stats`` to the subcommands ``sub``."""
    _add_worlds_command(sub)
    _add_run_command(sub)
    _add_leaderboard_command(sub)
    _add_stats_command(sub)
    return {
        "worlds": cmd_worlds,
        "run": cmd_run,
        "leaderboard": cmd_leaderboard,
        "stats": cmd_stats,
    }


def _add_worlds_command(sub: Any) -> None:
    worlds = sub.add_parser(
        "worlds",
        help="list the rosters, or build a world from a vote log",
        description="List the TutorDuel rosters (generator version 2; ROSTER@1 names version 1), "
        f"or describe the rosters and roster files given. {BUILD_HELP}",
    )
    worlds.add_argument(
        "rosters",
        nargs="*",
        metavar="ROSTER",
        help=f"roster ids or roster files (.yaml); or {BUILD} (with --from-votes and --out)",
    )
    add_build_options(worlds)


def _add_run_command(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="sweep worlds x seeds x policies",
        description="Run every unfinished cell of worlds x seeds x policies into a JSONL file "
        "(finished cells are skipped, so re-running resumes), then print the summary table.",
    )
    run.add_argument(
        "--worlds",
        default="dev",
        help="comma list of roster ids or stored-world paths (default: dev)",
    )
    run.add_argument("--seeds", default="0-3", help="e.g. 0-31, 0,2,5 or 0-3,8 (default: 0-3)")
    run.add_argument(
        "--policies",
        default=DEFAULT_POLICIES,
        help="comma list of policy specs, e.g. random,coduel:gate=off,bank=16,"
        f"my.py:MyPolicy (default: {DEFAULT_POLICIES})",
    )
    run.add_argument("--out", default="results.jsonl", help="results file (default: results.jsonl)")
    _add_execution_options(run)
    run.add_argument("--format", choices=FORMATS, default="text", help="table format")


def _add_leaderboard_command(sub: Any) -> None:
    board = sub.add_parser(
        "leaderboard",
        help="run or read a grid and write the leaderboard",
        description="Run every unfinished cell (finished rows are read from RESULTS), then print "
        "the leaderboard per roster: score and excess regret, mean ± s.e. over seeds, sorted, "
        "reference rows marked; also written as Markdown and CSV. By default it runs the "
        "unlocked rosters (dev and the two controls; the full default grid takes minutes). "
        f"The published leaderboard is on the locked evaluation rosters: {EVALUATION_COMMAND}",
    )
    board.add_argument(
        "--worlds",
        default=LEADERBOARD_WORLDS,
        help=f"comma list of rosters (default: {LEADERBOARD_WORLDS}, the unlocked ones; "
        f"the evaluation rosters: --worlds {EVALUATION_WORLDS} --allow-test)",
    )
    board.add_argument("--seeds", default="0-31", help="default: 0-31")
    board.add_argument(
        "--policies",
        default=LEADERBOARD_POLICIES,
        help="comma list of specs (default: %(default)s)",
    )
    board.add_argument(
        "--results",
        default="results.jsonl",
        help="results file, read and extended (default: %(default)s)",
    )
    board.add_argument(
        "--md", default="leaderboard.md", help="Markdown output (default: %(default)s)"
    )
    board.add_argument("--csv", default="leaderboard.csv", help="CSV output (default: %(default)s)")
    _add_execution_options(board)


def _add_stats_command(sub: Any) -> None:
    stats = sub.add_parser(
        "stats",
        help="summarize a results file",
        description="Score and excess regret, mean ± s.e. over seeds, per world and policy.",
    )
    stats.add_argument("results", metavar="RESULTS", help="a JSONL results file")
    stats.add_argument("--format", choices=FORMATS, default="text", help="table format")
    stats.add_argument(
        "--competitor",
        default=None,
        help="also print each policy's paired relative change in excess regret vs this policy "
        "(e.g. notransfer), with 95%% t and bootstrap intervals over the seeds both have "
        "(default: random, when the file has it; none: do not print them)",
    )
    stats.add_argument(
        "--curves",
        action="store_true",
        help="also print learning curves (excess regret per arrival, centered moving mean over "
        "--window arrivals, mean over seeds with a 95%% band) and per-round curves; text and md "
        "show checkpoints, csv and json every point",
    )
    stats.add_argument(
        "--window",
        type=positive_int,
        default=25,
        help="moving-mean window in arrivals (default: 25)",
    )
    stats.add_argument(
        "--by-profile",
        metavar="POLICY",
        default=None,
        help="also print POLICY's excess regret per arrival by the students' hidden profile "
        "(regenerates each world from its roster and seed)",
    )
    stats.add_argument(
        "--allow-test", action="store_true", help="allow regenerating locked test-* rosters"
    )
    stats.add_argument("--worlds", default=None, help="only these worlds (comma list)")
    stats.add_argument(
        "--policies",
        default=None,
        help="only these policies (comma list of specs); references are kept "
        "unless some ref:... names are listed",
    )


# -- commands --------------------------------------------------------------------------------


def cmd_worlds(args: argparse.Namespace, out: TextIO) -> int:
    """Print the roster table (every built-in roster, or the rosters and roster files given),
    or build a world from a vote log (``worlds build``)."""
    if args.rosters[:1] == [BUILD]:
        return cmd_worlds_build(args, out)
    refuse_build_options(args)
    header = ("id", "arrivals", "students", "topics", "seeds", "locked", "description")
    rosters = [get_roster(name) for name in args.rosters] if args.rosters else ROSTERS.values()
    rows = [
        (
            r.label,
            str(r.arrivals),
            r.students,
            r.topics,
            str(r.seeds),
            "yes" if r.locked else "no",
            r.description,
        )
        for r in rosters
    ]
    widths = [max(len(row[c]) for row in [header, *rows]) for c in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)]
        out.write("  ".join([*cells, row[-1]]) + "\n")
    return 0


def _sweep_args(args: argparse.Namespace, results: str) -> list[dict[str, Any]]:
    """Run the grid named by the shared ``run``/``leaderboard`` options into ``results``
    (on the Dask cluster of ``--scheduler`` if given)."""
    budgets = parse_budgets(args.ask_budget)
    worlds = [ask_label(w, b) for w in parse_names(args.worlds) for b in budgets]
    policies = split_specs(args.policies)
    seeds = parse_seeds(args.seeds)
    _note_seeds_beyond_protocol(worlds, seeds)
    cluster = (
        dask_executor(args.scheduler, worlds=worlds, policies=policies)
        if args.scheduler
        else contextlib.nullcontext()
    )
    plan: list[tuple[int, int]] = []
    with cluster as executor:
        rows = sweep(
            worlds,
            seeds,
            policies,
            results,
            jobs=args.jobs or default_jobs(),  # ignored when executor is given
            allow_test=args.allow_test,
            progress=not args.no_progress,
            executor=executor,
            on_plan=lambda todo, total: plan.append((todo, total)),
        )
    for todo, total in plan:
        print(f"{PROG}: {todo} new cells, {total - todo} already in {results}", file=sys.stderr)
    return rows


def _note_seeds_beyond_protocol(worlds: list[str], seeds: list[int]) -> None:
    """Say so when seeds go beyond a roster's reporting protocol (allowed, but worth knowing)."""
    for name in worlds:
        if world_kind(name) not in ("roster", "roster-file"):
            continue
        try:
            protocol = get_roster(name).seeds
        except PrefduelError:
            continue  # the sweep reports the problem with the name
        beyond = [s for s in seeds if s >= protocol]
        if beyond:
            print(
                f"{PROG}: note: {name} is reported on seeds 0-{protocol - 1} in its protocol; "
                f"{len(beyond)} of the requested seeds are beyond them",
                file=sys.stderr,
            )


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    """Run the sweep and print the summary table of the requested grid (in text with its
    headlines and legend, `summary_report`)."""
    rows = _sweep_args(args, args.out)
    out.write(summary_report(rows, args.format))
    return 0


def cmd_leaderboard(args: argparse.Namespace, out: TextIO) -> int:
    """Run the grid (resuming from the results file) and write the leaderboard."""
    for path, what in ((args.md, "Markdown output (--md)"), (args.csv, "CSV output (--csv)")):
        output_file(path, what, SpecError)  # before the grid runs: nothing computed is lost
    rows = _sweep_args(args, args.results)
    summary = summarize_rows(rows)
    for path, fmt in ((args.md, "md"), (args.csv, "csv")):
        try:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(format_table(summary, fmt))
        except OSError as exc:
            raise SpecError(
                f"cannot write {path}: {exc.strerror or exc}; every row is kept in "
                f"{args.results}, and re-running the command writes the tables without "
                "recomputing"
            ) from None
    out.write(summary_report(rows, "text"))
    out.write(f"\nwrote {args.md} and {args.csv}\n")
    if not set(parse_names(EVALUATION_WORLDS)) & set(parse_names(args.worlds)):
        out.write(
            "note: these are not the evaluation rosters; the published leaderboard "
            f"(docs/baselines.md) is:\n  {EVALUATION_COMMAND}\n"
        )
    return 0


def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    """Summarize a results file (`prefduel.stats.sections.stats_report`)."""
    if not os.path.isfile(args.results):
        raise ResultsFileError(f"results file {args.results} does not exist")
    options = StatsOptions(
        worlds=args.worlds,
        policies=args.policies,
        competitor=args.competitor,
        curves=args.curves,
        window=args.window,
        by_profile=args.by_profile,
        allow_test=args.allow_test,
        fmt=args.format,
    )
    text = stats_report(ResultsStore(args.results, repair=False).rows(), options)
    if text is None:
        print(f"{PROG}: no rows in {args.results} match the filters", file=sys.stderr)
        return 1
    out.write(text)
    return 0
