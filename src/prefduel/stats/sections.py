"""The sections of ``prefduel stats``: filtered rows, the summary table, paired gains vs a
competitor, learning and per-round curves, and the per-profile breakdown, as text, Markdown,
CSV or one JSON document (`stats_report`).

The command line only reads the results file and prints what `stats_report` returns.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

from prefduel.core.errors import ResultsFileError, SpecError
from prefduel.core.registry import parse_spec, split_specs
from prefduel.runner.rows import number_problem, versions_note
from prefduel.runner.store import ResultsFileWarning
from prefduel.runner.sweep import world_label
from prefduel.stats.paired import learning_curve, paired_gains, profile_breakdown, round_curve
from prefduel.stats.table import format_table, summarize_rows
from prefduel.worlds.rosters import get_world


@dataclass(frozen=True)
class StatsOptions:
    """What `stats_report` shows (the options of ``prefduel stats``).

    Attributes:
        worlds: Comma list of worlds to keep (None: all).
        policies: Comma list of policy specs to keep (references stay unless ``ref:`` names
            are listed; None: all).
        competitor: Paired gains vs this policy; None: ``random`` when the rows have it;
            ``"none"``: no gains.
        curves: Add learning and per-round curves.
        window: Moving-mean window of the learning curves (arrivals).
        by_profile: Add the per-profile breakdown of this policy.
        allow_test: Needed to read the students of locked rosters (``by_profile``).
        fmt: ``text``, ``md``, ``csv`` or ``json``.
    """

    worlds: str | None = None
    policies: str | None = None
    competitor: str | None = None
    curves: bool = False
    window: int = 25
    by_profile: str | None = None
    allow_test: bool = False
    fmt: str = "text"


def stats_report(all_rows: list[dict[str, Any]], options: StatsOptions) -> str | None:
    """The ``prefduel stats`` output for the rows of a results file.

    Args:
        all_rows: Every row of the file (paired gains look up the competitor among all of
            them, whatever ``options.policies`` says).
        options: The sections and format.

    Returns:
        The text to print; None when no row matches the filters. ``json`` is one object with
        a key per section (``summary``, ``paired_gains``, ``curves``, ``by_profile``).

    Raises:
        SpecError: an unknown competitor or a ``by_profile`` policy without rows.
        ResultsFileError: a row whose score or excess is not a finite number (named).

    Warns:
        ResultsFileWarning: the rows shown were written by several package versions.
    """
    rows = filter_rows(all_rows, options.worlds, options.policies)
    if not rows:
        return None
    bad = [(row, problem) for row in rows if (problem := number_problem(row))]
    if bad:
        row, problem = bad[0]
        raise ResultsFileError(
            f"{len(bad)} row(s) cannot be summarized; the first: world {row.get('world')!r}, "
            f"seed {row.get('seed')}, policy {row.get('policy')!r}: {problem}"
        )
    note = versions_note(rows)
    if note:
        warnings.warn(
            f"{note}; means over them pool results of different code. Re-run with one version "
            "into a new file, or filter with --worlds/--policies",
            ResultsFileWarning,
            stacklevel=2,
        )
    summary = summarize_rows(rows)
    gains = _stats_gains(all_rows, options)
    policy_rows = [r for r in rows if r.get("kind") == "policy"]
    if options.fmt == "json":
        doc: dict[str, Any] = {"summary": json.loads(format_table(summary, "json"))}
        if gains is not None:
            doc["paired_gains"] = gains
        if options.curves:
            doc["curves"] = _curves(policy_rows, options.window)
        if options.by_profile:
            doc["by_profile"] = _profile_entries(rows, options)
        return json.dumps(doc, indent=2) + "\n"
    parts = [format_table(summary, options.fmt)]
    if gains:
        parts.append(format_gains(gains, options.fmt))
    if options.curves:
        parts.append(format_curves(policy_rows, options))
    if options.by_profile:
        parts.append(_profile_tables(_profile_entries(rows, options), options.fmt))
    return "".join(parts)


def parse_names(text: str) -> list[str]:
    """Split a comma list of world names, dropping empty pieces."""
    return [p.strip() for p in text.split(",") if p.strip()]


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


def _stats_gains(
    all_rows: list[dict[str, Any]], options: StatsOptions
) -> list[dict[str, Any]] | None:
    """Paired gains vs ``--competitor`` (default ``random`` when the file has it; ``none``:
    no gains) among ``all_rows`` of ``--worlds``, listed for ``--policies``; None when not
    printed. The competitor is looked up among all policies, whatever ``--policies`` says."""
    competitor = "random" if options.competitor is None else options.competitor
    if competitor == "none":
        return None
    pool = [r for r in filter_rows(all_rows, options.worlds, None) if r.get("kind") == "policy"]
    if options.competitor is None and not any(r["policy"] == competitor for r in pool):
        return None
    try:
        gains = paired_gains(pool, competitor)
    except ValueError as exc:
        raise SpecError(f"--competitor: {exc}") from None
    if options.policies:
        names = _policy_names(options.policies)
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


def format_curves(rows: list[dict[str, Any]], options: StatsOptions) -> str:
    """Learning curves (per arrival) and per-round curves as text, Markdown or CSV."""
    entries = _curves(rows, options.window)
    fields = ("world", "policy", "curve", "x", "mean", "lo", "hi", "seeds")
    if options.fmt == "csv":
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
                f"{world}: excess regret per arrival (centered {options.window}-arrival mean, "
                "mean over seeds"
                + ("; [95% band]" if options.fmt == "md" else "; md/csv/json add 95% bands")
                + ")",
            ),
            ("round", rounds, f"{world}: mean excess regret per round (over arrivals and seeds)"),
        ):
            by_policy: dict[str, dict[int, dict[str, Any]]] = {}
            for e in mine:
                if e["curve"] == kind and e["x"] in xs:
                    by_policy.setdefault(e["policy"], {})[e["x"]] = e
            label = "arrival" if kind == "arrival" else "round"
            if options.fmt == "md":
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


def _profile_entries(rows: list[dict[str, Any]], options: StatsOptions) -> list[dict[str, Any]]:
    """Per-profile breakdown of the ``--by-profile`` policy on every world in ``rows``."""
    try:
        policy = str(parse_spec(options.by_profile))
    except SpecError:
        policy = options.by_profile  # a file or module policy keeps its spec as written
    entries: list[dict[str, Any]] = []
    for world_name in dict.fromkeys(r["world"] for r in rows):
        world_rows = [r for r in rows if r["world"] == world_name and r["policy"] == policy]
        if not world_rows:
            continue
        table = profile_breakdown(
            world_rows,
            lambda seed, w=world_name: get_world(w, seed, allow_test=options.allow_test),
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
