"""The report page as a `prefduel.core.document.Document`, written by the shared HTML writer.

Nothing here computes a statistic: numbers come from `prefduel.report.compute` and
are only formatted (score 2 decimals, excess regret 1, changes 1, per-arrival excess 3).
The page is one self-contained file (`prefduel.core.document_html.to_html`: inline CSS and
SVG, no scripts fetched); the "Be the policy" widget is the only HTML built elsewhere
(`prefduel.pages.play_widget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prefduel.core.document import (
    NO_VALUE,
    Align,
    Block,
    Cell,
    CellValue,
    Document,
    Figure,
    Paragraph,
    Raw,
    Section,
    Settings,
    Table,
    build_sections,
    number,
)
from prefduel.core.document_html import to_html
from prefduel.report.ask_section import AskReport, ask_section
from prefduel.report.compute import ProfileTable, WorldReport
from prefduel.report.figures import SavedFigure
from prefduel.stats.table import replicates, track_text, undefined_note


@dataclass
class Page:
    """What the page shows (all computed elsewhere).

    Attributes:
        title: Page title.
        source: Results file, for the header.
        reports: One per world.
        competitor: Competitor of the paired gains.
        window: Moving-mean window.
        colors: Color per policy.
        warnings: Input warnings (top box).
        gain_notes: Notes of the paired gains.
        figures: Saved figures by role: ``learning:<world>``, ``forest``, ``profiles:<world>``.
        settings: ``(name, value)`` pairs of the settings section (plain text).
        chips: Short facts for the header.
        play_html: Fragment of the "Be the policy for one student" section, or None.
        play_caption: Sentence introducing that fragment.
        tab_title: The document's ``<title>`` (default: ``title``).
        labels: ``{policy spec: label}`` (`prefduel.report.labels.report_labels`); a policy
            not in it is shown by its spec.
        figure_note: Why the figures were not drawn (shown where each would be), or None.
        asks: The ask tracks (`prefduel.report.ask_section.compute_asks`), or None when no
            world is on an ask track.
    """

    title: str
    source: str
    reports: list[WorldReport]
    competitor: str
    window: int
    colors: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    gain_notes: list[str] = field(default_factory=list)
    figures: dict[str, SavedFigure] = field(default_factory=dict)
    settings: list[tuple[str, str]] = field(default_factory=list)
    chips: list[str] = field(default_factory=list)
    play_html: str | None = None
    play_caption: str = ""
    tab_title: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    figure_note: str | None = None
    asks: AskReport | None = None

    def label(self, policy: str) -> str:
        """What the page calls ``policy`` (its short label, else its spec)."""
        return self.labels.get(policy, policy)

    def names_note(self) -> Paragraph | None:
        """The sentence giving the spec behind each label that is not its spec, or None."""
        renamed = [(label, p) for p, label in self.labels.items() if label != p]
        if not renamed:
            return None
        pairs = "; ".join(f"{label} is {p}" for label, p in sorted(renamed))
        return Paragraph(f"Policies are shown by their short names: {pairs}.", "note")

    def missing_figure(self, fallback: str) -> list[Block]:
        """The note standing where a figure would be: why it was not drawn, else ``fallback``."""
        if self.figure_note is not None:
            return [Paragraph(f"Figure not drawn: {self.figure_note}.", "warn")]
        return _warn([fallback])


LEADERBOARD_LEAD = (
    "Score (100 = the floor of the two best personas every round, 0 = uniformly random pairs) "
    "and excess regret over the floor, each the mean ± standard error over seeds; best score "
    "first. Italic rows are references computed from the hidden utilities, not policies."
)
MIXED_NOTE = (
    "⚠ marks entries whose seeds were written by different package versions; their means pool "
    "results of different code."
)
PROFILES_LEAD = (
    "Which students each policy serves well or badly: excess regret per arrival, pooled over "
    "the arrivals of each hidden profile and over seeds (mean ± standard error over those "
    "arrivals). Rosters of template students (hundreds of distinct profiles) are broken down "
    "by each trait value and quirk instead, so one student counts in several rows. In the "
    "tables, the best policy of each row is green and the worst red."
)
GAINS_COLUMNS = (
    "policy",
    "paired seeds",
    "change in excess regret",
    "95% t interval",
    "95% bootstrap interval",
)
PLAY_STAND_IN = (
    "(Interactive in the HTML report: choose the pair of answers shown to one student, round "
    "after round.)"
)


def _subsection_id(prefix: str, index: int) -> str:
    """Id of a world's subsection (world names may hold any character, so by position)."""
    return f"{prefix}-{index}"


