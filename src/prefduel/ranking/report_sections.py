"""The personalized-rankings report as one `Document`: sections, tables and figures.

`report_document` builds the document of ``prefduel rank`` from the analysis data
(`RankAnalysis.to_dict`) and the drawn figures (`report_figures`); `prefduel.ranking.report`
writes it as HTML and Markdown. Each section has its own small builder, in reading order; a
figure follows the table of the section it illustrates. The closing reference sections (input,
skips and caveats, messages, settings) are built in `prefduel.ranking.report_reference`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from prefduel.core.document import (
    NO_VALUE,
    Block,
    Cell,
    Document,
    Figure,
    Paragraph,
    Section,
    Table,
    build_sections,
    number,
)
from prefduel.ranking.report_figures import FIGURES, TOPIC_ROWS
from prefduel.ranking.report_reference import (
    caveats_section,
    input_section,
    message_sections,
    settings_section,
)
from prefduel.ranking.report_summary import (
    contents_section,
    summary_section,
    verdict_lines,
    warnings,
)

_MODEL_FLAGS = (("never won", "never_won"), ("never lost", "never_lost"))


def report_document(
    data: dict[str, Any], figures: dict[str, str], user: Table | None = None
) -> Document:
    """The whole report as one document.

    Args:
        data: The analysis data (`RankAnalysis.to_dict`, plus ``command`` and messages, and
            ``user_leaderboard`` with ``user``).
        figures: ``{name: svg}`` from `report_figures`; each is linked as
            ``figures/<name>.svg`` in Markdown and inlined in HTML.
        user: One user's leaderboard (`prefduel.ranking.report.user_leaderboard_table`),
            shown as its own section after the contents.

    Returns:
        The document: warnings, a summary and the contents, then the findings, then the
        reference sections (input, every skip, messages, settings).
    """
    inp, corr = data["input"], data["correlation"]
    lead = Paragraph(
        f"{data['users']['analysed']} users with at least {data['config']['min_votes']} votes; "
        f"mean Spearman ρ with the global ranking: Elo {_value(corr['elo']['mean'])}, "
        f"Bradley-Terry {_value(corr['bt']['mean'])}. {_estimate_sentence(data)}",
        "lead",
    )
    name = (data.get("user_leaderboard") or {}).get("user") if user is not None else None
    sections = build_sections(_Inputs(data, figures, user, name), SECTIONS)
    opening = [summary_section(data, lead, name), contents_section(sections)]
    chips = [
        f"{inp['battles']} battles",
        f"{inp['models']} models",
        f"{data['users']['analysed']} users analysed",
    ]
    return Document(
        "Personalized rankings", [*opening, *sections], intro=warnings(data), chips=chips
    )


@dataclass(frozen=True)
class _Inputs:
    """What the report's sections are built from."""

    data: dict[str, Any]
    figures: dict[str, str]
    user: Table | None
    name: str | None


def _user_section(inputs: _Inputs) -> Section | None:
    if inputs.user is None:
        return None
    return Section(f"Leaderboard of user {inputs.name}", [inputs.user])


#: The report's sections after the summary and the contents, in order: the findings, then the
#: reference sections (`prefduel.core.document.build_sections`).
SECTIONS = (
    _user_section,
    lambda i: _ratings_section(i.data, i.figures),
    lambda i: _correlation_section(i.data["correlation"]),
    lambda i: _trust_sections(i.data),
    lambda i: _tests_section(i.data["tests"], i.figures),
    lambda i: _feature_sections(i.data.get("features")),
    lambda i: _prediction_sections(i.data, i.figures),
    lambda i: _topic_sections(i.data, i.figures),
    lambda i: _style_sections(i.data, i.figures),
    lambda i: input_section(i.data["input"]),
    lambda i: caveats_section(i.data),
    lambda i: message_sections(i.data["messages"]),
    lambda i: settings_section(i.data),
)


def _estimate_sentence(data: dict[str, Any]) -> str:
    """Which per-user BT estimates the users got, and ρ of those with and without an MLE."""
    per_user = data["per_user_bt"]
    users, with_mle = per_user["users"], per_user["mle_exists"]
    split = data["correlation"]["by_bt_estimate"]
    share = 100.0 * with_mle / max(users, 1)
    if per_user["mode"] == "mle":
        how = f"the other {users - with_mle} use ridge BT"
    else:
        how = f"every user's BT is {split['no_mle']['bt_estimate']}"
        if per_user["tau"] is not None:
            how += f" (shrinkage τ = {_value(per_user['tau'])} logits)"
    return (
        f"{with_mle} of {users} users ({share:.0f}%) have a BT maximum-likelihood estimate; "
        f"{how}. Mean BT ρ: {_value(split['mle_exists']['bt']['mean'])} with an MLE, "
        f"{_value(split['no_mle']['bt']['mean'])} without."
    )


def _value(value: float | None, digits: int = 3) -> str:
    """A reported number: ``digits`` decimals, tiny and huge values in ``e`` notation."""
    return number(value, digits, scientific=True)


