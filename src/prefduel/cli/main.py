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
import json
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

from prefduel import __version__
from prefduel.cli import (
    cache_cmd,
    datagen_cmd,
    pages_cmd,
    prefdisco_cmd,
    rank_cmd,
    report_cmd,
)
from prefduel.cli.argtypes import positive_int
from prefduel.core.errors import PrefduelError, ResultsFileError, SpecError
from prefduel.core.registry import parse_spec, split_specs
from prefduel.runner.distributed import dask_executor
from prefduel.runner.store import ResultsStore
from prefduel.runner.sweep import sweep, world_label
from prefduel.stats.paired import (
    learning_curve,
    paired_gains,
    profile_breakdown,
    round_curve,
)
from prefduel.stats.table import FORMATS, format_table, summarize_rows
from prefduel.worlds.rosters import ROSTERS, get_roster, get_world

PROG = "prefduel"
DEFAULT_POLICIES = "random,notransfer,pooled,coduel"
LEADERBOARD_WORLDS = "test-profiles,test-composite,test-quirky"
LEADERBOARD_POLICIES = (
    "random,notransfer,pooled,coduel,rucb,colstim,maxinp,coldb,dts-laplace,maxpair-ucb,"
    "meta-ts,hier-ts"
)


# -- argument parsing helpers ----------------------------------------------------------------


def parse_seeds(text: str) -> list[int]:
    """Parse a seed list: ``"0-31"``, ``"0,2,5"``, ``"0-3,8"`` (ranges inclusive).

    Raises:
        SpecError: naming the piece that is not a seed or a ``lo-hi`` range.
    """
    seeds: list[int] = []
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
        seeds.extend(range(first, last + 1))
    if not seeds:
        raise SpecError(f"seeds: no seeds in {text!r}")
    return list(dict.fromkeys(seeds))


def parse_names(text: str) -> list[str]:
    """Split a comma list of world names, dropping empty pieces."""
    return [p.strip() for p in text.split(",") if p.strip()]