def _figure(fig: SavedFigure, caption: str) -> Figure:
    """A saved figure: inline SVG for HTML, its SVG file for Markdown, both files listed."""
    return fig.block(caption)


def _warn(notes: Sequence[str]) -> list[Block]:
    return [Paragraph(note, "warn") for note in notes]


def _mean_se(mean: float | None, se: float | None, digits: int) -> Cell:
    if mean is None:  # every seed undefined (prefduel.stats.table.undefined_note)
        return Cell("undefined")
    return Cell(number(mean, digits), se=number(se, digits))


def _board_table(report: WorldReport, page: Page) -> Table:
    """One world's leaderboard: rank, swatch, seeds, score with a 0-100 bar, excess regret (on
    an ask track also the questions asked per arrival)."""
    mixed = report.mixed_versions
    track = bool(track_text(report.world))
    columns = ["#", "policy", "seeds", "score (mean ± s.e.)", "0 – 100"]
    columns += ["excess regret (mean ± s.e.)"] + (["asked / arrival"] if track else [])
    columns += ["versions"] if mixed else []
    rows: list[list[CellValue]] = []
    tones: list[str] = []
    rank = 0
    for e in report.leaderboard:
        is_ref = e["kind"] == "reference"
        rank += 0 if is_ref else 1
        row: list[CellValue] = [
            "" if is_ref else str(rank),
            Cell(page.label(e["policy"]), color=None if is_ref else page.colors.get(e["policy"])),
            e["n"],
            _mean_se(e["score_mean"], e["score_se"], 2),
            Cell("", bar=e["score_mean"]),
            _mean_se(e["excess_mean"], e["excess_se"], 1),
        ]
        if track:
            row.append(number(e.get("asked_per_arrival"), 2))
        if mixed:
            versions = mixed.get(e["policy"])
            row.append(Cell(f"⚠ {', '.join(versions)}", tone="warn") if versions else "")
        rows.append(row)
        tones.append("ref" if is_ref else "pol")
    return Table(columns, rows, row_tones=tones, key=f"leaderboard {report.world}")


def _leaderboard(page: Page) -> Section:
    lead: list[Block] = [Paragraph(LEADERBOARD_LEAD, "lead")]
    names = page.names_note()
    section = Section("Leaderboard", lead + ([names] if names else []), id="leaderboard")
    for index, report in enumerate(page.reports):
        seeds = seed_text(report.seeds)
        blocks: list[Block] = [_board_table(report, page)]
        blocks += _warn([n for e in report.leaderboard if (n := undefined_note(e))])
        if report.mixed_versions:
            blocks.append(Paragraph(MIXED_NOTE, "warn"))
        track = track_text(report.world)
        title = f"{report.world} · {track + ' · ' if track else ''}seeds {seeds} "
        title += f"({replicates(report.world)})"
        section.subsections.append(Section(title, blocks, id=_subsection_id("board", index)))
    return section


