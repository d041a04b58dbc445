"""Summary tables: score and excess regret, mean ± standard error over seeds.

`summarize_rows` reduces result rows to one entry per ``(world, policy)``;
`format_table` prints the entries per world, best score first, as text, Markdown, CSV or
JSON. Reference rows (floor, random, oracles) are marked so they are not read as policies.
Every table is a `prefduel.core.document.Table` written by the shared writers (`render`);
JSON is the entries themselves (`summary_records`). A row marked ``"undefined"`` (a reference
the world cannot define, e.g. ``ref:rater-top2`` on a constant rater feature; see
`prefduel.runner.references`) is left out of the means and shown as ``undefined`` with its
reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from prefduel.core.document import NO_VALUE, Cell, Paragraph, Table, number
from prefduel.core.document_text import markdown_escape, table_csv, table_markdown, table_text
from prefduel.policies.loading import display_names
from prefduel.stats.asking import asked_per_arrival, order_worlds, track_of
from prefduel.worlds.spec import parse_world, world_kind
from prefduel.worlds.votes import GENERATOR as VOTES

FORMATS = ("text", "md", "csv", "json")

#: Shown instead of a standard error computed from a single seed (the documents' missing value).
NO_SE = NO_VALUE


def replicates(world: str) -> str:
    """What the seeds of ``world`` are replicates of, i.e. what stands behind a ``±``.

    Seeds of a roster (or roster file) are independent worlds: new students, questions,
    utilities and clicks. Seeds of a stored world share its judged data: each is one arrival
    order and one set of click draws (`prefduel.worlds.world.replicate`); those of a world
    built from a vote log also redraw the utilities (`prefduel.worlds.votes.votes_replicate`).
    """
    if world_kind(world) == "stored":
        if parse_world(world).generator == VOTES:
            return (
                "1 world built from a vote log: each seed re-orders its arrivals and redraws "
                "their utilities from the voters' posteriors, and the clicks"
            )
        return "1 stored world: each seed re-orders its arrivals and redraws its clicks"
    return "each seed an independent world"


def _mean_se(values: list[float]) -> tuple[float, float | None]:
    """Mean and standard error ``std(ddof=1) / sqrt(n)``; the s.e. is None when ``n = 1``."""
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if arr.size < 2:
        return mean, None
    return mean, float(arr.std(ddof=1) / np.sqrt(arr.size))


def summarize_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary entry per ``(world, policy)`` over its seeds.

    Args:
        rows: Result rows (``kind``, ``world``, ``seed``, ``policy``, ``score``, ``excess``, ...),
            at most one per ``(kind, world, seed, policy)``.

    Returns:
        Entries ``{world, policy, kind, n, seeds, score_mean, score_se, excess_mean,
        excess_se, ask_budget, asked_per_arrival}`` (``*_se`` is None for a single seed;
        ``ask_budget`` the world's ask track, 0 without one; ``asked_per_arrival`` the
        questions asked per arrival, mean over seeds, None when a row does not say). Worlds
        come in order of first appearance, the ask tracks of a world together by budget
        (`prefduel.stats.asking.order_worlds`); within a world, by score descending (ties by
        policy name). Rows marked ``undefined`` are left out: their entry gets ``undefined``
        (the reason) and ``undefined_seeds``, and None means when no seed is defined (such
        entries come last).

    Raises:
        ValueError: if a row is missing a field or a ``(world, policy, seed)`` appears twice.
    """
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for index, row in enumerate(rows):
        try:
            world, policy, seed = row["world"], row["policy"], row["seed"]
            kind, value, excess = row.get("kind", "policy"), row["score"], row["excess"]
        except KeyError as exc:
            raise ValueError(f"row {index} has no field {exc}") from None
        group = groups.setdefault(
            (world, policy), {"kind": kind, "seeds": {}, "undefined": {}, "asked": []}
        )
        if seed in group["seeds"] or seed in group["undefined"]:
            raise ValueError(f"world {world!r}, policy {policy!r}: seed {seed} appears twice")
        if row.get("undefined"):
            group["undefined"][seed] = str(row["undefined"])
        else:
            group["seeds"][seed] = (float(value), float(excess))
            group["asked"].append(asked_per_arrival(row))
    summary = [_entry(world, policy, g) for (world, policy), g in groups.items()]
    world_order = {w: i for i, w in enumerate(order_worlds(w for w, _ in groups))}
    summary.sort(key=lambda e: (world_order[e["world"]], *_rank(e)))
    return summary


