"""The personalized-rankings report as one `Document`: sections, tables and figures.

`report_document` builds the document of ``prefduel rank`` from the analysis data
(`RankAnalysis.to_dict`) and the drawn figures (`report_figures`); `prefduel.ranking.report`
writes it as HTML and Markdown. Each section has its own small builder, in reading order; a
figure follows the table of the section it illustrates.
"""

from __future__ import annotations

import json
from typing import Any

from prefduel.core.document import (
    NO_VALUE,
    Block,
    Cell,
    Document,
    Figure,
    Items,
    Paragraph,
    Section,
    Settings,
    Table,
    number,
)
from prefduel.ranking.battles import NOTE_REASONS, SKIP_REASONS
from prefduel.ranking.report_figures import FIGURES

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
_MODEL_FLAGS = (("never won", "never_won"), ("never lost", "never_lost"))
_USER_CAVEATS = {
    "battles_of_users_below_min_votes": "battles of those users",
    "bt_fallback_to_ridge": "analysed users whose BT MLE does not exist (ridge used)",
    "undefined_rho_elo": "analysed users with an undefined Elo correlation",
    "undefined_rho_bt": "analysed users with an undefined BT correlation",
    "analysed_without_prompts": "analysed users without prompts (not in features)",
}


def report_document(data: dict[str, Any], figures: dict[str, str]) -> Document:
    """The whole report as one document.

    Args:
        data: The analysis data (`RankAnalysis.to_dict`, plus ``command`` and messages).
        figures: ``{name: svg}`` from `report_figures`; each is linked as
            ``figures/<name>.svg`` in Markdown and inlined in HTML.

    Returns:
        The document: a lead sentence, then the sections in reading order.
    """
    inp, corr = data["input"], data["correlation"]
    lead = Paragraph(
        f"{data['users']['analysed']} users with at least {data['config']['min_votes']} votes; "
        f"mean Spearman ρ with the global ranking: Elo {_value(corr['elo']['mean'])}, "
        f"Bradley-Terry {_value(corr['bt']['mean'])}.",
        "lead",
    )
    sections = [
        _input_section(inp),
        _caveats_section(data),
        _ratings_section(data, figures),
        _correlation_section(corr),
        _tests_section(data["tests"], figures),
        *_prediction_sections(data.get("predictions") or {}, figures),
        *_topic_sections(data, figures),
        *_style_sections(data, figures),
        *_message_sections(data["messages"]),
        _settings_section(data),
    ]
    chips = [
        f"{inp['battles']} battles",
        f"{inp['models']} models",
        f"{data['users']['analysed']} users analysed",
    ]
    return Document("Personalized rankings", sections, intro=[lead], chips=chips)


def _value(value: float | None, digits: int = 3) -> str:
    """A reported number: ``digits`` decimals, tiny and huge values in ``e`` notation."""
    return number(value, digits, scientific=True)


def _interval(low: float | None, high: float | None, digits: int = 1) -> str:
    """A 95% interval as ``[low, high]``, `NO_VALUE` when a bound is missing."""
    if low is None or high is None:
        return NO_VALUE
    return f"[{_value(float(low), digits)}, {_value(float(high), digits)}]"


def _figure(figures: dict[str, str], name: str) -> list[Block]:
    """The named figure as a block (inline SVG, linked file), or nothing when not drawn."""
    if name not in figures:
        return []
    path = f"figures/{name}.svg"
    return [Figure(FIGURES[name], svg=figures[name], path=path, files=[path])]


def _input_section(inp: dict[str, Any]) -> Section:
    """What was read: source, row and battle counts, ordering, prompts."""
    rows = [
        ["source", inp["source"]],
        ["rows read", str(inp["rows_read"])],
        ["battles kept", str(inp["battles"])],
        ["rows skipped", str(inp["skipped_total"])],
        ["models", str(inp["models"])],
        ["users", str(inp["users"])],
        ["ties", str(inp["ties"])],
        ["ordered by", "timestamp" if inp["has_time"] else "file order"],
        ["prompts", "yes" if inp["has_prompts"] else "no"],
    ]
    return Section("Input", [Table(["", "value"], rows, key="input")])


