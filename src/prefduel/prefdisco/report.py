"""The PrefDisco report: per-condition tables, NormAlign by task and by attribute, questions vs
alignment, accuracy, discovery recall; as JSON, Markdown and one self-contained HTML page.

`build_report` turns the score rows of a run folder into one JSON-ready ``dict``;
`write_report` writes ``report.json``, ``report.md`` and ``report.html`` (inline CSS and
SVG, no network). Everything is deterministic in the rows and the `ReportConfig`.

Definitions (per model):

* **PrefAlign** per condition: mean ± s.e. over scored episodes (1-5).
* **NormAlign** = 100 (mean disc - mean base) / (mean oracle - mean base) over the instances
  scored in all three conditions, with a paired bootstrap interval; undefined when the oracle
  does not beat the baseline by ``min_gap`` (see `prefduel.prefdisco.metrics`).
  *By task* groups instances by the task source (benchmark); *by attribute* uses that
  attribute's judge scores over the instances where it is hidden.
* **Negative share**: share of task groups with NormAlign < 0 (the paper's statistic), and
  share of instances (with oracle - baseline >= min_gap) whose discovery PrefAlign is below
  the baseline.
* **Questions vs alignment**: per number of questions asked, the mean gain discovery -
  baseline; Pearson r and slope (alignment gained per question).
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefduel.prefdisco.config import CONDITIONS, ReportConfig
from prefduel.prefdisco.errors import DatasetError
from prefduel.prefdisco.metrics import mean_se, norm_align, norm_align_ci, trend
from prefduel.prefdisco.store import read_json, read_jsonl, write_json

REPORT_FORMAT = "prefduel/prefdisco-report/1"


def load_run(folder: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score rows and run settings of a run folder.

    Raises:
        DatasetError: ``scores.jsonl`` or ``run.json`` is missing or malformed.
    """
    root = Path(folder)
    run = read_json(root / "run.json", what="run settings")
    rows = read_jsonl(root / "scores.jsonl", what="score file", allow_torn_tail=True)
    if not rows:
        raise DatasetError(f"{root / 'scores.jsonl'} has no scored episodes; run prefdisco run")
    return rows, run


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


