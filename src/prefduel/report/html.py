"""The report page: one self-contained HTML document (inline CSS and SVG, no scripts fetched).

Nothing here computes a statistic: numbers come from `prefduel.report.compute` and
are only formatted (score 2 decimals, excess regret 1, changes 1, per-arrival excess 3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from prefduel.report.compute import ProfileTable, WorldReport
from prefduel.report.figures import SavedFigure
from prefduel.stats.table import NO_SE, replicates

CSS = """
:root { --ink:#1d2330; --muted:#5b6475; --line:#e3e6ec; --soft:#f6f7f9; --accent:#2f5fb3;
        --warn-bg:#fff7e0; --warn-line:#e7b416; --good:#1e7b3a; --bad:#b3261e; }
* { box-sizing: border-box; }
html { scroll-behavior: smooth; }
body { margin:0; color:var(--ink); background:#fbfbfc;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
             sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 28px 28px 60px; }
header.top { background: linear-gradient(135deg, #1f3b73, #2f5fb3); color: #fff; }
header.top .inner { max-width: 1240px; margin: 0 auto; padding: 28px 28px 22px; }
header.top h1 { margin: 0 0 4px; font-size: 26px; font-weight: 650; letter-spacing: .2px; }
header.top p { margin: 2px 0; opacity: .9; }
.chips { display:flex; flex-wrap:wrap; gap:8px; margin-top:14px; }
.chip { background: rgba(255,255,255,.14); border: 1px solid rgba(255,255,255,.25);
        border-radius: 999px; padding: 3px 12px; font-size: 13px; }
nav.toc { position: sticky; top: 0; z-index: 5; background: rgba(251,251,252,.96);
          border-bottom: 1px solid var(--line); backdrop-filter: blur(4px); }
nav.toc .inner { max-width:1240px; margin:0 auto; padding: 8px 28px; display:flex;
                 gap: 18px; flex-wrap: wrap; font-size: 14px; }
nav.toc a { color: var(--muted); text-decoration: none; }
nav.toc a:hover { color: var(--accent); }
main > h2 { font-size: 21px; margin: 42px 0 6px; padding-top: 8px;
            border-top: 2px solid var(--line); }
main > h3 { font-size: 16px; margin: 26px 0 8px; }
p.lead { color: var(--muted); margin: 4px 0 14px; max-width: 900px; }
.warnings { background: var(--warn-bg); border: 1px solid var(--warn-line);
            border-left: 5px solid var(--warn-line); border-radius: 8px; padding: 10px 16px;
            margin: 18px 0; }
.warnings h2 { border: 0; margin: 4px 0; padding: 0; font-size: 17px; }
.warnings li { margin: 4px 0; }
.note { color: var(--muted); font-size: 13.5px; margin: 6px 0; }
.note.warn { color: #8a5a00; }
.card { background:#fff; border:1px solid var(--line); border-radius: 10px; padding: 14px;
        margin: 12px 0 18px; box-shadow: 0 1px 2px rgba(16,24,40,.04); overflow-x: auto; }
.figure svg { display:block; max-width: 100%; height: auto; margin: 0 auto; }
.figure .files { font-size: 12.5px; color: var(--muted); margin-top: 6px; }
.card > table { border-collapse: collapse; font-variant-numeric: tabular-nums;
                font-size: 14px; width: 100%; }
.card > table th, .card > table td { padding: 5px 10px; border-bottom: 1px solid var(--line);
                                     text-align: right; white-space: nowrap; }
.card > table th { font-weight: 600; color: var(--muted); background: var(--soft); }
.card > table th:first-child, .card > table td:first-child,
.card > table .name { text-align: left; }
.card > table tbody tr:hover { background: #f3f6fb; }
tr.ref td { font-style: italic; color: var(--muted); }
td.rank { color: var(--muted); width: 2.5em; }
.sw { display:inline-block; width: 11px; height: 11px; border-radius: 3px; margin-right: 7px;
      vertical-align: -1px; }
.track { display:inline-block; width: 120px; height: 7px; background: var(--soft);
         border-radius: 4px; vertical-align: middle; overflow: hidden; }
.track span { display:block; height: 100%; background: var(--accent); opacity: .55;
              border-radius: 4px; }
tr.ref .track span { background: #9aa3b5; }
.se { color: var(--muted); font-size: 12.5px; }
td.good { color: var(--good); font-weight: 600; }
td.bad { color: var(--bad); }
td.best { background: #e7f5ec; font-weight: 600; }
td.worst { background: #fdecea; }
.flag { color: #8a5a00; font-size: 12.5px; }
dl.settings { display:grid; grid-template-columns: max-content 1fr; gap: 6px 18px;
              margin: 0; }
dl.settings dt { color: var(--muted); }
dl.settings dd { margin: 0; word-break: break-word; }
code.cmd { background: var(--soft); border: 1px solid var(--line); border-radius: 6px;
           padding: 2px 6px; }
main > details summary { cursor: pointer; color: var(--accent); margin: 6px 0; }
footer { color: var(--muted); font-size: 13px; margin-top: 50px; text-align: center; }
"""


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
        settings: ``(name, value)`` pairs of the settings section (values are HTML-escaped).
        chips: Short facts for the header.
        play_html: Fragment of the "Be the policy for one student" section, or None.
        play_caption: Sentence introducing that fragment.
        tab_title: The document's ``<title>`` (default: ``title``).
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


def fmt(value: float | None, digits: int, sign: bool = False) -> str:
    """A number with ``digits`` decimals (``+`` sign if asked), ``–`` for None or nan."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NO_SE
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def pm(mean: float, se: float | None, digits: int) -> str:
    """``mean <span>± se</span>`` (``–`` for a missing s.e.)."""
    return f'{fmt(mean, digits)} <span class="se">± {fmt(se, digits)}</span>'


def _swatch(color: str | None) -> str:
    return f'<span class="sw" style="background:{color}"></span>' if color else ""


def _anchor(prefix: str, index: int) -> str:
    """Id of a world's subsection (world names may hold any character, so by position)."""
    return f"{prefix}-{index}"


def _figure(fig: SavedFigure | None, caption: str = "") -> str:
    if fig is None:
        return ""
    files = (
        f'<div class="files">Files: <code>figures/{escape(fig.png.name)}</code>, '
        f"<code>figures/{escape(fig.svg.name)}</code>{escape(caption)}</div>"
    )
    return f'<div class="card figure">{fig.inline}{files}</div>'


def _notes(notes: Sequence[str], warn: bool = False) -> str:
    cls = "note warn" if warn else "note"
    return "".join(f'<p class="{cls}">{escape(n)}</p>' for n in notes)


def _leaderboard(page: Page) -> str:
    parts = [
        '<h2 id="leaderboard">Leaderboard</h2>',
        '<p class="lead">Score (100 = the floor of the two best personas every round, 0 = '
        "uniformly random pairs) and excess regret over the floor, each the mean ± standard "
        "error over seeds; best score first. <em>Italic rows</em> are references computed "
        "from the hidden utilities, not policies.</p>",
    ]
    for index, report in enumerate(page.reports):
        mixed = report.mixed_versions
        head = (
            '<tr><th class="rank">#</th><th class="name">policy</th><th>seeds</th>'
            '<th>score (mean ± s.e.)</th><th class="name">0 – 100</th>'
            "<th>excess regret (mean ± s.e.)</th>"
            + ("<th>versions</th>" if mixed else "")
            + "</tr>"
        )
        body = []
        rank = 0
        for e in report.leaderboard:
            is_ref = e["kind"] == "reference"
            if not is_ref:
                rank += 1
            width = min(max(e["score_mean"], 0.0), 100.0)
            versions = mixed.get(e["policy"])
            flag = (
                f'<td class="flag">⚠ {escape(", ".join(versions))}</td>'
                if versions
                else ("<td></td>" if mixed else "")
            )
            body.append(
                f'<tr class="{"ref" if is_ref else "pol"}">'
                f'<td class="rank">{"" if is_ref else rank}</td>'
                f'<td class="name">{_swatch(None if is_ref else page.colors.get(e["policy"]))}'
                f"{escape(e['policy'])}</td>"
                f"<td>{e['n']}</td>"
                f"<td>{pm(e['score_mean'], e['score_se'], 2)}</td>"
                f'<td class="name"><span class="track"><span style="width:{width:.1f}%">'
                "</span></span></td>"
                f"<td>{pm(e['excess_mean'], e['excess_se'], 1)}</td>{flag}</tr>"
            )
        seeds = _seed_text(report.seeds)
        parts.append(
            f'<h3 id="{_anchor("board", index)}">{escape(report.world)} '
            f'<span class="se">· seeds {escape(seeds)} ({escape(replicates(report.world))})'
            "</span></h3>"
            f'<div class="card"><table><thead>{head}</thead><tbody>{"".join(body)}</tbody>'
            "</table></div>"
        )
        if mixed:
            parts.append(
                _notes(
                    [
                        "⚠ marks entries whose seeds were written by different package versions; "
                        "their means pool results of different code."
                    ],
                    warn=True,
                )
            )
    return "".join(parts)


def _curves(page: Page) -> str:
    parts = [
        '<h2 id="curves">Learning curves</h2>',
        f'<p class="lead">Left: excess regret of each arrival over the floor, smoothed by a '
        f"centered {page.window}-arrival moving mean (windows shrink at the ends), averaged "
        "over seeds, with a 95% Student-t band over seeds: a falling curve is a policy that "
        "transfers what it learned from earlier students. Right: excess regret per round "
        "(question 1 to the last of a session), averaged over arrivals, then over seeds with "
        "a 95% band: learning within one student. Legends give the number of seeds; the "
        f"competitor ({escape(page.competitor)}) is dashed gray.</p>",
    ]
    for index, report in enumerate(page.reports):
        parts.append(f'<h3 id="{_anchor("curves", index)}">{escape(report.world)}</h3>')
        fig = page.figures.get(f"learning:{report.world}")
        if fig is None:
            parts.append(_notes(["No policy rows with usable curves on this world."], True))
        parts.append(_figure(fig))
        parts.append(_notes([n for n in report.notes if "usable curves" in n], True))
    return "".join(parts)


def _gains(page: Page) -> str:
    comp = escape(page.competitor)
    parts = [
        '<h2 id="gains">Paired gains vs ' + comp + "</h2>",
        '<p class="lead">Relative change in excess regret of each policy against '
        f"<code>{comp}</code>, paired by seed (the same students, questions and clicks): "
        f"100 × (excess<sub>policy</sub> / excess<sub>{comp}</sub> − 1), averaged over the "
        "seeds both have. Negative is better. Intervals are 95% Student-t and 95% percentile "
        'bootstrap (4000 resamples) over seeds; <span style="color:var(--good)">green</span> '
        'when the whole t interval is below 0, <span style="color:var(--bad)">red</span> '
        "when above.</p>",
    ]
    fig = page.figures.get("forest")
    if fig is None:
        parts.append(_notes(["No paired gains to show."], True))
    parts.append(_figure(fig))
    parts.append(_notes(page.gain_notes, True))
    for index, report in enumerate(page.reports):
        if not report.gains:
            continue
        rows = []
        for g in report.gains:
            cls = "good" if g["t_hi"] < 0 else ("bad" if g["t_lo"] > 0 else "")
            seeds = f"{g['n']}"
            if g["n"] < max(g["policy_seeds"], g["competitor_seeds"]):
                seeds += (
                    f' <span class="flag">(policy {g["policy_seeds"]}, {comp} '
                    f"{g['competitor_seeds']})</span>"
                )
            flag = (
                f' <span class="flag">⚠ {g["cross_version"]} cross-version</span>'
                if g["cross_version"]
                else ""
            )
            rows.append(
                f'<tr><td class="name">{_swatch(page.colors.get(g["policy"]))}'
                f"{escape(g['policy'])}{flag}</td>"
                f"<td>{seeds}</td>"
                f'<td class="{cls}">{fmt(g["change_mean"], 1, True)}%</td>'
                f"<td>[{fmt(g['t_lo'], 1, True)}, {fmt(g['t_hi'], 1, True)}]</td>"
                f"<td>[{fmt(g['boot_lo'], 1, True)}, {fmt(g['boot_hi'], 1, True)}]</td></tr>"
            )
        parts.append(
            f'<h3 id="{_anchor("gains", index)}">{escape(report.world)}</h3>'
            '<div class="card"><table><thead><tr><th class="name">policy</th>'
            "<th>paired seeds</th><th>change in excess regret</th><th>95% t interval</th>"
            "<th>95% bootstrap interval</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table></div>"
        )
    return "".join(parts)


def _profile_table_html(table: ProfileTable, colors: dict[str, str]) -> str:
    head = "".join(f"<th>{_swatch(colors.get(p))}{escape(p)}</th>" for p in table.policies)
    body = []
    for group in table.groups:
        cells = [table.entries.get((group, p)) for p in table.policies]
        means = [c["excess_mean"] for c in cells if c is not None]
        lo, hi = (min(means), max(means)) if len(means) > 1 else (None, None)
        counts = sorted({c["arrivals"] for c in cells if c is not None})
        count = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
        tds = []
        for c in cells:
            if c is None:
                tds.append(f"<td>{NO_SE}</td>")
                continue
            cls = ""
            if lo is not None and c["excess_mean"] == lo:
                cls = ' class="best"'
            elif hi is not None and c["excess_mean"] == hi:
                cls = ' class="worst"'
            tds.append(f"<td{cls}>{pm(c['excess_mean'], c['excess_se'], 3)}</td>")
        body.append(f'<tr><td class="name">{escape(group)}</td><td>{count}</td>{"".join(tds)}</tr>')
    return (
        '<div class="card"><table><thead><tr><th class="name">'
        + ("profile" if table.grouping == "profile" else "trait value / quirk")
        + f"</th><th>arrivals per policy</th>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
        "</table></div>"
    )


def _profiles(page: Page) -> str:
    parts = [
        '<h2 id="profiles">Per-profile breakdown</h2>',
        '<p class="lead">Which students each policy serves well or badly: excess regret per '
        "arrival, pooled over the arrivals of each hidden profile and over seeds (mean ± "
        "standard error over those arrivals). Rosters of template students (hundreds of "
        "distinct profiles) are broken down by each trait value and quirk instead, so one "
        "student counts in several rows. In the tables, the best policy of each row is "
        "green and the worst red.</p>",
    ]
    for index, report in enumerate(page.reports):
        parts.append(f'<h3 id="{_anchor("profiles", index)}">{escape(report.world)}</h3>')
        table = report.profiles
        notes = [n for n in report.notes if "per-profile" in n]
        if table is None:
            parts.append(_notes(notes or ["No per-profile breakdown for this world."], True))
            continue
        fig = page.figures.get(f"profiles:{report.world}")
        if fig is not None:
            parts.append(_figure(fig))
        elif len(table.groups) == 1:
            parts.append(
                _notes([f"All students of {report.world} share one profile ({table.groups[0]})."])
            )
        parts.append(_notes(notes, True))
        parts.append(
            "<details open><summary>Table</summary>"
            + _profile_table_html(table, page.colors)
            + "</details>"
        )
    return "".join(parts)


def _settings(page: Page) -> str:
    items = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in page.settings)
    return (
        '<h2 id="settings">Settings and versions</h2>'
        '<p class="lead">Everything needed to reproduce this page.</p>'
        f'<div class="card"><dl class="settings">{items}</dl></div>'
    )


def _play(page: Page) -> str:
    if page.play_html is None:
        return ""
    return (
        '<h2 id="be-the-policy">Be the policy for one student</h2>'
        f'<p class="lead">{escape(page.play_caption)}</p>'
        f'<div class="card play">{page.play_html}</div>'
    )


def _seed_text(seeds: Sequence[int]) -> str:
    """``0-31`` style text of a sorted seed list (``0-3,8``)."""
    if not seeds:
        return "none"
    runs: list[list[int]] = [[seeds[0], seeds[0]]]
    for s in seeds[1:]:
        if s == runs[-1][1] + 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def seed_text(seeds: Sequence[int]) -> str:
    """Public alias of the compact seed-list text (``0-31``, ``0-3,8``)."""
    return _seed_text(sorted(seeds))


def render(page: Page) -> str:
    """The whole HTML document."""
    toc = [
        ("leaderboard", "Leaderboard"),
        ("curves", "Learning curves"),
        ("gains", f"Paired gains vs {page.competitor}"),
        ("profiles", "Per-profile breakdown"),
    ]
    if page.play_html is not None:
        toc.append(("be-the-policy", "Be the policy"))
    toc.append(("settings", "Settings and versions"))
    nav = "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t in toc)
    if page.warnings:
        nav = '<a href="#warnings" style="color:#8a5a00">⚠ Warnings</a>' + nav
    chips = "".join(f'<span class="chip">{escape(c)}</span>' for c in page.chips)
    warnings_box = ""
    if page.warnings:
        items = "".join(f"<li>{escape(w)}</li>" for w in page.warnings)
        warnings_box = (
            f'<section class="warnings" id="warnings"><h2>⚠ Warnings ({len(page.warnings)})'
            f"</h2><ul>{items}</ul></section>"
        )
    body = "".join(
        [
            warnings_box,
            _leaderboard(page),
            _curves(page),
            _gains(page),
            _profiles(page),
            _play(page),
            _settings(page),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(page.tab_title or page.title)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><div class="inner"><h1>{escape(page.title)}</h1>'
        f'<p>{escape(page.source)}</p><div class="chips">{chips}</div></div></header>'
        f'<nav class="toc"><div class="inner">{nav}</div></nav>'
        f"<main>{body}<footer>Generated by prefduel · a single offline file: styles and "
        "figures are inline</footer></main></body></html>\n"
    )


def settings_value(value: Any) -> str:
    """Escape a settings value for the page (lists joined by commas)."""
    if isinstance(value, list | tuple):
        return escape(", ".join(map(str, value)))
    return escape(str(value))