def _rank(entry: dict[str, Any]) -> tuple[bool, float, str]:
    """Sort key within a world: best score first, entries without a score last."""
    mean = entry["score_mean"]
    return mean is None, -mean if mean is not None else 0.0, entry["policy"]


def _entry(world: str, policy: str, group: dict[str, Any]) -> dict[str, Any]:
    seeds = sorted(group["seeds"])
    entry: dict[str, Any] = {
        "world": world,
        "policy": policy,
        "kind": group["kind"],
        "n": len(seeds),
        "seeds": seeds,
        "score_mean": None,
        "score_se": None,
        "excess_mean": None,
        "excess_se": None,
        "ask_budget": track_of(world)[1],
        "asked_per_arrival": None,
    }
    if seeds and None not in group["asked"]:
        entry["asked_per_arrival"] = float(np.mean(group["asked"]))
    if seeds:
        scores = [group["seeds"][s][0] for s in seeds]
        excesses = [group["seeds"][s][1] for s in seeds]
        entry["score_mean"], entry["score_se"] = _mean_se(scores)
        entry["excess_mean"], entry["excess_se"] = _mean_se(excesses)
    if group["undefined"]:
        entry["undefined"] = next(iter(group["undefined"].values()))
        entry["undefined_seeds"] = sorted(group["undefined"])
    return entry


# -- formatting ------------------------------------------------------------------------------