def default_jobs() -> int:
    """Number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _add_scheduler(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the units on the Dask cluster of this scheduler, e.g. tcp://HOST:8786 "
        '(needs pip install "prefduel[dask]"); --jobs is then ignored',
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``prefduel``."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Benchmark personalization from pairwise preferences (TutorDuel).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    worlds = sub.add_parser(
        "worlds",
        help="list the rosters",
        description="List the TutorDuel rosters (generator version 2; ROSTER@1 names version 1), "
        "or describe the rosters and roster files given.",
    )
    worlds.add_argument(
        "rosters", nargs="*", metavar="ROSTER", help="roster ids or roster files (.yaml)"
    )

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
    run.add_argument(
        "--jobs", type=positive_int, default=None, help="worker processes (default: number of CPUs)"
    )
    _add_scheduler(run)
    run.add_argument(
        "--allow-test", action="store_true", help="allow the locked held-out test-* rosters"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--format", choices=FORMATS, default="text", help="table format")

    board = sub.add_parser(
        "leaderboard",
        help="run or read a grid and write the leaderboard",
        description="Run every unfinished cell (finished rows are read from RESULTS), then print "
        "the leaderboard per roster: score and excess regret, mean ± s.e. over seeds, sorted, "
        "reference rows marked; also written as Markdown and CSV.",
    )
    board.add_argument(
        "--worlds", default=LEADERBOARD_WORLDS, help=f"default: {LEADERBOARD_WORLDS}"
    )
    board.add_argument("--seeds", default="0-31", help="default: 0-31")
    board.add_argument("--policies", default=LEADERBOARD_POLICIES, help="comma list of specs")
    board.add_argument(
        "--results", default="results.jsonl", help="results file (read and extended)"
    )
    board.add_argument(
        "--md", default="leaderboard.md", help="Markdown output (default: %(default)s)"
    )
    board.add_argument("--csv", default="leaderboard.csv", help="CSV output (default: %(default)s)")
    board.add_argument(
        "--jobs", type=positive_int, default=None, help="worker processes (default: number of CPUs)"
    )
    _add_scheduler(board)
    board.add_argument(
        "--allow-test", action="store_true", help="allow the locked held-out test-* rosters"
    )
    board.add_argument("--no-progress", action="store_true", help="no progress bar")

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
    for module in (report_cmd, pages_cmd, cache_cmd, rank_cmd, datagen_cmd, prefdisco_cmd):
        COMMANDS.update(module.register(sub))
    return parser


# -- commands --------------------------------------------------------------------------------


def cmd_worlds(args: argparse.Namespace, out: TextIO) -> int:
    """Print the roster table (every built-in roster, or the rosters and roster files given)."""
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
    worlds, policies = parse_names(args.worlds), split_specs(args.policies)
    seeds = parse_seeds(args.seeds)
    cluster = (
        dask_executor(args.scheduler, worlds=worlds, policies=policies)
        if args.scheduler
        else contextlib.nullcontext()
    )
    with cluster as executor:
        return sweep(
            worlds,
            seeds,
            policies,
            results,
            jobs=args.jobs or default_jobs(),  # ignored when executor is given
            allow_test=args.allow_test,
            progress=not args.no_progress,
            executor=executor,
        )


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    """Run the sweep and print the summary table of the requested grid."""
    rows = _sweep_args(args, args.out)
    out.write(format_table(summarize_rows(rows), args.format))
    return 0


def cmd_leaderboard(args: argparse.Namespace, out: TextIO) -> int:
    """Run the grid (resuming from the results file) and write the leaderboard."""
    rows = _sweep_args(args, args.results)
    summary = summarize_rows(rows)
    for path, fmt in ((args.md, "md"), (args.csv, "csv")):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(format_table(summary, fmt))
    out.write(format_table(summary, "text"))
    out.write(f"\nwrote {args.md} and {args.csv}\n")
    return 0


def _policy_names(text: str) -> set[str]:
    """Names a ``--policies`` filter matches: as given, and canonical when it parses as a spec."""
    names = set()
    for spec in split_specs(text):
        names.add(spec)
        try:
            names.add(str(parse_spec(spec)))
        except SpecError:
            pass
    return names


def filter_rows(
    rows: list[dict[str, Any]], worlds: str | None, policies: str | None
) -> list[dict[str, Any]]:
    """Keep the rows of the listed worlds and policies (references stay unless ``ref:`` names
    are listed)."""
    if worlds:
        keep_worlds = {world_label(w) for w in parse_names(worlds)}
        rows = [r for r in rows if r.get("world") in keep_worlds]
    if policies:
        names = _policy_names(policies)
        refs_listed = any(n.startswith("ref:") for n in names)
        rows = [
            r
            for r in rows
            if r.get("policy") in names or (r.get("kind") == "reference" and not refs_listed)
        ]
    return rows


def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    """Summarize a results file: the table, paired gains vs the competitor, and on request
    curves and the per-profile breakdown. ``--format json`` writes one object with a key per
    section (``summary``, ``paired_gains``, ``curves``, ``by_profile``)."""
    if not os.path.isfile(args.results):
        raise ResultsFileError(f"results file {args.results} does not exist")
    all_rows = ResultsStore(args.results, repair=False).rows()
    rows = filter_rows(all_rows, args.worlds, args.policies)
    if not rows:
        print(f"{PROG}: no rows in {args.results} match the filters", file=sys.stderr)
        return 1
    summary = summarize_rows(rows)
    gains = _stats_gains(all_rows, args)
    policy_rows = [r for r in rows if r.get("kind") == "policy"]
    if args.format == "json":
        doc: dict[str, Any] = {"summary": json.loads(format_table(summary, "json"))}
        if gains is not None:
            doc["paired_gains"] = gains
        if args.curves:
            doc["curves"] = _curves(policy_rows, args.window)
        if args.by_profile:
            doc["by_profile"] = _profile_entries(rows, args)
        out.write(json.dumps(doc, indent=2) + "\n")
        return 0
    out.write(format_table(summary, args.format))
    if gains:
        out.write(format_gains(gains, args.format))
    if args.curves:
        out.write(format_curves(policy_rows, args))
    if args.by_profile:
        out.write(_profile_tables(_profile_entries(rows, args), args.format))
    return 0


def _stats_gains(
    all_rows: list[dict[str, Any]], args: argparse.Namespace
) -> list[dict[str, Any]] | None:
    """Paired gains vs ``--competitor`` (default ``random`` when the file has it; ``none``:
    no gains) among ``all_rows`` of ``--worlds``, listed for ``--policies``; None when not
    printed. The competitor is looked up among all policies, whatever ``--policies`` says."""
    competitor = "random" if args.competitor is None else args.competitor
    if competitor == "none":
        return None
    pool = [r for r in filter_rows(all_rows, args.worlds, None) if r.get("kind") == "policy"]
    if args.competitor is None and not any(r["policy"] == competitor for r in pool):
        return None
    try:
        gains = paired_gains(pool, competitor)
    except ValueError as exc:
        raise SpecError(f"--competitor: {exc}") from None
    if args.policies:
        names = _policy_names(args.policies)
        gains = [g for g in gains if g["policy"] in names]
    return gains


def _curves(rows: list[dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """Learning and per-round curves of every world and policy in ``rows``, in long form."""
    entries = []
    for world, policy in dict.fromkeys((r["world"], r["policy"]) for r in rows):
        cell = [r for r in rows if r["world"] == world and r["policy"] == policy]
        arrival = learning_curve(cell, world, policy, window=window)
        per_round = round_curve(cell)
        for kind, curve, xs in (
            ("arrival", arrival, arrival["arrival"]),
            ("round", per_round, per_round["round"]),
        ):
            entries += [
                {
                    "world": world,
                    "policy": policy,
                    "curve": kind,
                    "x": int(x),
                    "mean": float(curve["mean"][i]),
                    "lo": float(curve["lo"][i]),
                    "hi": float(curve["hi"][i]),
                    "seeds": int(curve["n"]),
                }
                for i, x in enumerate(xs)
            ]
    return entries


def format_curves(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """Learning curves (per arrival) and per-round curves as text, Markdown or CSV."""
    entries = _curves(rows, args.window)
    fields = ("world", "policy", "curve", "x", "mean", "lo", "hi", "seeds")
    if args.format == "csv":
        lines = [",".join(fields)] + [",".join(str(e[f]) for f in fields) for e in entries]
        return "\n".join(lines) + "\n"
    parts = []
    for world in dict.fromkeys(e["world"] for e in entries):
        mine = [e for e in entries if e["world"] == world]
        n_arrivals = max(e["x"] for e in mine if e["curve"] == "arrival") + 1
        checkpoints = sorted({*range(0, n_arrivals, 50), n_arrivals - 1})
        n_rounds = max(e["x"] for e in mine if e["curve"] == "round")
        rounds = sorted({1, *range(4, n_rounds + 1, 4)})
        for kind, xs, title in (
            (
                "arrival",
                checkpoints,
                f"{world}: excess regret per arrival (centered {args.window}-arrival mean, "
                "mean over seeds"
                + ("; [95% band]" if args.format == "md" else "; md/csv/json add 95% bands")
                + ")",
            ),
            ("round", rounds, f"{world}: mean excess regret per round (over arrivals and seeds)"),
        ):
            by_policy: dict[str, dict[int, dict[str, Any]]] = {}
            for e in mine:
                if e["curve"] == kind and e["x"] in xs:
                    by_policy.setdefault(e["policy"], {})[e["x"]] = e
            label = "arrival" if kind == "arrival" else "round"
            if args.format == "md":
                lines = ["", f"**{title}**", ""]
                lines.append("| policy | " + " | ".join(f"{label} {x}" for x in xs) + " |")
                lines.append("|---|" + "---:|" * len(xs))
                for policy, points in by_policy.items():
                    cells = [
                        f"{p['mean']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}]"
                        for p in (points[x] for x in xs)
                    ]
                    lines.append(f"| {policy} | " + " | ".join(cells) + " |")
            else:
                width = max(len(p) for p in by_policy)
                lines = ["", title]
                lines.append(" " * (width + 2) + "".join(f"{x:>8d}" for x in xs))
                for policy, points in by_policy.items():
                    values = "".join(f"{points[x]['mean']:8.3f}" for x in xs)
                    lines.append(f"  {policy:{width}s}{values}")
            parts.append("\n".join(lines))
    return "\n".join(parts) + "\n"


def _profile_entries(rows: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Per-profile breakdown of the ``--by-profile`` policy on every world in ``rows``."""
    try:
        policy = str(parse_spec(args.by_profile))
    except SpecError:
        policy = args.by_profile  # a file or module policy keeps its spec as written
    entries: list[dict[str, Any]] = []
    for world_name in dict.fromkeys(r["world"] for r in rows):
        world_rows = [r for r in rows if r["world"] == world_name and r["policy"] == policy]
        if not world_rows:
            continue
        table = profile_breakdown(
            world_rows,
            lambda seed, w=world_name: get_world(w, seed, allow_test=args.allow_test),
            policy,
        )
        entries += [{"world": world_name, "policy": policy, **e} for e in table]
    if not entries:
        raise SpecError(f"--by-profile: no rows for policy {policy!r}")
    return entries