def _rank_range(low: int | None, high: int | None) -> str:
    """A rank interval as ``low–high`` (one number when they agree), `NO_VALUE` without one."""
    if low is None or high is None:
        return NO_VALUE
    return str(low) if low == high else f"{low}–{high}"


def _interval(low: float | None, high: float | None, digits: int = 1) -> str:
    """A 95% interval as ``[low, high]``, `NO_VALUE` when a bound is missing."""
    if low is None or high is None:
        return NO_VALUE
    return f"[{_value(float(low), digits)}, {_value(float(high), digits)}]"


def _figure(figures: dict[str, str], name: str, more: str = "") -> list[Block]:
    """The named figure as a block (inline SVG, linked file), its caption followed by
    ``more``, or nothing when not drawn."""
    if name not in figures:
        return []
    path = f"figures/{name}.svg"
    caption = f"{FIGURES[name]}. {more}" if more else FIGURES[name]
    return [Figure(caption, svg=figures[name], path=path, files=[path])]


def _ratings_section(data: dict[str, Any], figures: dict[str, str]) -> Section:
    """Global BT and Elo ratings with intervals, rank intervals, battles, win rate and
    never-won/lost flags (and the spread of Elo across orders when averaged)."""
    g = data["global"]
    by_orders = bool(g["elo_order"]["orders"])
    rows = []
    for m in g["models"]:
        flags = [text for text, key in _MODEL_FLAGS if m[key]]
        row = [
            m["model"],
            _value(m["bt"], 1),
            _interval(m["bt_lo"], m["bt_hi"]),
            str(m["rank"]) if m["rank"] is not None else NO_VALUE,
            _rank_range(m["rank_lo"], m["rank_hi"]),
            _value(m["elo"], 1),
            _interval(m["elo_lo"], m["elo_hi"]),
        ]
        if by_orders:
            row.append(_value(m.get("elo_order_sd"), 1))
        flag_cell = Cell(" ".join(flags), tone="warn" if flags else "")
        row += [str(m["battles"]), _value(m["win_rate"], 3), flag_cell]
        rows.append(row)
    columns = ["model", "BT", "BT 95%", "rank", "rank 95%", "Elo", "Elo 95%"]
    if by_orders:
        columns.append("Elo s.d. over orders")
    columns += ["battles", "win rate", "flags"]
    table = Table(columns, rows, note=_ratings_note(data), key="models")
    return Section("Global ratings", [table, *_figure(figures, "ratings")])


def _ratings_note(data: dict[str, Any]) -> str:
    """How the global ratings were made: BT mode, MLE, Elo order, bootstrap, rank rule."""
    g, cfg = data["global"], data["config"]
    order = g["elo_order"]
    if order["orders"]:
        how = (
            f"Elo = mean over {order['orders']} seeded random orders (s.d. across orders: mean "
            f"{_value(order['order_sd_mean'], 1)}, max {_value(order['order_sd_max'], 1)}; "
            f"Spearman ρ of the "
            f"{'time' if order['timestamps'] else 'file'}-order Elo with the mean: "
            f"{_value(order['spearman_in_order_vs_mean'])})"
        )
    else:
        how = f"Elo in {'time' if order['timestamps'] else 'file'} order"
    return (
        f"Global BT mode {g['bt_mode']}; the MLE "
        f"{'exists' if g['bt_mle_exists'] else 'does not exist (ridge used)'}; Elo K = "
        f"{cfg['k']}; {how}; {cfg['bootstrap']} bootstrap replicates. Rank 95%: the ranks a "
        "model can take given the BT intervals (Arena-style: it cannot be separated from the "
        "models whose intervals overlap its own)."
    )


def _correlation_section(corr: dict[str, Any]) -> Section:
    """Summary of the per-user Spearman correlations with the global ranking, overall and
    split by whether the user's BT MLE exists."""
    split = corr["by_bt_estimate"]
    labelled = [("Elo", corr["elo"]), ("Bradley-Terry", corr["bt"])]
    for key, who in (("mle_exists", "users with a BT MLE"), ("no_mle", "users without")):
        group = split[key]
        labelled.append((f"Elo, {who}", group["elo"]))
        labelled.append((f"BT ({group['bt_estimate']}), {who}", group["bt"]))
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
        for name, c in labelled
    ]
    columns = ["system", "users", "mean", "s.d.", "median", "share < 0.1", "share < 0.5"]
    without = split["no_mle"]
    toward = "the global ranking" if without["bt_estimate"] == "hierarchical" else "equal models"
    note = (
        "For comparison, the paper's published figures (its 115 Arena users, not this log): "
        "mean ρ Elo 0.432, BT 0.043. Users without a BT MLE "
        f"({without['users']} of {without['users'] + split['mle_exists']['users']}) get a "
        f"{without['bt_estimate']} BT, shrunk toward {toward}, which moves their ρ: compare "
        "the groups before reading the overall mean."
    )
    table = Table([*columns, "undefined"], rows, note=note, key="correlation")
    title = "Per-user vs global ranking (Spearman, over the models each user evaluated)"
    return Section(title, [table])