def _caveats_section(data: dict[str, Any]) -> Section:
    """Every skipped row, every kept-with-note row and every user-level caveat, counted."""
    inp, users = data["input"], data["users"]
    rows = [
        ["skipped", k, _SKIP_TEXT.get(k, k), str(inp["skipped"].get(k, 0))] for k in SKIP_REASONS
    ]
    rows += [
        ["kept with note", k, _NOTE_TEXT.get(k, k), str(inp["notes"].get(k, 0))]
        for k in NOTE_REASONS
    ]
    below = (
        f"users with fewer than {data['config']['min_votes']} votes "
        "(left out of per-user analysis; their battles count globally)"
    )
    caveats = {"below_min_votes": below, **_USER_CAVEATS}
    rows += [["users", k, text, str(users.get(k, 0))] for k, text in caveats.items()]
    table = Table(["kind", "reason", "meaning", "count"], rows, key="caveats")
    return Section("Every skip and caveat", [table])


def _ratings_section(data: dict[str, Any], figures: dict[str, str]) -> Section:
    """Global BT and Elo ratings with intervals, battles, win rate and never-won/lost flags."""
    g, cfg = data["global"], data["config"]
    rows = []
    for m in g["models"]:
        flags = [text for text, key in _MODEL_FLAGS if m[key]]
        rows.append(
            [
                m["model"],
                _value(m["bt"], 1),
                _interval(m["bt_lo"], m["bt_hi"]),
                _value(m["elo"], 1),
                _interval(m["elo_lo"], m["elo_hi"]),
                str(m["battles"]),
                _value(m["win_rate"], 3),
                Cell(" ".join(flags), tone="warn" if flags else ""),
            ]
        )
    note = (
        f"BT mode {g['bt_mode']}; the MLE "
        f"{'exists' if g['bt_mle_exists'] else 'does not exist (ridge used)'}; Elo K = "
        f"{cfg['k']}; {cfg['bootstrap']} bootstrap replicates."
    )
    columns = ["model", "BT", "BT 95%", "Elo", "Elo 95%", "battles", "win rate", "flags"]
    table = Table(columns, rows, note=note, key="models")
    return Section("Global ratings", [table, *_figure(figures, "ratings")])


def _correlation_section(corr: dict[str, Any]) -> Section:
    """Summary of the per-user Spearman correlations with the global ranking."""
    rows = [
        [
            name,
            str(c["n"]),
            _value(c["mean"]),
            _value(c["sd"]),
            _value(c["median"]),
            _value(c["share_below_0.1"]),
            _value(c["share_below_0.5"]),
            str(c["undefined"]),
        ]
        for name, c in (("Elo", corr["elo"]), ("Bradley-Terry", corr["bt"]))
    ]
    columns = ["system", "users", "mean", "s.d.", "median", "share < 0.1", "share < 0.5"]
    table = Table(
        [*columns, "undefined"],
        rows,
        note="Paper (115 Arena users): Elo mean 0.432, BT mean 0.043.",
        key="correlation",
    )
    title = "Per-user vs global ranking (Spearman, over the models each user evaluated)"
    return Section(title, [table])


def _tests_section(tests: dict[str, Any], figures: dict[str, str]) -> Section:
    """Wilcoxon tests of the correlations, then the correlation histograms."""
    rows = [
        [label, str(t["n"]), _value(t["statistic"], 1), _value(t["p"], 4)]
        for label, t in (
            ("Elo correlations vs 0", tests["elo_vs_0"]),
            ("BT correlations vs 0", tests["bt_vs_0"]),
            ("Elo vs BT (paired)", tests["elo_vs_bt"]),
        )
    ]
    table = Table(["test", "users", "statistic", "p (two-sided)"], rows, key="tests")
    return Section("Wilcoxon signed-rank tests", [table, *_figure(figures, "correlations")])


