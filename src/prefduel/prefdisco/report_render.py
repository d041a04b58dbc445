"""The PrefDisco report as one document: Markdown and one self-contained HTML page.

`build_document` turns the report data (`prefduel.prefdisco.report.build_report`) into one
`prefduel.core.document.Document`: a summary, the strategies compared (one row per model and
discovery strategy: PrefAlign, NormAlign with n, questions, hidden preferences disclosed, stop
reasons, follow-up change rate), then per model and strategy the per-condition table,
NormAlign by task and by attribute, and questions asked vs alignment gain, each with its figure
(`prefduel.prefdisco.report_figures`). `write_report` writes ``report.json`` (the data, as
it is), ``report.md`` and ``report.html`` (the shared writers over the one document) and the
figures as ``figures/*.svg``, which the Markdown page links and the HTML page inlines.

An undefined NormAlign always prints as ``undefined (<why>)`` (`norm_align_text`), never
as an empty or bare value.
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
    number,
)
from prefduel.core.document_html import to_html
from prefduel.core.document_text import to_markdown
from prefduel.prefdisco.errors import DatasetError
from prefduel.prefdisco.report_figures import norm_align_bars, questions_scatter
from prefduel.prefdisco.store import write_json

#: Scoring errors listed on the page (report.json keeps up to 50 per model).
ERRORS_SHOWN = 20

#: Folder of the figure files, relative to the report (Markdown links point into it).
FIGURES_DIR = "figures"

_NO_COMPLETE_INSTANCE = "no instance scored in all three conditions"


def share(value: float | None) -> str:
    """A 0-1 share as a percentage with one decimal (``27.3%``), `NO_VALUE` if missing."""
    return number(None if value is None else 100 * value, 1, suffix="%")


def norm_align_text(group: Mapping[str, Any]) -> str:
    """NormAlign of a report group: ``18.6 [-5.8, 40.1]``, ``0.0`` (no interval) or
    ``undefined (<why>)``.

    Args:
        group: A NormAlign summary of the report (``norm_align``, ``lo``, ``hi``, ``n``,
            ``note``).
    """
    value = group.get("norm_align")
    if value is None:
        if not group.get("n"):
            return f"undefined ({_NO_COMPLETE_INSTANCE})"
        return f"undefined ({group.get('note') or 'oracle - baseline below min_gap'})"
    if group.get("lo") is None or group.get("hi") is None:
        return number(value, 1)
    return f"{number(value, 1)} [{number(group['lo'], 1)}, {number(group['hi'], 1)}]"


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


# -- summary -----------------------------------------------------------------------------------


def _negative_shares(task_share: float | None, instance_share: float | None) -> str:
    tasks = (
        f"{share(task_share)} of tasks"
        if task_share is not None
        else "an undefined share of tasks (no task has a defined NormAlign)"
    )
    instances = (
        f"{share(instance_share)} of instances"
        if instance_share is not None
        else "an undefined share of instances (no instance has oracle - baseline >= min_gap)"
    )
    return f"negative NormAlign in {tasks} and {instances}"


def _trend_text(trend: Mapping[str, Any]) -> str:
    if trend["slope"] is not None:
        return (
            f"questions vs gain r = {number(trend['r'], 2)}, slope {number(trend['slope'], 3)} "
            "per question"
        )
    if not trend["n"]:
        return f"questions vs gain undefined ({_NO_COMPLETE_INSTANCE})"
    return "the same number of questions in every episode"


OFFLINE_NOTE = (
    "Offline run: the models under test are scripted (their answers state their style on a "
    "line the scripted judge reads), so these numbers test the pipeline, not a model."
)


def router_text(check: Mapping[str, Any]) -> str:
    """The router a run used and each measured router's accuracy and misroute rate on the
    labelled questions (``run.json``'s router check)."""
    chosen = check.get("chosen")
    if not chosen:
        return "router: not recorded (a run.json without a router check)"
    routers = check.get("routers") or {}
    how = "auto; " if check.get("setting") == "auto" else ""
    if chosen not in routers:
        return f"router: {chosen} ({how}misroute rate not measured)"
    parts = []
    for name, m in routers.items():
        model = f" ({m['model']})" if m.get("model") else ""
        parts.append(
            f"{name}{model} accuracy {share(m['accuracy'])}, misroute rate "
            f"{share(m['misroute_rate'])}"
        )
    return (
        f"router: {chosen} ({how}on {check.get('questions', 0)} labelled questions: "
        + "; ".join(parts)
        + ")"
    )


NO_QUESTIONS = "none (no discovery)"


def label_of(model: Mapping[str, Any]) -> str:
    """The name of a report entry (``model`` or ``model + interviewer``; older reports: the
    model)."""
    return str(model.get("label") or model["model"])


def stops_text(model: Mapping[str, Any]) -> str:
    """Why discovery stopped, counted (``max_turns 30, min_gain 6``)."""
    stops = (model.get("ask_phase") or {}).get("stops") or {}
    return ", ".join(f"{k} {v}" for k, v in stops.items()) or "none"


def follow_up_text(model: Mapping[str, Any]) -> str:
    """The follow-up change rate with its n (``61.1% of 36``), or why there is none."""
    check = (model.get("ask_phase") or {}).get("follow_up") or {}
    if not check.get("n"):
        return "not measured"
    return f"{share(check['rate'])} of {check['n']}"


def strategy_line(model: Mapping[str, Any]) -> str:
    """Questions, disclosure, stops and follow-up changes of one entry, in one line."""
    ask = model.get("ask_phase") or {}
    disc = next((c for c in model["conditions"] if c["condition"] == "discovery"), None)
    questions = number(disc["questions"], 2) if disc else NO_QUESTIONS
    return (
        f"questions {questions} per episode; hidden preferences disclosed "
        f"{share(ask.get('disclosed_share'))}; stopped: {stops_text(model)}; follow-up "
        f"changes when the first reply is altered: {follow_up_text(model)}"
    )



def instances_text(model: Mapping[str, Any]) -> str:
    """How many instances NormAlign rests on, out of the model's instances."""
    n = model["norm_align"]["n"]
    total = model.get("instances", n)
    return f"n = {n} of {total} instance{'s' if total != 1 else ''}"


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The run's router and user, one sentence per model (with a warning when judge failures
    dropped too many instances), then one over all models (the report's bullet list)."""
    lines = [
        router_text(report.get("router") or {}) + ".",
        f"simulated user: {report.get('user_style', 'cooperative')}.",
    ]
    for m in report["models"]:
        q = m["questions"]
        lines.append(
            f"{label_of(m)}: NormAlign {norm_align_text(m['norm_align'])}; "
            f"{_negative_shares(m['negative_task_share'], q['negative_instance_share'])}; "
            f"{_trend_text(q['trend'])}; accuracy oracle - baseline "
            f"{share(m['accuracy_change'])}; scoring errors {m['error_count']}; "
            f"{instances_text(m)}."
        )
        if m.get("warning"):
            lines.append(f"WARNING: {label_of(m)}: {m['warning']}.")
    t = report["questions_trend"]
    cells = (
        f"Negative NormAlign in {share(report['negative_cell_share'])} of {report['cells']} "
        "model x task cells"
        if report["negative_cell_share"] is not None
        else "Negative NormAlign share undefined (no model x task cell has a defined NormAlign)"
    )
    lines.append(
        f"{cells}; over all models, questions asked vs PrefAlign gain: r = {number(t['r'], 2)} "
        f"(p = {number(t['p'], 4)}, n = {t['n']}), slope {number(t['slope'], 3)} per question."
    )
    return lines


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
    model: Mapping[str, Any], slug: str, settings: Mapping[str, Any]
) -> list[Section]:
    name = label_of(model)
    level = settings["level"]
    intervals = f"{level:.0%} bootstrap intervals" if settings["bootstrap"] else "no intervals"
    whiskers = f" with {level:.0%} interval whiskers" if settings["bootstrap"] else ""
    interval = f"bars{whiskers}; dashed line at 100: the oracle"
    task_svg = norm_align_bars(model["by_task"], "source")
    attribute_svg = norm_align_bars(model["by_attribute"], "attribute")
    scatter_svg = questions_scatter(model["questions"]["points"])
    return [
        Section(f"{name}: per condition", [_conditions_table(model)], id=f"{slug}-conditions"),
        Section(
            f"{name}: NormAlign by task ({intervals})",
            [
                _task_table(model),
                *_figure(task_svg, f"{name}: NormAlign by task, {interval}", f"{slug}-by-task"),
            ],
            id=f"{slug}-by-task",
            in_toc=False,
        ),
        Section(
            f"{name}: NormAlign by attribute (judge scores of the hidden attribute)",
            [
                _attribute_table(model),
                *_figure(
                    attribute_svg,
                    f"{name}: NormAlign by hidden attribute, {interval}",
                    f"{slug}-by-attribute",
                ),
            ],
            id=f"{slug}-by-attribute",
            in_toc=False,
        ),
        Section(
            f"{name}: questions asked vs alignment gain (discovery - baseline PrefAlign)",
            [
                _questions_table(model),
                *_figure(
                    scatter_svg,
                    f"{name}: questions asked vs PrefAlign gain, one point per instance",
                    f"{slug}-questions",
                ),
            ],
            id=f"{slug}-questions",
            in_toc=False,
        ),
        Section(
            f"{name}: calls and cost per condition (cached answers priced too)",
            [
                _usage_table(model)
                if model.get("usage")
                else Paragraph("Calls and cost were not recorded (rows of an older run).", "note"),
                _ask_phase_items(model),
            ],
            id=f"{slug}-cost",
            in_toc=False,
        ),
    ]


