"""The ask tracks as records and tables, shared by ``prefduel stats`` and ``prefduel report``.

`ask_records` merges, per world, policy and budget, the score against the budget
(`prefduel.stats.asking.budget_curves`), the clicks-equivalent of a question
(`prefduel.stats.asking.clicks_equivalent`) and the priced score
(`prefduel.stats.asking.priced_scores`) into one long-form record; `budget_table` and
`worth_table` lay out one world's records as `prefduel.core.document.Table` objects.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from prefduel.core.document import NO_VALUE, Cell, Paragraph, Table, number
from prefduel.core.document_text import markdown_escape
from prefduel.stats.asking import (
    LAM_TABLE,
    budget_curves,
    clicks_equivalent,
    never_asked,
    priced_at,
    priced_scores,
)

#: Fields of a record, in the order of the CSV.
ASK_FIELDS = (
    "world",
    "policy",
    "budget",
    "n",
    "score_mean",
    "score_se",
    "asked_per_arrival",
    "rounds_saved",
    "clicks_per_question",
    "clicks_at_least",
    "clicks_undefined",
    "break_even",
    *(f"priced_{lam:g}" for lam in LAM_TABLE),
)

#: How the worth of a question is measured, for a note under the tables.
WORTH_NOTE = (
    "clicks per question: rounds by which the policy's per-round excess regret curve with "
    "questions reaches the level clicks alone reach by the last round (both curves fitted "
    "non-increasing), per question asked; '≥' when the curve with questions starts at that "
    "level. Break-even: the price per question, in rounds of uniformly random pairs, at "
    "which the priced score falls to the score without questions. Priced score at λ: score "
    "− λ × questions per arrival × 100 / rounds per session."
)


def ask_records(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per world, asking policy and budget (B = 0 is the world without a track).

    Returns:
        Records with `ASK_FIELDS` (and ``track``, ``seeds``, ``score_se``...): None where a
        value is undefined, ``clicks_undefined`` saying why for B > 0; ordered by world, then
        policy, then budget. Empty when no policy asked a question.
    """
    equivalents = {(e.world, e.policy, e.budget): e for e in clicks_equivalent(rows)}
    priced = {(e["world"], e["policy"], e["budget"]): e for e in priced_scores(rows)}
    out = []
    for curve in budget_curves(rows):
        key = (curve["world"], curve["policy"], curve["budget"])
        record = {k: v for k, v in curve.items() if k not in ("asked_mean", "asked_se")}
        record["asked_per_arrival"] = curve["asked_mean"]
        equivalent = equivalents.get(key)
        record["rounds_saved"] = equivalent.rounds_saved if equivalent else None
        record["clicks_per_question"] = equivalent.per_question if equivalent else None
        record["clicks_at_least"] = bool(equivalent and equivalent.at_least)
        record["clicks_undefined"] = equivalent.undefined if equivalent else None
        entry = priced.get(key)
        record["break_even"] = entry["break_even"] if entry else None
        for lam in LAM_TABLE:
            record[f"priced_{lam:g}"] = priced_at(entry, lam)[0] if entry else None
        out.append(record)
    return out