def _instances(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(persona, task) -> condition -> row, for one model."""
    out: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for row in rows:
        out[(row["persona_id"], row["task_id"])][row["condition"]] = row
    return out


def _complete(instances: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Instances with PrefAlign in all three conditions."""
    return [
        dict(conds)
        for _, conds in sorted(instances.items())
        if all(c in conds and conds[c].get("pref_align") is not None for c in CONDITIONS)
    ]


def _summary(
    triples: Sequence[tuple[float, float, float]], config: ReportConfig, label: str
) -> dict[str, Any]:
    d = [t[0] for t in triples]
    b = [t[1] for t in triples]
    o = [t[2] for t in triples]
    s = norm_align_ci(
        d,
        b,
        o,
        min_gap=config.min_gap,
        n_boot=config.bootstrap,
        level=config.level,
        seed=config.seed,
        label=label,
    )
    return {
        "n": s.n,
        "baseline": _r(s.baseline),
        "discovery": _r(s.discovery),
        "oracle": _r(s.oracle),
        "norm_align": _r(s.value, 2),
        "lo": _r(s.lo, 2),
        "hi": _r(s.hi, 2),
        "valid_share": _r(s.valid_share),
        "note": s.reason,
    }


def _condition_table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    table = []
    for condition in CONDITIONS:
        mine = [r for r in rows if r["condition"] == condition]
        if not mine:
            continue
        align_mean, align_se = mean_se([r["pref_align"] for r in mine])
        decided = [r["correct"] for r in mine if r.get("correct") is not None]
        acc = sum(decided) / len(decided) if decided else None
        q_mean, _ = mean_se([r["questions"] for r in mine])
        recalls = [r["recall"] for r in mine if r.get("recall") is not None]
        rec_mean, _ = mean_se(recalls)
        table.append(
            {
                "condition": condition,
                "episodes": len(mine),
                "scored": sum(1 for r in mine if r.get("pref_align") is not None),
                "pref_align": _r(align_mean),
                "pref_align_se": _r(align_se),
                "accuracy": _r(acc),
                "accuracy_n": len(decided),
                "graded_by_llm": sum(1 for r in mine if r.get("accuracy_method") == "grader"),
                "questions": _r(q_mean, 2),
                "recall": _r(rec_mean) if recalls else None,
                "missing_scores": sum(
                    1 for r in mine for s in (r.get("scores") or {}).values() if s is None
                ),
            }
        )
    return table


def _grouped(
    complete: Sequence[Mapping[str, Any]], key: str, config: ReportConfig, model: str
) -> list[dict[str, Any]]:
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for inst in complete:
        groups[inst["baseline"][key]].append(
            (
                inst["discovery"]["pref_align"],
                inst["baseline"]["pref_align"],
                inst["oracle"]["pref_align"],
            )
        )
    return [
        {key: name, **_summary(triples, config, f"{model}|{key}|{name}")}
        for name, triples in sorted(groups.items())
    ]


def _by_attribute(
    instances: Mapping[tuple[str, str], Mapping[str, Any]], config: ReportConfig, model: str
) -> list[dict[str, Any]]:
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    asked: dict[str, list[bool]] = defaultdict(list)
    for _, conds in sorted(instances.items()):
        if "discovery" in conds:
            disc = conds["discovery"]
            for attr in disc["weights"]:
                asked[attr].append(attr in (disc.get("asked") or []))
        if not all(c in conds for c in CONDITIONS):
            continue
        for attr in conds["baseline"]["weights"]:
            s = [conds[c]["scores"].get(attr) for c in ("discovery", "baseline", "oracle")]
            if all(x is not None for x in s):
                groups[attr].append((float(s[0]), float(s[1]), float(s[2])))
    out = []
    for attr in sorted(set(groups) | set(asked)):
        summary = _summary(groups.get(attr, []), config, f"{model}|attribute|{attr}")
        flags = asked.get(attr, [])
        summary["asked_share"] = _r(sum(flags) / len(flags)) if flags else None
        out.append({"attribute": attr, **summary})
    return out


def _questions(complete: Sequence[Mapping[str, Any]], config: ReportConfig) -> dict[str, Any]:
    by_q: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    xs, gains = [], []
    negative = valid = 0
    for inst in complete:
        d, b, o = (inst[c]["pref_align"] for c in ("discovery", "baseline", "oracle"))
        q = int(inst["discovery"]["questions"])
        by_q[q].append(inst)
        xs.append(q)
        gains.append(d - b)
        if norm_align(d, b, o, min_gap=config.min_gap) is not None:
            valid += 1
            negative += d < b
    table = []
    for q in sorted(by_q):
        items = by_q[q]
        gain, gain_se = mean_se(
            [i["discovery"]["pref_align"] - i["baseline"]["pref_align"] for i in items]
        )
        recall, _ = mean_se([i["discovery"].get("recall") for i in items])
        table.append(
            {
                "questions": q,
                "n": len(items),
                "gain": _r(gain),
                "gain_se": _r(gain_se),
                "recall": _r(recall),
            }
        )
    t = trend(xs, gains)
    return {
        "by_questions": table,
        "trend": {"n": t.n, "r": _r(t.r), "slope": _r(t.slope), "p": _r(t.p, 4)},
        "points": [{"questions": x, "gain": _r(g)} for x, g in zip(xs, gains, strict=True)],
        "negative_instances": negative,
        "instances_with_gap": valid,
        "negative_instance_share": _r(negative / valid) if valid else None,
    }


def build_report(
    rows: Sequence[Mapping[str, Any]],
    config: ReportConfig | None = None,
    *,
    run: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Aggregate score rows into the report (a JSON-ready ``dict``).

    Args:
        rows: Score rows (``scores.jsonl``).
        config: Report settings.
        run: The run settings (``run.json``), copied into the report.

    Raises:
        DatasetError: No rows, or a row lacks a field.
    """
    config = config or ReportConfig()
    if not rows:
        raise DatasetError("no score rows to report on")
    needed = {"model", "condition", "persona_id", "task_id", "source", "pref_align", "scores"}
    for i, row in enumerate(rows):
        missing = needed - set(row)
        if missing:
            raise DatasetError(f"score row {i + 1} lacks {sorted(missing)}")
    models = list(dict.fromkeys(r["model"] for r in rows))
    out: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "settings": dict(config.__dict__),
        "run": dict(run or {}),
        "models": [],
    }
    for model in models:
        mine = [r for r in rows if r["model"] == model]
        instances = _instances(mine)
        complete = _complete(instances)
        triples = [
            (i["discovery"]["pref_align"], i["baseline"]["pref_align"], i["oracle"]["pref_align"])
            for i in complete
        ]
        by_task = _grouped(complete, "source", config, model)
        defined = [g for g in by_task if g["norm_align"] is not None]
        base_acc = [r["correct"] for r in mine if r["condition"] == "baseline"]
        oracle_acc = [r["correct"] for r in mine if r["condition"] == "oracle"]
        out["models"].append(
            {
                "model": model,
                "conditions": _condition_table(mine),
                "norm_align": _summary(triples, config, f"{model}|all"),
                "by_task": by_task,
                "by_domain": _grouped(complete, "domain", config, model),
                "by_attribute": _by_attribute(instances, config, model),
                "negative_task_share": (
                    _r(sum(g["norm_align"] < 0 for g in defined) / len(defined))
                    if defined
                    else None
                ),
                "questions": _questions(complete, config),
                "accuracy_change": _accuracy_change(base_acc, oracle_acc),
                "errors": sorted({e for r in mine for e in (r.get("errors") or [])})[:50],
                "error_count": sum(len(r.get("errors") or []) for r in mine),
            }
        )
    pooled = [p for m in out["models"] for p in m["questions"]["points"]]
    t = trend([p["questions"] for p in pooled], [p["gain"] for p in pooled])
    out["questions_trend"] = {"n": t.n, "r": _r(t.r), "slope": _r(t.slope), "p": _r(t.p, 4)}
    cells = [g for m in out["models"] for g in m["by_task"] if g["norm_align"] is not None]
    out["negative_cell_share"] = (
        _r(sum(g["norm_align"] < 0 for g in cells) / len(cells)) if cells else None
    )
    out["cells"] = len(cells)
    return out


def _accuracy_change(base: Sequence[bool | None], oracle: Sequence[bool | None]) -> float | None:
    b = [x for x in base if x is not None]
    o = [x for x in oracle if x is not None]
    if not b or not o:
        return None
    return _r(sum(o) / len(o) - sum(b) / len(b))


# -- rendering -------------------------------------------------------------------------------


def _fmt(x: Any, nd: int = 2, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if pct:
        return f"{100 * x:.1f}%"
    return f"{x:.{nd}f}"


def _ci(g: Mapping[str, Any]) -> str:
    if g.get("norm_align") is None:
        return "undefined" + (f" ({g['note']})" if g.get("note") else "")
    if g.get("lo") is None:
        return f"{g['norm_align']:.1f}"
    return f"{g['norm_align']:.1f} [{g['lo']:.1f}, {g['hi']:.1f}]"


def _tables(report: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by Markdown and HTML."""
    tables = []
    for m in report["models"]:
        name = m["model"]
        tables.append(
            (
                f"{name}: per condition",
                [
                    "condition",
                    "episodes",
                    "scored",
                    "PrefAlign",
                    "± s.e.",
                    "accuracy",
                    "questions",
                    "recall",
                    "missing scores",
                ],
                [
                    [
                        c["condition"],
                        _fmt(c["episodes"]),
                        _fmt(c["scored"]),
                        _fmt(c["pref_align"], 3),
                        _fmt(c["pref_align_se"], 3),
                        _fmt(c["accuracy"], pct=True) + f" (n={c['accuracy_n']})",
                        _fmt(c["questions"]),
                        _fmt(c["recall"], pct=True),
                        _fmt(c["missing_scores"]),
                    ]
                    for c in m["conditions"]
                ],
            )
        )
        na = m["norm_align"]
        tables.append(
            (
                f"{name}: NormAlign by task (95% bootstrap intervals)",
                ["task", "instances", "baseline", "discovery", "oracle", "NormAlign"],
                [
                    [
                        g["source"],
                        _fmt(g["n"]),
                        _fmt(g["baseline"], 3),
                        _fmt(g["discovery"], 3),
                        _fmt(g["oracle"], 3),
                        _ci(g),
                    ]
                    for g in m["by_task"]
                ]
                + [
                    [
                        "**all**",
                        _fmt(na["n"]),
                        _fmt(na["baseline"], 3),
                        _fmt(na["discovery"], 3),
                        _fmt(na["oracle"], 3),
                        _ci(na),
                    ]
                ],
            )
        )
        tables.append(
            (
                f"{name}: NormAlign by attribute (judge scores of the hidden attribute)",
                [
                    "attribute",
                    "instances",
                    "asked when hidden",
                    "baseline",
                    "discovery",
                    "oracle",
                    "NormAlign",
                ],
                [
                    [
                        g["attribute"],
                        _fmt(g["n"]),
                        _fmt(g["asked_share"], pct=True),
                        _fmt(g["baseline"]),
                        _fmt(g["discovery"]),
                        _fmt(g["oracle"]),
                        _ci(g),
                    ]
                    for g in m["by_attribute"]
                ],
            )
        )
        q = m["questions"]
        tables.append(
            (
                f"{name}: questions asked vs alignment gain (discovery - baseline PrefAlign)",
                ["questions", "instances", "mean gain", "± s.e.", "recall"],
                [
                    [
                        _fmt(x["questions"]),
                        _fmt(x["n"]),
                        _fmt(x["gain"], 3),
                        _fmt(x["gain_se"], 3),
                        _fmt(x["recall"], pct=True),
                    ]
                    for x in q["by_questions"]
                ],
            )
        )
    return tables


def _summary_lines(report: Mapping[str, Any]) -> list[str]:
    lines = []
    for m in report["models"]:
        q = m["questions"]
        t = q["trend"]
        trend_text = (
            f"questions vs gain r = {_fmt(t['r'])}, slope {_fmt(t['slope'], 3)} per question"
            if t["slope"] is not None
            else "the same number of questions in every episode"
        )
        lines.append(
            f"{m['model']}: NormAlign {_ci(m['norm_align'])}; negative NormAlign in "
            f"{_fmt(m['negative_task_share'], pct=True)} of tasks and "
            f"{_fmt(q['negative_instance_share'], pct=True)} of instances; {trend_text}; "
            f"accuracy oracle - baseline {_fmt(m['accuracy_change'], pct=True)}; scoring "
            f"errors {m['error_count']}."
        )
    t = report["questions_trend"]
    lines.append(
        f"Negative NormAlign in {_fmt(report['negative_cell_share'], pct=True)} of "
        f"{report['cells']} model x task cells; over all models, questions asked vs PrefAlign "
        f"gain: r = {_fmt(t['r'])} (p = {_fmt(t['p'], 4)}, n = {t['n']}), slope "
        f"{_fmt(t['slope'], 3)} per question."
    )
    return lines


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown."""
    s = report["settings"]
    lines = [
        "# PrefDisco report",
        "",
        f"NormAlign = 100 (disc - base) / (oracle - base); undefined when oracle - base < "
        f"{s['min_gap']}; {s['bootstrap']} bootstrap replicates, {s['level']:.0%} intervals.",
        "",
    ]
    lines += [f"- {line}" for line in _summary_lines(report)]
    for title, header, rows in _tables(report):
        lines += ["", f"## {title}", "", "| " + " | ".join(header) + " |"]
        lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    errors = [(m["model"], e) for m in report["models"] for e in m["errors"]]
    if errors:
        lines += ["", "## Scoring errors (recorded, not filled in)", ""]
        lines += [f"- {model}: {e}" for model, e in errors[:20]]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f2f2f2}
.note{color:#555;font-size:.9rem}figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555}
"""


def _svg_bars(groups: Sequence[Mapping[str, Any]], label_key: str) -> str:
    """Horizontal bars of NormAlign with interval whiskers (inline SVG)."""
    items = [g for g in groups if g.get("norm_align") is not None]
    if not items:
        return ""
    values = [g["norm_align"] for g in items]
    lows = [g["lo"] if g.get("lo") is not None else g["norm_align"] for g in items]
    highs = [g["hi"] if g.get("hi") is not None else g["norm_align"] for g in items]
    lo, hi = min([0.0, *lows, -10.0]), max([100.0, *highs])
    width, left, row = 640, 170, 22
    height = row * len(items) + 30

    def x(v: float) -> float:
        return left + (width - left - 20) * (v - lo) / (hi - lo)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-size="11" role="img">',
        f'<line x1="{x(0):.1f}" y1="0" x2="{x(0):.1f}" y2="{height - 20}" stroke="#888"/>',
        f'<line x1="{x(100):.1f}" y1="0" x2="{x(100):.1f}" y2="{height - 20}" stroke="#bbb" '
        'stroke-dasharray="3,3"/>',
        f'<text x="{x(0):.1f}" y="{height - 5}" text-anchor="middle">0</text>',
        f'<text x="{x(100):.1f}" y="{height - 5}" text-anchor="middle">100 (oracle)</text>',
    ]
    for i, (g, v, a, b) in enumerate(zip(items, values, lows, highs, strict=True)):
        y = i * row + 4
        colour = "#c0504d" if v < 0 else "#4f81bd"
        x0, x1 = sorted((x(0), x(v)))
        parts += [
            f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">'
            f"{html.escape(str(g[label_key]))}</text>",
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="14" '
            f'fill="{colour}"/>',
            f'<line x1="{x(a):.1f}" y1="{y + 7}" x2="{x(b):.1f}" y2="{y + 7}" stroke="#222"/>',
        ]
    parts.append("</svg>")
    return "".join(parts)


def _svg_scatter(points: Sequence[Mapping[str, Any]]) -> str:
    """Questions asked (x) vs PrefAlign gain (y), jittered deterministically."""
    if not points:
        return ""
    width, height, pad = 420, 260, 40
    gains = [p["gain"] for p in points]
    qmax = max(5, max(p["questions"] for p in points))
    gmin, gmax = min([-0.5, *gains]), max([0.5, *gains])

    def px(q: float) -> float:
        return pad + (width - 2 * pad) * q / qmax

    def py(g: float) -> float:
        return height - pad - (height - 2 * pad) * (g - gmin) / (gmax - gmin)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-size="11" role="img">',
        f'<line x1="{pad}" y1="{py(0):.1f}" x2="{width - pad}" y2="{py(0):.1f}" stroke="#888"/>',
    ]
    for q in range(qmax + 1):
        parts.append(
            f'<text x="{px(q):.1f}" y="{height - pad + 15}" text-anchor="middle">{q}</text>'
        )
    parts.append(
        f'<text x="{width / 2}" y="{height - 5}" text-anchor="middle">questions asked</text>'
    )
    parts.append(f'<text x="5" y="{pad - 10}">gain (PrefAlign)</text>')
    for i, p in enumerate(points):
        jitter = ((i * 37) % 11 - 5) / 40
        parts.append(
            f'<circle cx="{px(p["questions"] + jitter):.1f}" cy="{py(p["gain"]):.1f}" r="3" '
            'fill="#4f81bd" fill-opacity="0.6"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG; no scripts)."""
    s = report["settings"]
    body = [
        "<h1>PrefDisco report</h1>",
        f'<p class="note">NormAlign = 100 (disc &minus; base) / (oracle &minus; base); undefined '
        f"when oracle &minus; base &lt; {s['min_gap']}; {s['bootstrap']} bootstrap replicates, "
        f"{s['level']:.0%} intervals.</p>",
        "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in _summary_lines(report)) + "</ul>",
    ]
    tables = _tables(report)
    per_model = len(tables) // max(1, len(report["models"]))
    for index, (title, header, rows) in enumerate(tables):
        model = report["models"][index // per_model]
        body.append(f"<h2>{html.escape(title)}</h2>")
        body.append(
            "<table><thead><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in header)
            + "</tr></thead><tbody>"
            + "".join(
                "<tr>"
                + "".join(f"<td>{html.escape(c.replace('**', ''))}</td>" for c in row)
                + "</tr>"
                for row in rows
            )
            + "</tbody></table>"
        )
        kind = index % per_model
        figure = ""
        if kind == 1:
            figure = _svg_bars(model["by_task"], "source")
        elif kind == 2:
            figure = _svg_bars(model["by_attribute"], "attribute")
        elif kind == 3:
            figure = _svg_scatter(model["questions"]["points"])
        if figure:
            body.append(f"<figure>{figure}<figcaption>{html.escape(title)}</figcaption></figure>")
    errors = [(m["model"], e) for m in report["models"] for e in m["errors"]]
    if errors:
        body.append("<h2>Scoring errors (recorded, not filled in)</h2><ul>")
        body += [f"<li>{html.escape(m)}: {html.escape(e)}</li>" for m, e in errors[:20]]
        body.append("</ul>")
    body.append(
        "<details><summary>Run settings</summary><pre>"
        + html.escape(json.dumps(report.get("run", {}), indent=2, sort_keys=True))
        + "</pre></details>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>PrefDisco report</title>"
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(report: Mapping[str, Any], folder: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``folder``.

    Returns:
        Kind -> path.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
    write_json(paths["json"], report)
    for kind, text in (("md", render_markdown(report)), ("html", render_html(report))):
        try:
            paths[kind].write_text(text, encoding="utf-8")
        except OSError as exc:
            raise DatasetError(f"cannot write {paths[kind]}: {exc.strerror or exc}") from None
    return paths
