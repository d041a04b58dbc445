"""Reports of a personalized-ranking analysis: JSON, Markdown and HTML, plus CSV tables.

``write_report(result, DIR)`` writes::

    DIR/report.json   everything in numbers (settings, input counts, every skip, tables, tests)
    DIR/report.md     tables + figures inline (SVG as base64 data URIs)
    DIR/report.html   one self-contained offline page (inline CSS and SVG)
    DIR/models.csv    global ratings with 95% intervals
    DIR/users.csv     per-user votes, correlations, BT fallback flag, style cluster
    DIR/figures/*.svg the figures as files

Figures need matplotlib (``pip install "prefduel[report]"``); without it the reports are
written without figures and say so.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.ranking.analysis import RankAnalysis
from prefduel.ranking.battles import NOTE_REASONS, SKIP_REASONS
from prefduel.core.csvcells import spreadsheet_safe
from prefduel.ranking.errors import RankingError
from prefduel.ranking.style import standardize

FIGURES: dict[str, str] = {
    "correlations": "Spearman correlation of each user's ranking with the global ranking",
    "ratings": "Global ratings with 95% bootstrap intervals",
    "prediction": "Predicted vs actual per-user scores (standardized, out of fold)",
    "topics": "Topic profiles of users (rows: users, by style cluster; columns: topics)",
    "styles": "Style clusters: mean standardized style features",
}

_SKIP_TEXT = {
    "non_utf8": "lines with invalid UTF-8 (--encoding-errors skip)",
    "missing_model": "model_a or model_b missing",
    "missing_winner": "winner missing",
    "unknown_winner": "unknown winner label (--unknown-winner skip)",
    "self_battle": "self-battle (model_a == model_b)",
    "empty_user": "user id missing or empty",
}
_NOTE_TEXT = {
    "non_utf8_repaired": "invalid UTF-8 replaced by U+FFFD (kept)",
    "missing_time": "no timestamp (kept, ordered after timed rows)",
    "missing_prompt": "no prompt text (kept for ratings, not in features)",
}


def write_report(
    result: RankAnalysis, out_dir: str | Path, *, command: str | None = None
) -> dict[str, Path]:
    """Write the JSON, Markdown and HTML reports, the CSV tables and the figures.

    Args:
        result: The analysis.
        out_dir: Output directory (created).
        command: The command line that produced it (recorded in the reports).

    Returns:
        ``{"json", "md", "html", "models_csv", "users_csv"}`` paths (and ``"figures"``).
    """
    out = Path(out_dir)
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RankingError(f"cannot create {out}: {exc.strerror or exc}") from None
    data = result.to_dict()
    if command:
        data["command"] = command
    figures, figure_note = report_figures(result)
    if figure_note:
        data["messages"].append(figure_note)
    paths = {
        "json": out / "report.json",
        "md": out / "report.md",
        "html": out / "report.html",
        "models_csv": out / "models.csv",
        "users_csv": out / "users.csv",
        "figures": out / "figures",
    }
    paths["json"].write_text(
        json.dumps(_finite(data), indent=2, default=_json_default, allow_nan=False),
        encoding="utf-8",
    )
    paths["md"].write_text(markdown_report(data, figures), encoding="utf-8")
    paths["html"].write_text(html_report(data, figures), encoding="utf-8")
    _write_csv(paths["models_csv"], data["global"]["models"])
    _write_csv(paths["users_csv"], data["per_user"])
    for name, svg in figures.items():
        (out / "figures" / f"{name}.svg").write_text(svg, encoding="utf-8")
    return paths


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinite floats replaced by ``None`` (strict JSON)."""
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, np.ndarray):
        return _finite(value.tolist())
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as CSV, text cells made safe for spreadsheets (`spreadsheet_safe`)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        if not rows:
            return
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: spreadsheet_safe(v) for k, v in row.items()} for row in rows)


# -- figures ---------------------------------------------------------------------------------


