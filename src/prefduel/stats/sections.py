"""The sections of ``prefduel stats``: filtered rows, the summary table, paired gains vs a
competitor, learning and per-round curves, and the per-profile breakdown, as text, Markdown,
CSV or one JSON document (`stats_report`). Each section is made of
`prefduel.core.document.Table` objects written by the shared writers
(`prefduel.stats.table.render`); JSON holds the computed entries themselves.

The command line only reads the results file and prints what `stats_report` returns.
`summary_report` is the summary as ``prefduel run`` and ``prefduel leaderboard`` print it: in
text, each world's table with a headline (the best policy against the next best) and a legend
(units, samples, the reference rows shown).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prefduel.core.document import NO_VALUE, Cell, Section, Table, build_sections, number
from prefduel.core.errors import ResultsFileError, SpecError
from prefduel.core.registry import parse_spec, split_specs
from prefduel.runner.rows import number_problem, versions_note
from prefduel.runner.store import ResultsFileWarning
from prefduel.stats.ask_tables import ask_blocks, ask_json, ask_records
from prefduel.stats.paired import learning_curve, paired_gains, profile_breakdown, round_curve
from prefduel.stats.table import (
    StatsBlock,
    data_table,
    render,
    summarize_rows,
    summary_blocks,
    summary_records,
)
from prefduel.worlds.spec import get_world, world_label


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
        a key per section (``summary``, ``ask_tracks`` when some policy asked questions on
        an ask track, ``paired_gains``, ``curves``, ``by_profile``).

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
    inputs = _Inputs(
        rows=rows,
        summary=summarize_rows(rows),
        gains=_stats_gains(all_rows, options),
        policy_rows=[r for r in rows if r.get("kind") == "policy"],
        options=options,
    )
    parts = [part for part in PARTS if part.wanted(inputs)]
    if options.fmt == "json":
        doc = {part.key: part.data(inputs) for part in parts}
        return json.dumps(doc, indent=2) + "\n"
    sections = build_sections(inputs, [part.section for part in parts])
    return render([b for section in sections for b in section.blocks], options.fmt)


@dataclass(frozen=True)
class _Inputs:
    """What the parts of ``prefduel stats`` are built from."""

    rows: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    gains: list[dict[str, Any]] | None
    policy_rows: list[dict[str, Any]]
    options: StatsOptions


@dataclass(frozen=True)
class _Part:
    """A part of the ``stats`` output: its JSON key, whether the options ask for it, its JSON
    value, and its tables and paragraphs for the text formats."""

    key: str
    wanted: Callable[[_Inputs], bool]
    data: Callable[[_Inputs], Any]
    blocks: Callable[[_Inputs], list[StatsBlock]]

    def section(self, inputs: _Inputs) -> Section:
        """The part as a section of the output (`build_sections`)."""
        return Section(self.key, list(self.blocks(inputs)), id=self.key)


#: The parts of ``prefduel stats``, in order: a new part is one more entry.
PARTS = (
    _Part(
        "summary",
        lambda i: True,
        lambda i: summary_records(i.summary),
        lambda i: summary_blocks(i.summary, i.options.fmt),
    ),
    _Part(
        "ask_tracks",
        lambda i: bool(ask_records(i.rows)),
        lambda i: ask_json(i.rows),
        lambda i: ask_blocks(i.rows, i.options.fmt),
    ),
    _Part(
        "paired_gains",
        lambda i: i.gains is not None,
        lambda i: i.gains,
        lambda i: _gains_blocks(i.gains, i.options.fmt) if i.gains else [],
    ),
    _Part(
        "curves",
        lambda i: i.options.curves,
        lambda i: _curves(i.policy_rows, i.options.window),
        lambda i: _curve_blocks(i.policy_rows, i.options),
    ),
    _Part(
        "by_profile",
        lambda i: bool(i.options.by_profile),
        lambda i: _profile_entries(i.rows, i.options),
        lambda i: _profile_blocks(_profile_entries(i.rows, i.options), i.options.fmt),
    ),
)


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


_CURVE_FIELDS = ("world", "policy", "curve", "x", "mean", "lo", "hi", "seeds")


def _curve_blocks(rows: list[dict[str, Any]], options: StatsOptions) -> list[Table]:
    """Learning curves (per arrival) and per-round curves: the long-form data for ``csv``, else
    per world one table per kind at a few checkpoints (Markdown adds the 95% bands)."""
    entries = _curves(rows, options.window)
    if options.fmt == "csv":
        return [data_table(_CURVE_FIELDS, entries)]
    bands = options.fmt == "md"
    band_note = "; [95% band]" if bands else "; md/csv/json add 95% bands"
    tables = []
    for world in dict.fromkeys(e["world"] for e in entries):
        mine = [e for e in entries if e["world"] == world]
        n_arrivals = max(e["x"] for e in mine if e["curve"] == "arrival") + 1
        n_rounds = max(e["x"] for e in mine if e["curve"] == "round")
        arrival_title = (
            f"{world}: excess regret per arrival (centered {options.window}-arrival mean, "
            f"mean over seeds{band_note})"
        )
        round_title = f"{world}: mean excess regret per round (over arrivals and seeds)"
        checkpoints = sorted({*range(0, n_arrivals, 50), n_arrivals - 1})
        rounds = sorted({1, *range(4, n_rounds + 1, 4)})
        tables.append(_curve_table(mine, "arrival", checkpoints, arrival_title, bands))
        tables.append(_curve_table(mine, "round", rounds, round_title, bands))
    return tables


def _curve_table(
    entries: list[dict[str, Any]], kind: str, xs: list[int], title: str, bands: bool
) -> Table:
    """One world's ``kind`` curve (``arrival`` or ``round``) of every policy at ``xs``."""
    by_policy: dict[str, dict[int, dict[str, Any]]] = {}
    for e in entries:
        if e["curve"] == kind and e["x"] in xs:
            by_policy.setdefault(e["policy"], {})[e["x"]] = e
    head = [f"{kind} {x}" if bands else str(x) for x in xs]
    rows = [
        [policy, *(_curve_cell(points[x], bands) for x in xs)]
        for policy, points in by_policy.items()
    ]
    return Table(["policy", *head], rows, title=title, align=("left", *["right"] * len(xs)))