def _prediction_row(p: dict[str, Any]) -> list[str]:
    """One prediction (target, predictor, users, MAEs and reduction with intervals, p)."""
    predictor = p["predictor"]
    if predictor["kind"] == "ensemble":
        label = f"ensemble of {predictor['members']} MLPs"
    else:
        label = f"one MLP (L2 {predictor['alpha_single']})"
    low, high = p["ci_relative_reduction"]
    reduction = number(100 * p["relative_reduction"], 1, sign=True, suffix="%")
    return [
        p["target"].upper() + (" (shuffled features)" if p["shuffled_features"] else ""),
        label,
        str(p["users"]),
        f"{_value(p['mae_model'])} {_interval(*p['ci_model'], digits=3)}",
        f"{_value(p['mae_mean_predictor'])} {_interval(*p['ci_mean_predictor'], digits=3)}",
        f"{reduction} [{number(100 * low, 1, sign=True)}, {number(100 * high, 1, sign=True)}]",
        _value(p["wilcoxon_p"], 4),
    ]


def _prediction_sections(preds: dict[str, Any], figures: dict[str, str]) -> list[Section]:
    """How well topic + style features predict each user's scores (none if not run)."""
    if not preds:
        return []
    folds = next(iter(preds.values()))["predictor"]["folds"]
    note = (
        f"{folds}-fold cross-validation; MAE in standardized units over the models each user "
        "evaluated; intervals: bootstrap over users. Paper: Elo 0.450 vs 0.688, BT 0.450 vs "
        "0.510. The shuffled rows are a control and should show no reduction."
    )
    columns = ["target", "predictor", "users", "MAE [95%]", "mean predictor [95%]"]
    table = Table(
        [*columns, "reduction [95%]", "Wilcoxon p"],
        [_prediction_row(p) for p in preds.values()],
        note=note,
        key="prediction",
    )
    title = "Predicting a user's scores from topic + style"
    return [Section(title, [table, *_figure(figures, "prediction")])]


def _topic_sections(data: dict[str, Any], figures: dict[str, str]) -> list[Section]:
    """The topics and their top words, then the users' topic profiles (none if not run)."""
    if "topics" not in data:
        return []
    t = data["topics"]
    rows = [[str(i), ", ".join(words)] for i, words in enumerate(t["top_words"])]
    table = Table(["topic", "top words"], rows, key="topics")
    title = f"Topics ({t['backend']}, {t['distinct_prompts']} distinct prompts)"
    return [Section(title, [table, *_figure(figures, "topics")])]


def _style_sections(data: dict[str, Any], figures: dict[str, str]) -> list[Section]:
    """The meta-styles, then the users' style clusters with their mean ρ (none if not run)."""
    if "styles" not in data:
        return []
    s = data["styles"]
    variance = s["explained_variance"] or [None] * len(s["meta_styles"])
    meta_rows = [
        [str(i), name, _value(e)]
        for i, (name, e) in enumerate(zip(s["meta_styles"], variance, strict=True))
    ]
    meta = Table(
        ["meta-style", "strongest features", "explained variance"], meta_rows, key="meta_styles"
    )
    per_cluster = zip(
        s["cluster_sizes"], s["cluster_mean_rho_elo"], s["cluster_mean_rho_bt"], strict=True
    )
    cluster_rows = [
        [str(c), str(n), _value(elo), _value(bt)] for c, (n, elo, bt) in enumerate(per_cluster)
    ]
    clusters = Table(
        ["cluster", "users", "mean ρ Elo", "mean ρ BT"], cluster_rows, key="style_clusters"
    )
    return [
        Section(f"Meta-styles ({s['backend']} features, {s['method']})", [meta]),
        Section(
            "Users by style cluster (k-means on meta-styles)",
            [clusters, *_figure(figures, "styles")],
        ),
    ]


def _message_sections(messages: list[str]) -> list[Section]:
    """The analysis' messages (fallbacks, omitted steps), if any."""
    return [Section("Messages", [Items(list(messages))])] if messages else []


def _settings_section(data: dict[str, Any]) -> Section:
    """Every setting (as JSON), the package version, the command line and the stage timings."""
    pairs = [(k, json.dumps(v)) for k, v in data["config"].items()]
    pairs.append(("prefduel", data["prefduel_version"]))
    if data.get("command"):
        pairs.append(("command", data["command"]))
    pairs += [(f"time: {k}", number(v, 2, suffix=" s")) for k, v in data["timings_s"].items()]
    return Section("Settings", [Settings(pairs)])


__all__ = ["report_document"]
