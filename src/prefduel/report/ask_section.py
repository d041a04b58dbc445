"""The report's "Ask tracks" section: what asking is worth, per world with ask tracks.

The numbers come from `prefduel.stats.asking` through `prefduel.stats.ask_tables` (the same
records and tables ``prefduel stats`` prints); here they are gathered for the page
(`compute_asks`), drawn (`prefduel.report.ask_figures.ask_figure`) and laid out as one
section of the report's document (`ask_section`, listed in
`prefduel.report.html.SECTIONS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from prefduel.core.document import Block, Paragraph, Section
from prefduel.stats.ask_tables import (
    ask_records,
    budget_table,
    silent_note,
    undefined_notes,
    worth_table,
)
from prefduel.stats.asking import LAM_MAX, never_asked, priced_scores, track_of

if TYPE_CHECKING:  # pragma: no cover
    from prefduel.report.data import ReportInput
    from prefduel.report.drawing import SavedFigure


class Page(Protocol):
    """What the section reads of the report's page (`prefduel.report.html.Page`, which lists
    this section in its ``SECTIONS``, so it is not imported here)."""

    figures: Mapping[str, SavedFigure]
    colors: Mapping[str, str]
    asks: AskReport | None

    def label(self, policy: str) -> str:
        """What the page calls ``policy``."""
        ...

    def missing_figure(self, fallback: str) -> list[Block]:
        """The note standing where a figure would be."""
        ...

ASK_LEAD = (
    "A world on an ask track B lets a policy ask each student up to B preference questions "
    "and read the stored answers; B = 0 is the world without questions (its own "
    "leaderboard above). Each track has its own leaderboard; here each policy that asked a "
    "question is followed across the tracks: its score against B (mean ± standard error "
    "over seeds, n seeds), how many clicks a question is worth to it, and its score once "
    "each question has a price."
)
WORTH_LEAD = (
    "Clicks per question: the policy's mean excess regret per round with B questions and "
    "without, each fitted non-increasing (least squares); the level is where the curve "
    "without questions ends, at the last round; rounds saved is how many rounds earlier the "
    "curve with questions gets to that level (linear between rounds), and clicks per "
    "question is that over the questions it asked per arrival. It is undefined when the "
    "policy has no rows without questions, when its curve without questions does not fall, "
    "or when the curve with questions never gets to the level within a session; ≥ marks a "
    "curve with questions already at the level in round 1 (a lower bound). Priced score: "
    "score − λ × questions per arrival × 100 / S, S the rounds of a session, so a question "
    "at price λ = 1 costs as much as one round of uniformly random pairs; drawn for λ from 0 "
    f"to {LAM_MAX:g}. Break-even λ: the price at which the priced score falls to the "
    "score without questions (0 when asking did not raise the score)."
)


@dataclass
class AskReport:
    """The ask tracks of a report.

    Attributes:
        worlds: Base worlds with at least one ask track, in page order.
        records: `prefduel.stats.ask_tables.ask_records` of the rows shown.
        priced: `prefduel.stats.asking.priced_scores` of the rows shown.
        silent: ``{world: policies}`` that ran on a track but asked no question.
    """

    worlds: list[str]
    records: list[dict[str, Any]] = field(default_factory=list)
    priced: list[dict[str, Any]] = field(default_factory=list)
    silent: dict[str, list[str]] = field(default_factory=dict)

    def of(self, world: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The records and priced-score entries of one base world."""
        return (
            [r for r in self.records if r["world"] == world],
            [e for e in self.priced if e["world"] == world],
        )


def compute_asks(data: ReportInput) -> AskReport | None:
    """The ask tracks of the rows the report shows; None when no row is on an ask track."""
    rows = data.rows
    if data.shown is not None:
        rows = [r for r in rows if r["policy"] in data.shown]
    worlds = [r["world"] for r in rows]
    bases = list(dict.fromkeys(track_of(w)[0] for w in worlds if track_of(w)[1]))
    if not bases:
        return None
    return AskReport(bases, ask_records(rows), priced_scores(rows), never_asked(rows))


def _world_blocks(page: Page, asks: AskReport, world: str) -> list[Block]:
    records, _ = asks.of(world)
    labels = {p: page.label(p) for p in {r["policy"] for r in records}}
    blocks: list[Block] = []
    silent = asks.silent.get(world)
    if not records:
        text = f"No policy asked a question on the ask tracks of {world}."
        blocks.append(Paragraph(text, "note"))
    else:
        fig = page.figures.get(f"asks:{world}")
        if fig is not None:
            caption = f"Score against the ask budget and the priced score on {world}."
            blocks.append(fig.block(caption))
        else:
            blocks += page.missing_figure(f"No ask-track figure drawn for {world}.")
        blocks.append(budget_table(records, labels, page.colors))
        blocks.append(worth_table(records, labels, page.colors))
        blocks += [Paragraph(n, "note") for n in undefined_notes(records, labels)]
    if silent:
        blocks.append(Paragraph(silent_note(world, silent, labels), "note"))
    return blocks


def ask_section(page: Page) -> Section | None:
    """The "Ask tracks" section, or None when no world of the page is on an ask track."""
    asks = page.asks
    if asks is None:
        return None
    lead: list[Block] = [Paragraph(ASK_LEAD, "lead"), Paragraph(WORTH_LEAD, "note")]
    section = Section("Ask tracks: what asking is worth", lead, id="ask-tracks")
    for index, world in enumerate(asks.worlds):
        section.subsections.append(
            Section(world, _world_blocks(page, asks, world), id=f"asks-{index}")
        )
    return section


def ask_figure_keys(asks: AskReport | None) -> Sequence[str]:
    """The base worlds that get an ask-track figure (those with an asking policy)."""
    if asks is None:
        return []
    return [w for w in asks.worlds if asks.of(w)[0]]