def _profile_tables(entries: list[dict[str, Any]], fmt: str) -> str:
    """The per-profile breakdown as CSV, or text/Markdown lines per world."""
    if fmt == "csv":
        fields = ("world", "policy", "profile", "arrivals", "excess_mean", "excess_se")
        lines = [",".join(fields)] + [",".join(str(e[f]) for f in fields) for e in entries]
        return "\n".join(lines) + "\n"
    parts = []
    for world_name in dict.fromkeys(e["world"] for e in entries):
        mine = [e for e in entries if e["world"] == world_name]
        lines = [
            f"\n{mine[0]['policy']} on {world_name}: excess regret per arrival by hidden "
            "profile (worst served first)"
        ]
        lines += [
            f"  {e['profile']:40s} {e['arrivals']:6d} arrivals  "
            f"{e['excess_mean']:6.3f} ± {e['excess_se']:.3f}"
            for e in mine
        ]
        parts.append("\n".join(lines))
    return "\n".join(parts) + "\n"


def format_gains(gains: list[dict[str, Any]], fmt: str) -> str:
    """Paired relative changes in excess regret as text, Markdown or CSV."""
    fields = (
        "world",
        "policy",
        "competitor",
        "n",
        "change_mean",
        "t_lo",
        "t_hi",
        "boot_lo",
        "boot_hi",
    )
    if fmt == "csv":
        lines = [",".join(fields)]
        lines += [",".join(str(g[f]) for f in fields) for g in gains]
        return "\n".join(lines) + "\n"
    title = f"paired change in excess regret vs {gains[0]['competitor']}" if gains else ""
    if fmt == "md":
        lines = [
            "",
            f"**{title}**",
            "",
            "| world | policy | seeds | change | 95% t | 95% bootstrap |",
            "|---|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {g['world']} | {g['policy']} | {g['n']} | {g['change_mean']:+.1f}% | "
            f"[{g['t_lo']:+.1f}, {g['t_hi']:+.1f}] | [{g['boot_lo']:+.1f}, {g['boot_hi']:+.1f}] |"
            for g in gains
        ]
        return "\n".join(lines) + "\n"
    lines = ["", title]
    lines += [
        f"{g['world']:22s} {g['policy']:30s} n={g['n']:<3d} {g['change_mean']:+7.1f}%  "
        f"t [{g['t_lo']:+.1f}, {g['t_hi']:+.1f}]  bootstrap [{g['boot_lo']:+.1f}, "
        f"{g['boot_hi']:+.1f}]"
        for g in gains
    ]
    return "\n".join(lines) + "\n"


COMMANDS = {
    "worlds": cmd_worlds,
    "run": cmd_run,
    "leaderboard": cmd_leaderboard,
    "stats": cmd_stats,
}


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
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return COMMANDS[args.command](args, sys.stdout)
        except PrefduelError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"\n{PROG}: interrupted{_resume_hint(args)}", file=sys.stderr)
            return 130


def _resume_hint(args: argparse.Namespace) -> str:
    store = {"run": "out", "leaderboard": "results"}.get(args.command)
    if store is None:
        return ""
    path = getattr(args, store)
    return f"; finished rows are kept in {path}, and re-running the same command resumes"


if __name__ == "__main__":
    sys.exit(main())