def _curves(page: Page) -> Section:
    lead = (
        "Left: excess regret of each arrival over the floor, smoothed by a centered "
        f"{page.window}-arrival moving mean (windows shrink at the ends), averaged over seeds, "
        "with a 95% Student-t band over seeds: a falling curve is a policy that transfers what "
        "it learned from earlier students. Right: excess regret per round (question 1 to the "
        "last of a session), averaged over arrivals, then over seeds with a 95% band: learning "
        "within one student. Legends give the number of seeds; the competitor "
        f"({page.label(page.competitor)}) is dashed gray."
    )
    section = Section("Learning curves", [Paragraph(lead, "lead")], id="curves")
    for index, report in enumerate(page.reports):
        fig = page.figures.get(f"learning:{report.world}")
        if fig is None and report.curves:
            blocks = page.missing_figure("No learning curves drawn for this world.")
        elif fig is None:
            blocks = _warn(["No policy rows with usable curves on this world."])
        else:
            caption = f"Learning across students and within a session on {report.world}."
            blocks = [_figure(fig, caption)]
        blocks += _warn([n for n in report.notes if "usable curves" in n])
        section.subsections.append(
            Section(report.world, blocks, id=_subsection_id("curves", index))
        )
    return section


def _interval(lo: float, hi: float) -> str:
    return f"[{number(lo, 1, sign=True)}, {number(hi, 1, sign=True)}]"


def _gains_table(report: WorldReport, page: Page) -> Table:
    """One world's paired gains: green when the t interval is below 0, red when above."""
    competitor = page.label(page.competitor)
    rows: list[list[CellValue]] = []
    for g in report.gains:
        tone = "good" if g["t_hi"] < 0 else ("bad" if g["t_lo"] > 0 else "")
        partial = g["n"] < max(g["policy_seeds"], g["competitor_seeds"])
        seeds_flag = f"(policy {g['policy_seeds']}, {competitor} {g['competitor_seeds']})"
        version_flag = f"⚠ {g['cross_version']} cross-version" if g["cross_version"] else ""
        rows.append(
            [
                Cell(
                    page.label(g["policy"]), color=page.colors.get(g["policy"]), flag=version_flag
                ),
                Cell(str(g["n"]), flag=seeds_flag if partial else ""),
                Cell(number(g["change_mean"], 1, sign=True, suffix="%"), tone=tone),
                _interval(g["t_lo"], g["t_hi"]),
                _interval(g["boot_lo"], g["boot_hi"]),
            ]
        )
    # intervals such as [-1.0, +2.0] are numbers too: right-aligned like the rest
    align: list[Align] = ["left"] + ["right"] * (len(GAINS_COLUMNS) - 1)
    return Table(GAINS_COLUMNS, rows, key=f"paired gains {report.world}", align=align)


def _gains(page: Page) -> Section:
    comp = page.label(page.competitor)
    lead = (
        f"Relative change in excess regret of each policy against {comp}, paired by seed (the "
        f"same students, questions and clicks): 100 × (excess of the policy / excess of {comp} "
        "− 1), averaged over the seeds both have. Negative is better. Intervals are 95% "
        "Student-t and 95% percentile bootstrap (4000 resamples) over seeds; green when the "
        "whole t interval is below 0, red when above."
    )
    blocks: list[Block] = [Paragraph(lead, "lead")]
    fig = page.figures.get("forest")
    if fig is None and any(r.gains for r in page.reports):
        blocks += page.missing_figure("No paired gains drawn.")
    elif fig is None:
        blocks += _warn(["No paired gains to show."])
    else:
        blocks.append(_figure(fig, f"Paired change in excess regret vs {comp}, per world."))
    section = Section(f"Paired gains vs {comp}", blocks + _warn(page.gain_notes), id="gains")
    for index, report in enumerate(page.reports):
        if report.gains:
            table = _gains_table(report, page)
            section.subsections.append(
                Section(report.world, [table], id=_subsection_id("gains", index))
            )
    return section