def report_figures(result: RankAnalysis) -> tuple[dict[str, str], str | None]:
    """The report's figures as SVG texts, and a note when some could not be drawn."""
    try:  # the object-oriented API only: no pyplot, no global backend switch
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return {}, (
            'figures omitted: matplotlib is not installed (pip install "prefduel[report]")'
        )
    figures: dict[str, str] = {}
    style = {"svg.fonttype": "none", "svg.hashsalt": "prefduel", "font.size": 9}
    with matplotlib.rc_context(style):
        figures["correlations"] = _svg(_fig_correlations(Figure, result))
        figures["ratings"] = _svg(_fig_ratings(Figure, result))
        if result.predictions:
            figures["prediction"] = _svg(_fig_prediction(Figure, result))
        if result.user_topics is not None and result.styles is not None:
            figures["topics"] = _svg(_fig_topics(Figure, result))
        if result.styles is not None and result.user_style is not None:
            figures["styles"] = _svg(_fig_styles(Figure, result))
    return figures, None


def _svg(fig: Any) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype (inline use)


def _fig_correlations(figure: Any, result: RankAnalysis) -> Any:
    fig = figure(figsize=(9.5, 3))
    axes = fig.subplots(1, 2, sharey=True)
    bins = np.linspace(-1, 1, 21)
    for ax, (name, rho, color) in zip(
        axes,
        (("Elo", result.rho_elo, "#4477aa"), ("Bradley-Terry", result.rho_bt, "#cc6677")),
        strict=True,
    ):
        ok = rho[np.isfinite(rho)]
        ax.hist(ok, bins=bins, color=color, alpha=0.85)
        if ok.size:
            ax.axvline(float(ok.mean()), color="black", lw=1, ls="--")
            ax.set_title(f"{name}: mean {ok.mean():.2f}, median {np.median(ok):.2f} (n={ok.size})")
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_xlabel("Spearman ρ with the global ranking")
    axes[0].set_ylabel("users")
    return fig


def _fig_ratings(figure: Any, result: RankAnalysis) -> Any:
    g = result.global_ratings
    order = np.argsort(g.bt)
    models = [result.battles.models[i] for i in order]
    height = max(2.5, 0.22 * len(models) + 1)
    fig = figure(figsize=(9, height))
    axes = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(models))
    for ax, (name, score, ci) in zip(
        axes, (("Bradley-Terry", g.bt, g.bt_ci), ("Elo", g.elo, g.elo_ci)), strict=True
    ):
        ax.plot(score[order], y, "o", color="#333333", ms=3)
        if ci is not None:
            ax.hlines(y, ci[order, 0], ci[order, 1], color="#4477aa", lw=2)
        ax.set_title(name)
        ax.axvline(1000, color="grey", lw=0.6)
        ax.set_xlabel("rating (anchor 1000)")
    axes[0].set_yticks(y, models)
    return fig


def _fig_prediction(figure: Any, result: RankAnalysis) -> Any:
    names = [n for n in ("elo", "bt") if n in result.predictions]
    fig = figure(figsize=(4 * len(names), 3.6))
    axes = fig.subplots(1, len(names), squeeze=False)
    rng = np.random.default_rng(0)  # display subsample only
    for ax, name in zip(axes[0], names, strict=True):
        pred = result.predictions[name]
        seen = np.isfinite(pred.actual)
        x, yv = pred.actual[seen], pred.predicted[seen]
        if x.size > 4000:
            pick = rng.choice(x.size, 4000, replace=False)
            x, yv = x[pick], yv[pick]
        ax.scatter(x, yv, s=4, alpha=0.4, color="#4477aa")
        lim = float(np.nanmax(np.abs(np.concatenate([x, yv, [1.0]]))))
        ax.plot([-lim, lim], [-lim, lim], color="grey", lw=0.8)
        ax.set_title(
            f"{name.upper()}: MAE {pred.mae_model:.3f} vs mean predictor {pred.mae_mean:.3f}"
        )
        ax.set_xlabel("actual (z)")
        ax.set_ylabel("predicted (z)")
    return fig


