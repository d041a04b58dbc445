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
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any

from prefduel.core.document import NO_VALUE, Cell, Paragraph, Table, number
from prefduel.core.errors import ResultsFileError, SpecError
from prefduel.core.registry import parse_spec, split_specs
from prefduel.policies.loading import display_names
from prefduel.runner.rows import number_problem, versions_note
from prefduel.runner.store import ResultsFileWarning
from prefduel.stats.paired import learning_curve, paired_gains, profile_breakdown, round_curve
from prefduel.stats.table import (
    StatsBlock,
    data_table,
    format_table,
    render,
    replicates,
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
        doc: dict[str, Any] = {"summary": summary_records(summary)}
        if gains is not None:
            doc["paired_gains"] = gains
        if options.curves:
            doc["curves"] = _curves(policy_rows, options.window)
        if options.by_profile:
            doc["by_profile"] = _profile_entries(rows, options)
        return json.dumps(doc, indent=2) + "\n"
    blocks = summary_blocks(summary, options.fmt)
    if gains:
        blocks += _gains_blocks(gains, options.fmt)
    if options.curves:
        blocks += _curve_blocks(policy_rows, options)
    if options.by_profile:
        blocks += _profile_blocks(_profile_entries(rows, options), options.fmt)
    return render(blocks, options.fmt)


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
    band = _interval(point["lo"], point["hi"], 3)
    mean = number(point["mean"], 3)
    return f"{mean} {band}" if bands and band != NO_VALUE else mean


def _interval(lo: float, hi: float, digits: int, sign: bool = False) -> str:
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
            _interval(g["t_lo"], g["t_hi"], 1, sign=True),
            _interval(g["boot_lo"], g["boot_hi"], 1, sign=True),
        ]
        for g in gains
    ]
    columns = ["world", "policy", "seeds", "change", "95% t", "95% bootstrap"]
    title = f"paired change in excess regret vs {gains[0]['competitor']}"
    return [Table(columns, rows, title=title, align=("left", "left", *["right"] * 4))]


def format_gains(gains: list[dict[str, Any]], fmt: str) -> str:
    """Paired relative changes in excess regret as text, Markdown or CSV."""
    return render(_gains_blocks(gains, fmt), fmt)


# -- the explained summary of ``prefduel run`` and ``prefduel leaderboard`` -------------------

#: Where the reference rows are described in full.
REFERENCE_DOCS = "docs/tutorduel.md#reference-rows"

#: One line per reference row (`prefduel.runner.references.REFERENCES`), for the legend.
REFERENCE_LEGEND = {
    "ref:floor": "the user's two best answers every round (score 100 by definition)",
    "ref:random": "uniformly random pairs, exact expectation (score 0 by definition)",
    "ref:best-single-pair": "one fixed pair for every user: the best one in hindsight",
    "ref:best-pair-per-user": "each user's best fixed pair, chosen in hindsight",
    "ref:oracle-user": "each user's linear utility model fitted in hindsight; its top two",
    "ref:oracle-pooled": "one linear model for all users fitted in hindsight; its top two",
    "ref:rater-top2": "the two answers the rater scores highest (no learning)",
    "ref:oracle-prior": "learns from clicks with the other users' true models as prior",
    "ref:oracle-prior-lookahead": "ref:oracle-prior choosing pairs by a 4-round lookahead",
}


def summary_report(rows: list[dict[str, Any]], fmt: str = "text") -> str:
    """The summary table as ``prefduel run`` and ``prefduel leaderboard`` print it.

    In ``text``, each world's table is followed by its headline (`headline`) and the tables
    by a legend (`legend`); ``md``, ``csv`` and ``json`` are `format_table`'s output unchanged.

    Args:
        rows: Result rows of the grid (policies and references).
        fmt: ``text``, ``md``, ``csv`` or ``json``.
    """
    summary = summarize_rows(rows)
    if fmt != "text":
        return format_table(summary, fmt)
    blocks: list[StatsBlock] = []
    for world in dict.fromkeys(e["world"] for e in summary):
        entries = [e for e in summary if e["world"] == world]
        blocks += summary_blocks(entries, "text")
        line = headline(entries, [r for r in rows if r["world"] == world])
        blocks += [Paragraph(line)] if line else []
    if summary:
        blocks.append(Paragraph(legend(summary, rows)))
    return render(blocks, "text")