def ask_json(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``ask_tracks`` JSON of ``prefduel stats``: the records, each clicks-equivalent
    with its definition's quantities, and the priced-score curves over the price."""
    return {
        "records": ask_records(rows),
        "clicks_equivalent": [asdict(e) for e in clicks_equivalent(rows)],
        "priced": priced_scores(rows),
    }


def _score(record: Mapping[str, Any]) -> Cell:
    return Cell(number(record["score_mean"], 2), se=number(record["score_se"], 2))


def _policy_cell(record: Mapping[str, Any], labels: Mapping[str, str], colors: Mapping) -> Cell:
    policy = record["policy"]
    return Cell(labels.get(policy, policy), color=colors.get(policy))


def budget_table(
    records: Sequence[dict[str, Any]],
    labels: Mapping[str, str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> Table:
    """One world's score against the budget: policy, B, questions asked per arrival, seeds,
    score mean ± s.e. (``labels``: names shown; ``colors``: swatches in HTML)."""
    labels, colors = labels or {}, colors or {}
    world = records[0]["world"] if records else ""
    rows = [
        [
            _policy_cell(r, labels, colors),
            r["budget"],
            NO_VALUE if r["asked_per_arrival"] is None else number(r["asked_per_arrival"], 2),
            r["n"],
            _score(r),
        ]
        for r in records
    ]
    columns = ["policy", "B", "asked / arrival", "seeds", "score (mean ± s.e.)"]
    return Table(
        columns,
        rows,
        title=f"{world}: score against the ask budget B (B = 0: {world} without questions)",
        key=f"score vs budget {world}",
        align=("left", "right", "right", "right", "right"),
    )


def _clicks(record: Mapping[str, Any]) -> str:
    value = record["clicks_per_question"]
    if value is None:
        return "undefined"
    return ("≥ " if record["clicks_at_least"] else "") + number(value, 1, sign=True)


def worth_table(
    records: Sequence[dict[str, Any]],
    labels: Mapping[str, str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> Table:
    """What a question is worth on one world, per policy and budget B > 0: rounds saved,
    clicks per question, the break-even price and the priced score at `LAM_TABLE`."""
    labels, colors = labels or {}, colors or {}
    world = records[0]["world"] if records else ""
    rows = []
    for r in records:
        if not r["budget"]:
            continue
        saved = r["rounds_saved"]
        rows.append(
            [
                _policy_cell(r, labels, colors),
                r["budget"],
                NO_VALUE if saved is None else number(saved, 1, sign=True),
                _clicks(r),
                NO_VALUE if r["break_even"] is None else number(r["break_even"], 2),
                *(number(r[f"priced_{lam:g}"], 2) for lam in LAM_TABLE),
            ]
        )
    columns = ["policy", "B", "rounds saved", "clicks per question", "break-even λ"]
    columns += [f"priced λ={lam:g}" for lam in LAM_TABLE]
    return Table(
        columns,
        rows,
        title=f"{world}: what a question is worth",
        key=f"question worth {world}",
        align=("left", *["right"] * (len(columns) - 1)),
    )


def undefined_notes(records: Sequence[dict[str, Any]], labels: Mapping[str, str]) -> list[str]:
    """Why a clicks-equivalent is undefined, one sentence per record that has none."""
    return [
        f"{labels.get(r['policy'], r['policy'])}, B = {r['budget']}: clicks per question "
        f"undefined: {r['clicks_undefined']}"
        for r in records
        if r["budget"] and r["clicks_undefined"]
    ]


def silent_note(world: str, policies: Sequence[str], labels: Mapping[str, str]) -> str:
    """The sentence naming the policies that ran on a world's tracks but asked nothing."""
    names = ", ".join(labels.get(p, p) for p in policies)
    return (
        f"Asked no question on the ask tracks of {world}, so left out of these tables (each "
        f"track's leaderboard has them): {names}"
    )


def ask_blocks(rows: Sequence[dict[str, Any]], fmt: str) -> list[Table | Paragraph]:
    """The ``ask_tracks`` part of ``prefduel stats``: the long-form records for ``csv``, else
    per world the score against the budget, what a question is worth, and the notes."""
    records = ask_records(rows)
    if fmt == "csv":
        return [
            Table(
                list(ASK_FIELDS),
                [["" if r.get(f) is None else str(r[f]) for f in ASK_FIELDS] for r in records],
            )
        ]

    def paragraph(text: str) -> Paragraph:
        if fmt == "md":
            return Paragraph(markdown_escape(text, emphasis=True))
        return Paragraph(textwrap.fill(text, 100, break_on_hyphens=False))

    blocks: list[Table | Paragraph] = []
    silent = never_asked(rows)
    for world in dict.fromkeys(r["world"] for r in records):
        mine = [r for r in records if r["world"] == world]
        blocks += [budget_table(mine), worth_table(mine)]
        notes = undefined_notes(mine, {})
        notes += [silent_note(world, silent[world], {})] if silent.get(world) else []
        blocks += [paragraph(n) for n in notes]
    if records:
        blocks.append(paragraph(WORTH_NOTE))
    return blocks