def _fig_topics(figure: Any, result: RankAnalysis) -> Any:
    topics = result.user_topics
    clusters = result.styles.clusters
    order = np.lexsort((np.argmax(topics, axis=1), clusters))
    if order.size > 80:
        order = order[np.linspace(0, order.size - 1, 80).astype(int)]
    fig = figure(figsize=(7, 4))
    ax = fig.subplots()
    image = ax.imshow(topics[order], aspect="auto", cmap="viridis", interpolation="nearest")
    words = result.topics.top_words if result.topics is not None else []
    labels = [
        f"{t}: {' '.join(words[t][:2])}" if t < len(words) else str(t)
        for t in range(topics.shape[1])
    ]
    ax.set_xticks(np.arange(topics.shape[1]), labels, rotation=60, ha="right")
    ax.set_ylabel("users (by style cluster)")
    fig.colorbar(image, ax=ax, label="share of prompts")
    return fig


def _fig_styles(figure: Any, result: RankAnalysis) -> Any:
    styles = result.styles
    z = standardize(result.user_style)
    k = len(styles.centers)
    means = np.vstack([z[styles.clusters == c].mean(axis=0) for c in range(k)])
    names = result.style_names or []
    if means.shape[1] > 40:  # embeddings: show meta-style centers instead
        means, names = styles.centers, styles.names
    fig = figure(figsize=(max(5, 0.3 * means.shape[1] + 2), 0.5 * k + 1.8))
    ax = fig.subplots()
    lim = max(1e-9, float(np.abs(means).max()))
    image = ax.imshow(means, aspect="auto", cmap="coolwarm", vmin=-lim, vmax=lim)
    sizes = np.bincount(styles.clusters, minlength=k)
    ax.set_yticks(np.arange(k), [f"cluster {c} (n={sizes[c]})" for c in range(k)])
    ax.set_xticks(np.arange(len(names)), names, rotation=60, ha="right")
    fig.colorbar(image, ax=ax, label="mean z-score")
    return fig


# -- text reports ----------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    return str(value)


def _ci(lo: Any, hi: Any, digits: int = 1) -> str:
    if lo is None or hi is None:
        return "–"
    return f"[{_fmt(float(lo), digits)}, {_fmt(float(hi), digits)}]"