def headline(entries: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str | None:
    """The best policy of one world against the next best: the paired relative change in
    excess regret and its 95% t interval, from `paired_gains` as ``stats --competitor`` has it.

    Args:
        entries: The world's `summarize_rows` entries, best score first.
        rows: The world's result rows.

    Returns:
        Two lines, or None when the world has fewer than two scored policies.
    """
    ranked = [e["policy"] for e in entries if e["kind"] == "policy" and e["score_mean"] is not None]
    if len(ranked) < 2:
        return None
    best, runner_up = ranked[:2]
    labels = display_names(ranked[:2])
    start = f"best policy on {entries[0]['world']}: {labels[best]}; "
    pool = [r for r in rows if r.get("kind", "policy") == "policy"]
    gain = next((g for g in paired_gains(pool, runner_up) if g["policy"] == best), None)
    if gain is None:  # no seed in common, or a seed where the runner-up has no excess regret
        return (
            f"{start}next best {labels[runner_up]} (no paired relative change: see "
            "prefduel stats)"
        )
    change = number(gain["change_mean"], 1, sign=True, suffix="%")
    interval = _interval(gain["t_lo"], gain["t_hi"], 1, sign=True)
    versus = f"{start}excess regret vs the next best, {labels[runner_up]}: {change}"
    if interval == NO_VALUE:
        return f"{versus} (one seed: no interval)"
    return (
        f"{versus} {interval}\n"
        f"  (paired by seed over {gain['n']} seeds, 95% t interval: "
        f"prefduel stats --competitor {runner_up})"
    )


def legend(summary: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    """What the columns of the summary mean: the score's anchors, the unit of excess regret
    (with each world's arrivals and rounds), what stands behind a ±, and one line per
    reference row shown (first appearance order), pointing to `REFERENCE_DOCS`."""
    sizes: dict[str, tuple[int, int]] = {}
    for row in rows:
        if "excess_per_arrival" in row and "excess_per_round" in row:
            size = (len(row["excess_per_arrival"]), len(row["excess_per_round"]))
            sizes.setdefault(row["world"], size)
    dims = "; ".join(f"{w}: {n} arrivals x {s} rounds" for w, (n, s) in sizes.items())
    if len(sizes) > 1 and len({s for _, s in sizes.values()}) == 1:
        rounds = next(iter(sizes.values()))[1]
        dims = ", ".join(f"{w}: {n}" for w, (n, _) in sizes.items())
        dims += f" arrivals x {rounds} rounds"
    counts = sorted({e["n"] for e in summary if e["n"]})
    seeds = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    kinds = list(dict.fromkeys(replicates(e["world"]) for e in summary))
    what = kinds[0] if len(kinds) == 1 else "what a seed is: see each table's title"
    lines = [
        "score: uniformly random pairs 0, the floor 100; higher is better.",
        "excess: excess regret R - G; lower is better. R sums the regret of the shown pair, "
        "2 U* - U_i - U_j (utilities in [0, 1]), over every round of every arrival "
        f"({dims or 'all arrivals and rounds'}); G is the same sum for the floor.",
        f"±: standard error of the mean over {seeds} seed{'s' * (counts != [1])} ({what}).",
    ]
    refs = [e["policy"] for e in summary if e["kind"] == "reference"]
    if refs:
        lines.append(
            f"[ref] rows: references from the hidden utilities, not policies ({REFERENCE_DOCS}):"
        )
    lines = [
        textwrap.fill(line, 100, subsequent_indent="  ", break_on_hyphens=False) for line in lines
    ]
    if refs:
        width = max(len(name) for name in refs) + 2
        for name in dict.fromkeys(refs):
            text = REFERENCE_LEGEND.get(name, f"see {REFERENCE_DOCS}")
            lines.append(f"  {name:<{width}}{text}")
    return "\n".join(lines)