def _profile_row(table: ProfileTable, group: str) -> list[CellValue]:
    """A group's row: arrivals per policy, then each policy's excess (best green, worst red)."""
    entries = [table.entries.get((group, p)) for p in table.policies]
    means = [e["excess_mean"] for e in entries if e is not None]
    lo, hi = (min(means), max(means)) if len(means) > 1 else (None, None)
    counts = sorted({e["arrivals"] for e in entries if e is not None})
    row: list[CellValue] = [
        group,
        str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}",
    ]
    for e in entries:
        if e is None:
            row.append(NO_VALUE)
            continue
        tone = "best" if e["excess_mean"] == lo else ("worst" if e["excess_mean"] == hi else "")
        row.append(Cell(number(e["excess_mean"], 3), se=number(e["excess_se"], 3), tone=tone))
    return row


def _profile_table(table: ProfileTable, page: Page) -> Table:
    head = "profile" if table.grouping == "profile" else "trait value / quirk"
    columns: list[CellValue] = [head, "arrivals per policy"]
    columns += [Cell(page.label(p), color=page.colors.get(p)) for p in table.policies]
    rows = [_profile_row(table, group) for group in table.groups]
    align: list[Align] = ["left"] + ["right"] * (len(columns) - 1)  # arrival counts may be ranges
    return Table(columns, rows, key=f"profiles {table.world}", collapsed=True, align=align)


def _profile_blocks(page: Page, report: WorldReport) -> list[Block]:
    table = report.profiles
    notes = [n for n in report.notes if "per-profile" in n]
    if table is None:
        return _warn(notes or ["No per-profile breakdown for this world."])
    blocks: list[Block] = []
    fig = page.figures.get(f"profiles:{report.world}")
    if fig is not None:
        caption = f"Excess regret per arrival by group on {report.world}, vs each policy's mean."
        blocks.append(_figure(fig, caption))
    elif len(table.groups) == 1:
        text = f"All students of {report.world} share one profile ({table.groups[0]})."
        blocks.append(Paragraph(text, "note"))
    elif table.policies:
        blocks += page.missing_figure("No per-profile figure drawn for this world.")
    return blocks + _warn(notes) + [_profile_table(table, page)]


def _profiles(page: Page) -> Section:
    section = Section("Per-profile breakdown", [Paragraph(PROFILES_LEAD, "lead")], id="profiles")
    for index, report in enumerate(page.reports):
        blocks = _profile_blocks(page, report)
        section.subsections.append(
            Section(report.world, blocks, id=_subsection_id("profiles", index))
        )
    return section


def _play(page: Page) -> Section | None:
    if page.play_html is None:
        return None
    widget = Raw(f'<div class="card play">{page.play_html}</div>', PLAY_STAND_IN)
    blocks: list[Block] = [Paragraph(page.play_caption, "lead"), widget]
    return Section("Be the policy for one student", blocks, id="be-the-policy")


def _settings(page: Page) -> Section:
    blocks: list[Block] = [
        Paragraph("Everything needed to reproduce this page.", "lead"),
        Settings(page.settings),
    ]
    return Section("Settings and versions", blocks, id="settings")


#: The report's sections, in order (`prefduel.core.document.build_sections`).
SECTIONS = (_leaderboard, ask_section, _curves, _gains, _profiles, _play, _settings)


def report_document(page: Page) -> Document:
    """The whole report as a document: leaderboard, ask tracks, curves, gains, profiles, play,
    settings."""
    return Document(
        page.title,
        build_sections(page, SECTIONS),
        subtitle=page.source,
        chips=page.chips,
        warnings=page.warnings,
        tab_title=page.tab_title,
    )


def render(page: Page) -> str:
    """The whole HTML page (text escaped as `html.escape` does, as the page always was)."""
    return to_html(report_document(page))


def seed_text(seeds: Sequence[int]) -> str:
    """Compact text of a seed list: ``0-31``, ``0-3,8`` (``none`` when empty)."""
    ordered = sorted(seeds)
    if not ordered:
        return "none"
    runs: list[list[int]] = [[ordered[0], ordered[0]]]
    for s in ordered[1:]:
        if s == runs[-1][1] + 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def settings_value(value: Any) -> str:
    """A settings value as text (lists joined by commas)."""
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)