def _trust_sections(data: dict[str, Any]) -> list[Section]:
    """"Which estimate to trust": held-out-vote log-loss of the global, ridge and hierarchical
    BT estimates (none if it was not computed)."""
    loss = data.get("holdout")
    if not loss:
        return []
    labels = {
        "global": "global BT (one ranking for everyone)",
        "ridge": "per-user ridge BT",
        "hierarchical": "hierarchical BT (global + shrunk user deviation)",
    }
    rows = [
        [
            Cell(label, tone="best" if name == loss["best"] else ""),
            _value(loss[name], 4),
            number(loss[name] - math.log(2), 4, sign=True),
        ]
        for name, label in labels.items()
    ]
    note = (
        f"{loss['votes']} held-out votes of {loss['users']} analysed users, {loss['folds']} "
        f"seeded folds per user (seed {loss['seed']}): each vote is predicted by fits that did "
        "not see it (the global fit also sees other users' votes); ties count as half a win "
        "each way. Lower is better; a coin flip scores log 2 = 0.6931. Mean shrinkage τ of "
        f"the hierarchical fits: {_value(loss['tau'])} logits."
    )
    table = Table(
        ["estimate", "held-out log-loss", "vs coin flip"], rows, note=note, key="holdout"
    )
    lead = Paragraph(
        f"On this log, the {labels[loss['best']]} predicts held-out votes best; this run's "
        f"per-user BT is --bt-mode {data['per_user_bt']['mode']}.",
        "lead",
    )
    return [Section("Which estimate to trust", [lead, table])]


def _feature_sections(check: dict[str, Any] | None) -> list[Section]:
    """Whether the topic and style features can carry a finding (none if not checked)."""
    if not check:
        return []
    single = check["single_token_share"]
    rows = [
        ["users with prompts", str(check["users"])],
        ["features (topics + style)", str(check["features"])],
        ["features that vary across users", str(check["varying_features"])],
        ["independent directions of variation", str(check["effective_rank"])],
        ["share of the first direction", _value(check["first_direction_share"])],
        ["distinct prompts", str(check["distinct_prompts"])],
        ["share that are single tokens (ids)", _value(single)],
        [
            "verdict",
            Cell(
                "degenerate: " + "; ".join(check["reasons"]) if check["degenerate"] else "usable",
                tone="warn" if check["degenerate"] else "",
            ),
        ],
    ]
    table = Table(["", "value"], rows, key="feature_check")
    return [Section("Feature check", [table])]


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


def _prediction_sections(data: dict[str, Any], figures: dict[str, str]) -> list[Section]:
    """The verdict, then how well topic + style features predict each user's scores (none
    if not run)."""
    preds = data.get("predictions") or {}
    if not preds:
        return []
    folds = next(iter(preds.values()))["predictor"]["folds"]
    note = (
        f"{folds}-fold cross-validation; MAE in standardized units over the models each user "
        "evaluated; intervals: bootstrap over users. The shuffled rows are a control and "
        "should show no reduction; the features helped only when the reduction's 95% interval "
        "lies above 0 and above the shuffled control's. For comparison, the paper's published "
        "figures (its Arena users, not this log): MAE Elo 0.450 vs 0.688 for the mean "
        "predictor, BT 0.450 vs 0.510."
    )
    verdicts = [Paragraph(line, "lead") for line in verdict_lines(data)]
    columns = ["target", "predictor", "users", "MAE [95%]", "mean predictor [95%]"]
    table = Table(
        [*columns, "reduction [95%]", "Wilcoxon p"],
        [_prediction_row(p) for p in preds.values()],
        note=note,
        key="prediction",
    )
    title = "Predicting a user's scores from topic + style"
    return [Section(title, [*verdicts, table, *_figure(figures, "prediction")])]


def _topic_sections(data: dict[str, Any], figures: dict[str, str]) -> list[Section]:
    """The topics and their top words, then the users' topic profiles (none if not run)."""
    if "topics" not in data:
        return []
    t = data["topics"]
    rows = [[str(i), ", ".join(words)] for i, words in enumerate(t["top_words"])]
    shown = _heatmap_rows(t.get("users")) if "topics" in figures else ""
    table = Table(["topic", "top words"], rows, note=shown, key="topics")
    title = f"Topics ({t['backend']}, {t['distinct_prompts']} distinct prompts)"
    return [Section(title, [table, *_figure(figures, "topics", shown)])]


def _heatmap_rows(users: int | None) -> str:
    """Which users the topic heatmap shows (at most `TOPIC_ROWS` rows)."""
    if users is None:
        return ""
    if users <= TOPIC_ROWS:
        return f"Heatmap: all {users} users shown, by style cluster."
    return (
        f"Heatmap: {TOPIC_ROWS} of {users} users shown, evenly spaced in the order of style "
        "cluster, then main topic (so each cluster keeps its share of rows)."
    )


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


__all__ = ["report_document"]