def _by_world(summary: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Entries grouped by world (first-appearance order), each sorted by score descending."""
    worlds: dict[str, list[dict[str, Any]]] = {}
    for entry in summary:
        worlds.setdefault(entry["world"], []).append(entry)
    for entries in worlds.values():
        entries.sort(key=_rank)
    return worlds


def _mean_se_cell(mean: float | None, se: float | None, digits: int) -> Cell:
    """``mean ± se`` (`NO_SE` for one seed); a non-finite mean is printed alone; no mean
    (every seed undefined) is ``undefined``."""
    if mean is None:
        return Cell("undefined")
    if not math.isfinite(mean):
        return Cell(str(mean))
    return Cell(number(mean, digits), se=number(se, digits))


def undefined_note(entry: dict[str, Any]) -> str | None:
    """Why an entry is (partly) undefined, for a note under its table; None when defined."""
    if "undefined" not in entry:
        return None
    seeds = entry.get("undefined_seeds") or []
    where = ""
    if entry["score_mean"] is not None:
        where = f" in {len(seeds)} seed{'s' * (len(seeds) != 1)} {seeds}, left out of the mean"
    return f"{entry['policy']}: undefined{where}: {entry['undefined']}"


def track_text(world: str) -> str:
    """``ask track: up to B questions per arrival`` for a world on an ask track, else ""."""
    budget = track_of(world)[1]
    if not budget:
        return ""
    return f"ask track: up to {budget} question{'s' * (budget != 1)} per arrival"


def world_heading(world: str) -> str:
    """What stands behind a world's table: its ask track (if any) and what a seed is."""
    track = track_text(world)
    return f"{track}; {replicates(world)}" if track else replicates(world)


def _world_table(
    world: str, entries: list[dict[str, Any]], labels: dict[str, str] | None = None
) -> Table:
    """The summary table of one world: policy, seeds, score and excess regret mean ± s.e.
    (on an ask track also the questions asked per arrival), titled with the track and what
    the seeds are replicates of; references are ``ref`` rows. Policies are shown by their
    ``labels`` (short names of user policies) where given."""
    labels = labels or {}
    track = bool(track_of(world)[1])
    columns = ["policy", "seeds", "score (mean ± s.e.)", "excess (mean ± s.e.)"]
    rows: list[list[Any]] = [
        [
            labels.get(e["policy"], e["policy"]),
            e["n"],
            _mean_se_cell(e["score_mean"], e["score_se"], 2),
            _mean_se_cell(e["excess_mean"], e["excess_se"], 1),
        ]
        for e in entries
    ]
    if track:
        columns.append("asked / arrival")
        for row, e in zip(rows, entries, strict=True):
            asked = e.get("asked_per_arrival")
            row.append(NO_VALUE if asked is None else number(asked, 2))
    return Table(
        columns,
        rows,
        title=f"world: {world} ({world_heading(world)})",
        row_tones=["ref" if e.get("kind") == "reference" else "" for e in entries],
        key="summary",
        align=("left", *["right"] * (len(columns) - 1)),
        header_rule=True,
        ref_marker="[ref]",
        escape_emphasis=True,
    )


def summary_records(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries with their ``replicates`` (the JSON of ``--format json``), ordered as the
    tables are."""
    return [
        {**e, "replicates": replicates(world)}
        for world, entries in _by_world(summary).items()
        for e in entries
    ]


#: What `render` writes: tables, and paragraphs (already Markdown in the ``md`` format).
StatsBlock = Table | Paragraph

_CSV_FIELDS = ("world", "policy", "kind", "n", "score_mean", "score_se", "excess_mean")
_CSV_FIELDS += ("excess_se", "ask_budget", "asked_per_arrival", "replicates")


def data_table(fields: Sequence[str], entries: Iterable[dict[str, Any]]) -> Table:
    """A long-form data table: one row per entry, values as ``str`` (None as empty), for CSV."""
    return Table(
        list(fields),
        [["" if e.get(f) is None else str(e[f]) for f in fields] for e in entries],
    )


def summary_blocks(summary: list[dict[str, Any]], fmt: str) -> list[StatsBlock]:
    """The summary for ``fmt``, to print with `render`.

    Args:
        summary: Entries from `summarize_rows`.
        fmt: ``text`` (a table per world, titled with what its seeds are replicates of),
            ``md`` (per world a heading, the replicates line and the table, then a note on
            the italic reference rows) or ``csv`` (one long-form data table).

    Returns:
        Tables and (Markdown) paragraphs; none for no entries except the CSV header.
    """
    worlds = _by_world(summary)
    if fmt == "csv":
        return [data_table(_CSV_FIELDS, summary_records(summary))]
    labels = display_names(e["policy"] for e in summary)
    named = label_note(labels)
    if fmt != "md":
        blocks: list[StatsBlock] = []
        for world, entries in worlds.items():
            blocks.append(_world_table(world, entries, labels))
            blocks += [Paragraph(n) for e in entries if (n := undefined_note(e))]
        return blocks + ([Paragraph(named)] if named else [])
    blocks = []
    for world, entries in worlds.items():
        blocks.append(Paragraph(f"### {markdown_escape(world, emphasis=True)}"))
        heading = markdown_escape(world_heading(world), True)
        blocks.append(Paragraph(f"± over seeds; {heading}."))
        blocks.append(replace(_world_table(world, entries, labels), title=""))
        notes = [n for e in entries if (n := undefined_note(e))]
        blocks += [Paragraph(markdown_escape(n, emphasis=True)) for n in notes]
    if blocks:
        note = "*Italic rows are references computed from the utilities, not policies.*"
        blocks.append(Paragraph(note))
    if named:
        blocks.append(Paragraph(markdown_escape(named, emphasis=True)))
    return blocks


def label_note(labels: dict[str, str]) -> str | None:
    """``policies shown by name: LABEL = SPEC, ...`` for the policies whose label is not their
    spec (user policies named by their class), or None when every label is the spec."""
    renamed = [f"{label} = {spec}" for spec, label in labels.items() if label != spec]
    return "policies shown by name: " + "; ".join(renamed) if renamed else None


def render(blocks: Sequence[StatsBlock], fmt: str) -> str:
    """Blocks as ``prefduel stats`` prints them, each through the shared document writers.

    Args:
        blocks: Tables and paragraphs (a paragraph's text is already Markdown for ``md``).
        fmt: ``text`` or ``md``: tables (`table_text`, `table_markdown`) and paragraphs
            separated by blank lines; ``csv``: the tables one after the other (`table_csv`).

    Returns:
        The output, ending with a newline; "" for no blocks.
    """
    if fmt == "csv":
        return "".join(table_csv(b) for b in blocks if isinstance(b, Table))
    write = table_markdown if fmt == "md" else table_text
    parts = [write(b) if isinstance(b, Table) else b.text for b in blocks]
    return "\n\n".join(parts) + "\n" if parts else ""


def format_table(summary: list[dict[str, Any]], fmt: str = "text") -> str:
    """Format `summarize_rows` output: one table per world, best score first.

    Columns: policy, seeds, score mean ± s.e., excess mean ± s.e. (s.e. "–" for one seed).
    References are marked ``[ref]`` in text and set in italics in Markdown; CSV and JSON carry
    a ``kind`` column and leave the s.e. empty/null for one seed.

    Args:
        summary: Entries from `summarize_rows`.
        fmt: ``"text"``, ``"md"``, ``"csv"`` or ``"json"``.

    Raises:
        ValueError: for an unknown format.
    """
    if fmt not in FORMATS:
        known = ", ".join(FORMATS)
        raise ValueError(f"unknown table format {fmt!r}; expected one of {known}")
    if fmt == "json":
        return json.dumps(summary_records(list(summary)), indent=2) + "\n"
    return render(summary_blocks(list(summary), fmt), fmt)