def _slugs(names: Sequence[str]) -> list[str]:
    """File-name-safe, distinct (also on case-insensitive file systems) slugs of model names."""
    seen: set[str] = set()
    slugs = []
    for name in names:
        base = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-.") or "model"
        slug, suffix = base, 2
        while slug in seen:
            slug, suffix = f"{base}-{suffix}", suffix + 1
        seen.add(slug)
        slugs.append(slug)
    return slugs


def _closing_sections(report: Mapping[str, Any]) -> list[Section]:
    sections = []
    errors = [f"{label_of(m)}: {e}" for m in report["models"] for e in m["errors"]]
    if errors:
        blocks: list[Any] = [Items(errors[:ERRORS_SHOWN])]
        if len(errors) > ERRORS_SHOWN:
            more = len(errors) - ERRORS_SHOWN
            blocks.append(Paragraph(f"… and {more} more in report.json.", "note"))
        sections.append(Section("Scoring errors (recorded, not filled in)", blocks))
    settings = Settings([(str(k), str(v)) for k, v in report["settings"].items()])
    run = json.dumps(report.get("run", {}), indent=2, sort_keys=True)
    sections.append(
        Section("Settings", [settings, Preformatted(run, summary="Run settings (run.json)")])
    )
    return sections


def build_document(report: Mapping[str, Any]) -> Document:
    """The report (`prefduel.prefdisco.report.build_report`) as one document."""
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
    models = report["models"]
    sections = [
        section
        for model, slug in zip(models, _slugs([label_of(m) for m in models]), strict=True)
        for section in _model_sections(model, slug, s)
    ]
    compared = Section(
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
    intro: list[Any] = [Paragraph(lead, "lead")]
    if report.get("offline"):
        intro.append(Paragraph(OFFLINE_NOTE, "warn"))
    return Document(
        "PrefDisco report",
        [compared, *sections, *_closing_sections(report)],
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


def write_report(report: Mapping[str, Any], folder: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, ``report.html`` and ``figures/*.svg`` into
    ``folder``.

    Returns:
        Kind (``json``, ``md``, ``html``) -> path.

    Raises:
        DatasetError: A file cannot be written.
    """
    out = Path(folder)
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
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
    "router_text",
    "share",
    "stops_text",
    "strategy_line",
    "summary_lines",
    "write_report",
]
