"""The PrefDisco report as one document: Markdown and one self-contained HTML page.

`build_document` turns the report data (`prefduel.prefdisco.report.build.build_report`) into one
`prefduel.core.document.Document`: a summary, the strategies compared (one row per model and
discovery strategy: PrefAlign, NormAlign with n, questions, hidden preferences disclosed, stop
reasons, follow-up change rate), then per model and strategy the per-condition table,
NormAlign by task and by attribute, and questions asked vs alignment gain, each with its figure
(`prefduel.prefdisco.report.figures`). `write_report` writes ``report.json`` (the data, as
it is), ``report.md`` and ``report.html`` (the shared writers over the one document) and the
figures as ``figures/*.svg``, which the Markdown page links and the HTML page inlines.

Its sentences (shares, NormAlign, the router, the summary list) are in
`prefduel.prefdisco.report.text`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefduel.core.document import (
    NO_VALUE,
    Cell,
    Document,
    Figure,
    Items,
    Paragraph,
    Preformatted,
    Section,
    Settings,
    Table,
    build_sections,
    number,
)
from prefduel.core.document_html import to_html
from prefduel.core.document_text import to_markdown
from prefduel.core.outputs import output_dir, output_file
from prefduel.prefdisco.errors import DatasetError
from prefduel.prefdisco.report.figures import norm_align_bars, questions_scatter
from prefduel.prefdisco.report.text import (
    OFFLINE_NOTE,
    accuracy_note,
    follow_up_text,
    instances_text,
    label_of,
    norm_align_text,
    router_text,
    share,
    stops_text,
    strategy_line,
    summary_lines,
)
from prefduel.prefdisco.store import write_json

#: Scoring errors listed on the page (report.json keeps up to 50 per model).
ERRORS_SHOWN = 20

#: Folder of the figure files, relative to the report (Markdown links point into it).
FIGURES_DIR = "figures"


def _norm_align_cell(group: Mapping[str, Any]) -> Cell:
    value = group.get("norm_align")
    tone = "muted" if value is None else ("bad" if value < 0 else "")
    return Cell(norm_align_text(group), tone=tone)


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], **options: Any) -> Table:
    """A report table: the label column left, every other column right-aligned (intervals and
    ``(n=12)`` counts included)."""
    align: list[Any] = ["left"] + ["right"] * (len(columns) - 1)
    return Table(columns, rows, align=align, **options)


def _mean_cell(mean: float | None, se: float | None, digits: int = 3) -> Cell:
    return Cell(number(mean, digits), se=None if se is None else number(se, digits))


# -- tables ------------------------------------------------------------------------------------


def _conditions_table(model: Mapping[str, Any]) -> Table:
    rows = [
        [
            c["condition"],
            c["episodes"],
            c["scored"],
            _mean_cell(c["pref_align"], c["pref_align_se"]),
            f"{share(c['accuracy'])} (n={c['accuracy_n']})",
            number(c["questions"], 2),
            share(c["recall"]),
            c["missing_scores"],
        ]
        for c in model["conditions"]
    ]
    columns = ["condition", "episodes", "scored", "PrefAlign ± s.e.", "accuracy", "questions"]
    return _table([*columns, "recall", "missing scores"], rows)


def _group_row(label: str, group: Mapping[str, Any], digits: int) -> list[Any]:
    means = [number(group[c], digits) for c in ("baseline", "discovery", "oracle")]
    return [label, group["n"], *means, _norm_align_cell(group)]


def _task_table(model: Mapping[str, Any]) -> Table:
    groups = model["by_task"]
    rows = [_group_row(g["source"], g, 3) for g in groups]
    rows.append(_group_row("all", model["norm_align"], 3))
    columns = ["task", "instances", "baseline", "discovery", "oracle", "NormAlign"]
    return _table(columns, rows, row_tones=[""] * len(groups) + ["total"])


def _attribute_table(model: Mapping[str, Any]) -> Table:
    rows = []
    for g in model["by_attribute"]:
        row = _group_row(g["attribute"], g, 2)
        rows.append([*row[:2], share(g["asked_share"]), *row[2:]])
    columns = ["attribute", "instances", "asked when hidden", "baseline", "discovery", "oracle"]
    return _table([*columns, "NormAlign"], rows)


def _usage_table(model: Mapping[str, Any]) -> Table:
    rows = [
        [
            u["condition"],
            u["episodes"],
            u["calls"],
            number(u["calls_per_episode"], 2),
            f"{u['prompt_tokens']:,} + {u['completion_tokens']:,}",
            number(u["cost"], 4),
            number(u["cost_per_episode"], 6),
        ]
        for u in model.get("usage") or []
    ]
    columns = ["condition", "episodes", "calls", "calls / episode", "tokens (prompt + completion)"]
    return _table([*columns, "cost", "cost / episode"], rows)


_STOP_MEANING = {
    "interviewer": "min_gain: the best expected gain fell below run.interviewer.min_gain; "
    "exhausted: nothing left to ask; max_turns: the budget was spent",
}
_ASK_STOPS = "malformed: a reply that stayed neither a question nor READY"


def _ask_phase_items(model: Mapping[str, Any]) -> Items:
    ask = model.get("ask_phase") or {}
    stops = stops_text(model)
    meaning = _STOP_MEANING.get(str(model.get("strategy")), _ASK_STOPS)
    finish = "; ".join(
        f"{role}: " + ", ".join(f"{k} {v}" for k, v in reasons.items())
        for role, reasons in (ask.get("finish_reasons") or {}).items()
    )
    replies = ask.get("replies", 0)
    revealing = ask.get("revealing_replies", 0)
    return Items(
        [
            f"discovery stopped: {stops} ({meaning})",
            f"finish reasons: {finish or 'not recorded'} (length: cut by the token limit)",
            f"user replies that disclosed a hidden preference: {revealing} of {replies}, "
            f"{ask.get('revealed', 0)} disclosures; hidden preferences disclosed: "
            f"{ask.get('disclosed', 0)} of {ask.get('hidden', 0)} "
            f"({share(ask.get('disclosed_share'))})",
            "follow-up changes when the first reply is altered (the second question's topic): "
            f"{follow_up_text(model)}",
        ]
    )


def _strategies_table(report: Mapping[str, Any]) -> Table:
    """One row per model and strategy: the comparison the report is for."""
    rows = []
    for m in report["models"]:
        means = {c["condition"]: c for c in m["conditions"]}
        disc = means.get("discovery")
        ask = m.get("ask_phase") or {}
        rows.append(
            [
                label_of(m),
                m["norm_align"]["n"],
                *(number((means.get(c) or {}).get("pref_align"), 3) for c in _CONDITIONS),
                _norm_align_cell(m["norm_align"]),
                number(disc["questions"], 2) if disc else NO_VALUE,
                share(ask.get("disclosed_share")),
                stops_text(m),
                follow_up_text(m),
            ]
        )
    columns = ["model / strategy", "n", "baseline", "discovery", "oracle", "NormAlign"]
    return _table([*columns, "questions", "disclosed", "stopped", "follow-up changes"], rows)


_CONDITIONS = ("baseline", "discovery", "oracle")


def _questions_table(model: Mapping[str, Any]) -> Table:
    rows = [
        [x["questions"], x["n"], _mean_cell(x["gain"], x["gain_se"]), share(x["recall"])]
        for x in model["questions"]["by_questions"]
    ]
    return _table(["questions", "instances", "mean gain ± s.e.", "recall"], rows)


# -- document ----------------------------------------------------------------------------------


def _figure(svg: str, caption: str, name: str) -> list[Figure]:
    return [Figure(caption, svg=svg, path=f"{FIGURES_DIR}/{name}.svg")] if svg else []


def _model_sections(
    model: Mapping[str, Any], slug: str, settings: Mapping[str, Any], offline: bool
) -> list[Section]:
    """One model's sections: per condition, NormAlign by task and by attribute, questions asked
    vs alignment gain (each table followed by its figure), then calls and cost."""
    name = label_of(model)
    level = settings["level"]
    intervals = f"{level:.0%} bootstrap intervals" if settings["bootstrap"] else "no intervals"
    whiskers = f" with {level:.0%} interval whiskers" if settings["bootstrap"] else ""
    interval = f"bars{whiskers}; dashed line at 100: the oracle"
    task_svg = norm_align_bars(model["by_task"], "source")
    attribute_svg = norm_align_bars(model["by_attribute"], "attribute")
    scatter_svg = questions_scatter(model["questions"]["points"])
    return [
        Section(
            f"{name}: per condition",
            [_conditions_table(model), Paragraph(accuracy_note(offline), "note")],
            id=f"{slug}-conditions",
        ),
        _figure_section(
            f"{name}: NormAlign by task ({intervals})",
            _task_table(model),
            (task_svg, f"{name}: NormAlign by task, {interval}"),
            f"{slug}-by-task",
        ),
        _figure_section(
            f"{name}: NormAlign by attribute (judge scores of the hidden attribute)",
            _attribute_table(model),
            (attribute_svg, f"{name}: NormAlign by hidden attribute, {interval}"),
            f"{slug}-by-attribute",
        ),
        _figure_section(
            f"{name}: questions asked vs alignment gain (discovery - baseline PrefAlign)",
            _questions_table(model),
            (scatter_svg, f"{name}: questions asked vs PrefAlign gain, one point per instance"),
            f"{slug}-questions",
        ),
        _cost_section(model, name, slug),
    ]


def _figure_section(title: str, table: Table, figure: tuple[str, str], key: str) -> Section:
    """A model's table followed by its figure (``(svg, caption)``, none when not drawn),
    ``key`` naming both the section and the figure file; left out of the contents."""
    svg, caption = figure
    return Section(title, [table, *_figure(svg, caption, key)], id=key, in_toc=False)


def _cost_section(model: Mapping[str, Any], name: str, slug: str) -> Section:
    """A model's calls and cost per condition (a note for rows without usage) and how its
    ask phases ended; left out of the contents."""
    usage = (
        _usage_table(model)
        if model.get("usage")
        else Paragraph("Calls and cost were not recorded (rows of an older run).", "note")
    )
    return Section(
        f"{name}: calls and cost per condition (cached answers priced too)",
        [usage, _ask_phase_items(model)],
        id=f"{slug}-cost",
        in_toc=False,
    )


def _slugs(names: Sequence[str]) -> list[str]:
    """File-name-safe, distinct (also on case-insensitive file systems) slugs of model names,
    at most 80 characters before a distinguishing suffix."""
    seen: set[str] = set()
    slugs = []
    for name in names:
        # a file name holds at most 255 bytes: the figure's suffix must still fit
        base = re.sub(r"[^a-z0-9._-]+", "-", name.lower())[:80].strip("-.") or "model"
        slug, suffix = base, 2
        while slug in seen:
            slug, suffix = f"{base}-{suffix}", suffix + 1
        seen.add(slug)
        slugs.append(slug)
    return slugs


def _compared_section(report: Mapping[str, Any]) -> Section:
    """The strategies side by side."""
    return Section(
        f"Strategies compared (simulated user: {report.get('user_style', 'cooperative')})",
        [
            _strategies_table(report),
            Paragraph(
                "n: instances scored in all three conditions. disclosed: hidden preferences "
                "whose value a reply revealed or (a vague user) hinted at. follow-up changes: "
                "share of discovery episodes whose second question is about something else "
                "when the first reply is altered to another state of the attribute asked.",
                "note",
            ),
        ],
        id="strategies",
    )


def _models_sections(report: Mapping[str, Any]) -> list[Section]:
    """One group of sections per model."""
    models = report["models"]
    offline = bool(report.get("offline"))
    return [
        section
        for model, slug in zip(models, _slugs([label_of(m) for m in models]), strict=True)
        for section in _model_sections(model, slug, report["settings"], offline)
    ]


def _errors_section(report: Mapping[str, Any]) -> Section | None:
    """The scoring errors, recorded and not filled in (None when there are none)."""
    errors = [f"{label_of(m)}: {e}" for m in report["models"] for e in m["errors"]]
    if not errors:
        return None
    blocks: list[Any] = [Items(errors[:ERRORS_SHOWN])]
    if len(errors) > ERRORS_SHOWN:
        more = len(errors) - ERRORS_SHOWN
        blocks.append(Paragraph(f"… and {more} more in report.json.", "note"))
    return Section("Scoring errors (recorded, not filled in)", blocks)


def _settings_section(report: Mapping[str, Any]) -> Section:
    settings = Settings([(str(k), str(v)) for k, v in report["settings"].items()])
    run = json.dumps(report.get("run", {}), indent=2, sort_keys=True)
    return Section("Settings", [settings, Preformatted(run, summary="Run settings (run.json)")])


#: The report's sections, in order (`prefduel.core.document.build_sections`).
SECTIONS = (_compared_section, _models_sections, _errors_section, _settings_section)


def build_document(report: Mapping[str, Any]) -> Document:
    """The report (`prefduel.prefdisco.report.build.build_report`) as one document."""
    s = report["settings"]
    bootstrap = (
        f"{s['bootstrap']} bootstrap replicates, {s['level']:.0%} intervals"
        if s["bootstrap"]
        else "no bootstrap intervals (bootstrap: 0)"
    )
    lead = (
        f"NormAlign = 100 (disc - base) / (oracle - base); undefined when oracle - base < "
        f"{s['min_gap']}; {bootstrap}."
    )
    intro: list[Any] = [Paragraph(lead, "lead")]
    if report.get("offline"):
        intro.append(Paragraph(OFFLINE_NOTE, "warn"))
    return Document(
        "PrefDisco report",
        build_sections(report, SECTIONS),
        intro=[*intro, Items(summary_lines(report))],
    )


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown (figures are links to ``figures/*.svg``)."""
    return to_markdown(build_document(report))


