"""Figures of the personalized-rankings report (`prefduel.ranking.report`), as SVG texts.

Drawn with matplotlib's object-oriented API (no pyplot, no global backend switch) and a fixed
SVG hash salt, so the same analysis draws the same markup. Without matplotlib
(``pip install "prefduel[report]"``) there are no figures and `report_figures` says so.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from prefduel.ranking.analysis import RankAnalysis
from prefduel.ranking.style import standardize

#: Rows of the topic heatmap at most: with more users, this many are shown, evenly spaced in
#: the order of style cluster then main topic (so each cluster keeps its share of rows).
TOPIC_ROWS = 80

#: Figure name (``figures/<name>.svg``) -> caption.
FIGURES: dict[str, str] = {
    "correlations": "Spearman correlation of each user's ranking with the global ranking",
    "ratings": "Global ratings with 95% bootstrap intervals",
    "prediction": "Predicted vs actual per-user scores (standardized, out of fold)",
    "topics": "Topic profiles of users (rows: users, by style cluster; columns: topics)",
    "styles": "Style clusters: mean standardized style features",
}


def report_figures(result: RankAnalysis) -> tuple[dict[str, str], str | None]:
    """The report's figures as SVG texts, and a note when some could not be drawn.

    Args:
        result: The analysis.

    Returns:
        ``({name: svg}, note)``: the figures that apply to this analysis (names are keys of
        `FIGURES`), and a message for the report when matplotlib is missing (else None).
    """
    try:  # the object-oriented API only: no pyplot, no global backend switch
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return {}, (
            'figures omitted: matplotlib is not installed (pip install "prefduel[report]")'
        )
    figures: dict[str, str] = {}
    # names come from the vote log: "$...$" in one is text, not mathematics to typeset
    style = {
        "svg.fonttype": "none",
        "svg.hashsalt": "prefduel",
        "font.size": 9,
        "text.parse_math": False,
    }
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
    """``fig`` as inline SVG markup."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype (inline use)


def _fig_correlations(figure: Any, result: RankAnalysis) -> Any:
    """Histograms of the per-user Spearman ρ, Elo and Bradley-Terry side by side."""
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
    """Global BT and Elo ratings with their bootstrap intervals, models sorted by BT."""
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
    """Predicted vs actual standardized scores (at most 4000 points per panel)."""
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
    """Heatmap of users' topic shares (at most `TOPIC_ROWS` users, grouped by style
    cluster)."""
    topics = result.user_topics
    clusters = result.styles.clusters
    order = np.lexsort((np.argmax(topics, axis=1), clusters))
    users = order.size
    if users > TOPIC_ROWS:
        order = order[np.linspace(0, users - 1, TOPIC_ROWS).astype(int)]
    fig = figure(figsize=(7, 4))
    ax = fig.subplots()
    image = ax.imshow(topics[order], aspect="auto", cmap="viridis", interpolation="nearest")
    words = result.topics.top_words if result.topics is not None else []
    labels = [
        f"{t}: {' '.join(words[t][:2])}" if t < len(words) else str(t)
        for t in range(topics.shape[1])
    ]
    ax.set_xticks(np.arange(topics.shape[1]), labels, rotation=60, ha="right")
    shown = f"{order.size} of {users} users" if order.size < users else f"all {users} users"
    ax.set_ylabel(f"{shown} (by style cluster)")
    fig.colorbar(image, ax=ax, label="share of prompts")
    return fig


def _fig_styles(figure: Any, result: RankAnalysis) -> Any:
    """Heatmap of each style cluster's mean standardized style features."""
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


__all__ = ["FIGURES", "TOPIC_ROWS", "report_figures"]
