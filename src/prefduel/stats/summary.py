"""The explained summary that ``prefduel run`` and ``prefduel leaderboard`` print: the tables,
each world's headline (the best policy against the next best, paired as ``prefduel stats
--competitor`` computes it) and one legend (the score's anchors, the unit of excess regret,
what stands behind a ±, the reference rows shown)."""

from __future__ import annotations

import textwrap
from typing import Any

from prefduel.core.document import NO_VALUE, Paragraph, number
from prefduel.policies.loading import display_names
from prefduel.stats.paired import paired_gains
from prefduel.stats.sections import interval
from prefduel.stats.table import (
    StatsBlock,
    format_table,
    render,
    replicates,
    summarize_rows,
    summary_blocks,
)

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
    "ref:oracle-prior-ask": "ref:oracle-prior that first asks its questions (most informative)",
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
    bounds = interval(gain["t_lo"], gain["t_hi"], 1, sign=True)
    versus = f"{start}excess regret vs the next best, {labels[runner_up]}: {change}"
    if bounds == NO_VALUE:
        return f"{versus} (one seed: no interval)"
    return (
        f"{versus} {bounds}\n"
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