def _sections(data: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], str]]:
    """Report sections as ``(title, header, rows, note)``; shared by Markdown and HTML."""
    sections = []
    inp = data["input"]
    sections.append(
        (
            "Input",
            ["", "value"],
            [
                ["source", inp["source"]],
                ["rows read", str(inp["rows_read"])],
                ["battles kept", str(inp["battles"])],
                ["rows skipped", str(inp["skipped_total"])],
                ["models", str(inp["models"])],
                ["users", str(inp["users"])],
                ["ties", str(inp["ties"])],
                ["ordered by", "timestamp" if inp["has_time"] else "file order"],
                ["prompts", "yes" if inp["has_prompts"] else "no"],
            ],
            "",
        )
    )
    rows = [
        ["skipped", k, _SKIP_TEXT.get(k, k), str(inp["skipped"].get(k, 0))] for k in SKIP_REASONS
    ]
    rows += [
        ["kept with note", k, _NOTE_TEXT.get(k, k), str(inp["notes"].get(k, 0))]
        for k in NOTE_REASONS
    ]
    users = data["users"]
    user_rows = [
        (
            "below_min_votes",
            f"users with fewer than {data['config']['min_votes']} votes "
            "(left out of per-user analysis; their battles count globally)",
        ),
        ("battles_of_users_below_min_votes", "battles of those users"),
        ("bt_fallback_to_ridge", "analysed users whose BT MLE does not exist (ridge used)"),
        ("undefined_rho_elo", "analysed users with an undefined Elo correlation"),
        ("undefined_rho_bt", "analysed users with an undefined BT correlation"),
        ("analysed_without_prompts", "analysed users without prompts (not in features)"),
    ]
    rows += [["users", k, text, str(users.get(k, 0))] for k, text in user_rows]
    sections.append(("Every skip and caveat", ["kind", "reason", "meaning", "count"], rows, ""))

    g = data["global"]
    model_rows = [
        [
            m["model"],
            _fmt(m["bt"], 1),
            _ci(m["bt_lo"], m["bt_hi"]),
            _fmt(m["elo"], 1),
            _ci(m["elo_lo"], m["elo_hi"]),
            str(m["battles"]),
            _fmt(m["win_rate"], 3),
            ("never won " if m["never_won"] else "") + ("never lost" if m["never_lost"] else ""),
        ]
        for m in g["models"]
    ]
    note = (
        f"BT mode {g['bt_mode']}; the MLE "
        f"{'exists' if g['bt_mle_exists'] else 'does not exist (ridge used)'}; Elo K = "
        f"{data['config']['k']}; {data['config']['bootstrap']} bootstrap replicates."
    )
    sections.append(
        (
            "Global ratings",
            ["model", "BT", "BT 95%", "Elo", "Elo 95%", "battles", "win rate", "flags"],
            model_rows,
            note,
        )
    )

    corr = data["correlation"]
    corr_rows = [
        [
            name,
            str(c["n"]),
            _fmt(c["mean"]),
            _fmt(c["sd"]),
            _fmt(c["median"]),
            _fmt(c["share_below_0.1"]),
            _fmt(c["share_below_0.5"]),
            str(c["undefined"]),
        ]
        for name, c in (("Elo", corr["elo"]), ("Bradley-Terry", corr["bt"]))
    ]
    sections.append(
        (
            "Per-user vs global ranking (Spearman, over the models each user evaluated)",
            [
                "system",
                "users",
                "mean",
                "s.d.",
                "median",
                "share < 0.1",
                "share < 0.5",
                "undefined",
            ],
            corr_rows,
            "Paper (115 Arena users): Elo mean 0.432, BT mean 0.043.",
        )
    )
    tests = data["tests"]
    sections.append(
        (
            "Wilcoxon signed-rank tests",
            ["test", "users", "statistic", "p (two-sided)"],
            [
                [label, str(t["n"]), _fmt(t["statistic"], 1), _fmt(t["p"], 4)]
                for label, t in (
                    ("Elo correlations vs 0", tests["elo_vs_0"]),
                    ("BT correlations vs 0", tests["bt_vs_0"]),
                    ("Elo vs BT (paired)", tests["elo_vs_bt"]),
                )
            ],
            "",
        )
    )
    preds = data.get("predictions") or {}
    if preds:
        pred_rows = []
        for p in preds.values():
            kind = p["predictor"]["kind"]
            label = (
                f"ensemble of {p['predictor']['members']} MLPs"
                if kind == "ensemble"
                else f"one MLP (L2 {p['predictor']['alpha_single']})"
            )
            pred_rows.append(
                [
                    p["target"].upper()
                    + (" (shuffled features)" if p["shuffled_features"] else ""),
                    label,
                    str(p["users"]),
                    f"{_fmt(p['mae_model'])} {_ci(*p['ci_model'], digits=3)}",
                    f"{_fmt(p['mae_mean_predictor'])} {_ci(*p['ci_mean_predictor'], digits=3)}",
                    f"{100 * p['relative_reduction']:+.1f}% "
                    f"[{100 * p['ci_relative_reduction'][0]:+.1f}, "
                    f"{100 * p['ci_relative_reduction'][1]:+.1f}]",
                    _fmt(p["wilcoxon_p"], 4),
                ]
            )
        sections.append(
            (
                "Predicting a user's scores from topic + style",
                [
                    "target",
                    "predictor",
                    "users",
                    "MAE [95%]",
                    "mean predictor [95%]",
                    "reduction [95%]",
                    "Wilcoxon p",
                ],
                pred_rows,
                f"{preds[next(iter(preds))]['predictor']['folds']}-fold cross-validation; MAE in "
                "standardized units over the models each user evaluated; intervals: bootstrap "
                "over users. Paper: Elo 0.450 vs 0.688, BT 0.450 vs 0.510. The shuffled rows are "
                "a control and should show no reduction.",
            )
        )
    if "topics" in data:
        t = data["topics"]
        sections.append(
            (
                f"Topics ({t['backend']}, {t['distinct_prompts']} distinct prompts)",
                ["topic", "top words"],
                [[str(i), ", ".join(words)] for i, words in enumerate(t["top_words"])],
                "",
            )
        )
    if "styles" in data:
        s = data["styles"]
        ev = s["explained_variance"] or [None] * len(s["meta_styles"])
        sections.append(
            (
                f"Meta-styles ({s['backend']} features, {s['method']})",
                ["meta-style", "strongest features", "explained variance"],
                [
                    [str(i), n, _fmt(e)]
                    for i, (n, e) in enumerate(zip(s["meta_styles"], ev, strict=True))
                ],
                "",
            )
        )
        sections.append(
            (
                "Users by style cluster (k-means on meta-styles)",
                ["cluster", "users", "mean ρ Elo", "mean ρ BT"],
                [
                    [str(c), str(n), _fmt(e), _fmt(b)]
                    for c, (n, e, b) in enumerate(
                        zip(
                            s["cluster_sizes"],
                            s["cluster_mean_rho_elo"],
                            s["cluster_mean_rho_bt"],
                            strict=True,
                        )
                    )
                ],
                "",
            )
        )
    if data["messages"]:
        sections.append(("Messages", ["message"], [[m] for m in data["messages"]], ""))
    cfg = data["config"]
    settings = [[k, json.dumps(v)] for k, v in cfg.items()]
    settings.append(["prefduel", data["prefduel_version"]])
    if data.get("command"):
        settings.append(["command", data["command"]])
    settings += [[f"time: {k}", f"{v:.2f} s"] for k, v in data["timings_s"].items()]
    sections.append(("Settings", ["setting", "value"], settings, ""))
    return sections


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_report(data: dict[str, Any], figures: dict[str, str]) -> str:
    """The report as Markdown; figures inline as base64 SVG data URIs."""
    lines = ["# Personalized rankings", ""]
    summary = data["correlation"]
    lines.append(
        f"{data['users']['analysed']} users with at least {data['config']['min_votes']} votes; "
        f"mean Spearman ρ with the global ranking: Elo {_fmt(summary['elo']['mean'])}, "
        f"Bradley-Terry {_fmt(summary['bt']['mean'])}."
    )
    lines.append("")
    placed = {
        "Global ratings": "ratings",
        "Wilcoxon signed-rank tests": "correlations",
        "Predicting a user's scores from topic + style": "prediction",
        "Users by style cluster (k-means on meta-styles)": "styles",
    }
    for title, header, rows, note in _sections(data):
        lines += [f"## {title}", ""]
        lines.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
        if note:
            lines += [note, ""]
        key = placed.get(title)
        if key is None and title.startswith("Topics"):
            key = "topics"
        if key and key in figures:
            uri = base64.b64encode(figures[key].encode("utf-8")).decode("ascii")
            lines += [f"![{FIGURES[key]}](data:image/svg+xml;base64,{uri})", ""]
    return "\n".join(lines)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;
margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}svg{max-width:100%;height:auto}
p.note{font-size:.85em;color:#555}
"""


def html_report(data: dict[str, Any], figures: dict[str, str]) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG, no scripts)."""
    esc = html.escape
    summary = data["correlation"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>Personalized rankings</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Personalized rankings</h1>",
        f"<p>{data['users']['analysed']} users with at least {data['config']['min_votes']} "
        f"votes; mean Spearman ρ with the global ranking: Elo {_fmt(summary['elo']['mean'])}, "
        f"Bradley-Terry {_fmt(summary['bt']['mean'])}.</p>",
    ]
    placed = {
        "Global ratings": "ratings",
        "Wilcoxon signed-rank tests": "correlations",
        "Predicting a user's scores from topic + style": "prediction",
        "Users by style cluster (k-means on meta-styles)": "styles",
    }
    for title, header, rows, note in _sections(data):
        parts.append(f"<h2>{esc(title)}</h2>")
        parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header))
        parts.append("</tr></thead><tbody>")
        for row in rows:
            cells = "".join(
                f'<td class="num">{esc(c)}</td>' if _numeric(c) else f"<td>{esc(c)}</td>"
                for c in row
            )
            parts.append(f"<tr>{cells}</tr>")
        parts.append("</tbody></table>")
        if note:
            parts.append(f'<p class="note">{esc(note)}</p>')
        key = placed.get(title)
        if key is None and title.startswith("Topics"):
            key = "topics"
        if key and key in figures:
            parts.append(
                f"<figure>{figures[key]}<figcaption>{esc(FIGURES[key])}</figcaption></figure>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)


def _numeric(text: str) -> bool:
    try:
        float(str(text).replace("%", "").replace("+", ""))
    except ValueError:
        return False
    return True