def render_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG; no scripts)."""
    return to_html(build_document(report))


def _write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot write {path}: {exc.strerror or exc}") from None


def report_paths(folder: str | Path) -> dict[str, Path]:
    """Kind (``json``, ``md``, ``html``) -> path of the report files in ``folder``, each
    checked writable (the folder and its figures folder created), before anything is built.

    Raises:
        DatasetError: The folder or a file cannot be written (names it).
    """
    out = output_dir(folder, "report folder", DatasetError)
    output_dir(out / FIGURES_DIR, "figures folder", DatasetError)
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
    for kind, path in paths.items():
        output_file(path, f"report file ({kind})", DatasetError)
    return paths


def write_report(report: Mapping[str, Any], folder: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, ``report.html`` and ``figures/*.svg`` into
    ``folder``.

    Returns:
        Kind (``json``, ``md``, ``html``) -> path.

    Raises:
        DatasetError: A file cannot be written.
    """
    out = Path(folder)
    paths = report_paths(out)
    write_json(paths["json"], report)
    document = build_document(report)
    for section in document.sections:
        for block in section.blocks:
            if isinstance(block, Figure) and block.path:
                _write_text(out / block.path, block.svg)
    _write_text(paths["md"], to_markdown(document))
    _write_text(paths["html"], to_html(document))
    return paths


__all__ = [
    "ERRORS_SHOWN",
    "FIGURES_DIR",
    "OFFLINE_NOTE",
    "build_document",
    "follow_up_text",
    "instances_text",
    "label_of",
    "norm_align_text",
    "render_html",
    "render_markdown",
    "report_paths",
    "router_text",
    "share",
    "stops_text",
    "strategy_line",
    "summary_lines",
    "write_report",
]