def _curve_cell(point: dict[str, Any], bands: bool) -> str:
    """The mean at a checkpoint, with its ``[lo, hi]`` band if asked and defined."""
    band = interval(point["lo"], point["hi"], 3)
    mean = number(point["mean"], 3)
    return f"{mean} {band}" if bands and band != NO_VALUE else mean


def interval(lo: float, hi: float, digits: int, sign: bool = False) -> str:
    """``[lo, hi]``, or `NO_VALUE` when a bound is undefined (a single seed)."""
    if math.isnan(lo) or math.isnan(hi):
        return NO_VALUE
    return f"[{number(lo, digits, sign)}, {number(hi, digits, sign)}]"


def format_curves(rows: list[dict[str, Any]], options: StatsOptions) -> str:
    """Learning curves (per arrival) and per-round curves as text, Markdown or CSV."""
    return render(_curve_blocks(rows, options), options.fmt)


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


_PROFILE_FIELDS = ("world", "policy", "profile", "arrivals", "excess_mean", "excess_se")


def _profile_blocks(entries: list[dict[str, Any]], fmt: str) -> list[Table]:
    """The per-profile breakdown: the long-form data for ``csv``, else one table per world."""
    if fmt == "csv":
        return [data_table(_PROFILE_FIELDS, entries)]
    tables = []
    for world_name in dict.fromkeys(e["world"] for e in entries):
        mine = [e for e in entries if e["world"] == world_name]
        rows = [
            [
                e["profile"],
                e["arrivals"],
                Cell(number(e["excess_mean"], 3), se=number(e["excess_se"], 3)),
            ]
            for e in mine
        ]
        title = (
            f"{mine[0]['policy']} on {world_name}: excess regret per arrival by hidden "
            "profile (worst served first)"
        )
        columns = ["profile", "arrivals", "excess (mean ± s.e.)"]
        tables.append(Table(columns, rows, title=title, align=("left", "right", "right")))
    return tables


_GAIN_FIELDS = ("world", "policy", "competitor", "n", "change_mean")
_GAIN_FIELDS += ("t_lo", "t_hi", "boot_lo", "boot_hi")


def _gains_blocks(gains: list[dict[str, Any]], fmt: str) -> list[Table]:
    """Paired relative changes in excess regret: the long-form data for ``csv``, else one table
    (none for no gains)."""
    if fmt == "csv":
        return [data_table(_GAIN_FIELDS, gains)]
    if not gains:
        return []
    rows = [
        [
            g["world"],
            g["policy"],
            g["n"],
            number(g["change_mean"], 1, sign=True, suffix="%"),
            interval(g["t_lo"], g["t_hi"], 1, sign=True),
            interval(g["boot_lo"], g["boot_hi"], 1, sign=True),
        ]
        for g in gains
    ]
    columns = ["world", "policy", "seeds", "change", "95% t", "95% bootstrap"]
    title = f"paired change in excess regret vs {gains[0]['competitor']}"
    return [Table(columns, rows, title=title, align=("left", "left", *["right"] * 4))]


def format_gains(gains: list[dict[str, Any]], fmt: str) -> str:
    """Paired relative changes in excess regret as text, Markdown or CSV."""
    return render(_gains_blocks(gains, fmt), fmt)
