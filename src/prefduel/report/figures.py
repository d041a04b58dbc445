"""Report figures (matplotlib, imported lazily): learning curves, forest plot, heatmaps.

Figures are drawn on `matplotlib.figure.Figure` objects without pyplot (no global state,
no GUI backend): PNG through Agg, SVG through matplotlib's SVG backend with text as paths, so
the inline SVG needs no font. Every policy keeps one color in every figure
(`policy_colors`). That setup (the optional import, style, colors and saving) is in
`prefduel.report.drawing`, re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from prefduel.report.drawing import (
    COMPETITOR_COLOR,
    COMPETITOR_DASH,
    DASHDOT,
    INSTALL_HINT,
    PALETTE,
    PNG_DPI,
    SOLID_COLORS,
    STYLE,
    MissingDependencyError,
    SavedFigure,
    line_style,
    missing_matplotlib,
    policy_colors,
    require_matplotlib,
    save_figure,
    style,
)
from prefduel.report.labels import (
    LEGEND_WIDTH,
    ROW_WIDTH,
    TICK_WIDTH,
    fit_labels,
    label_of,
    short_name,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from prefduel.report.compute import ProfileTable, WorldReport

Labels = Mapping[str, str] | None  # {policy spec: label shown}; None shows the specs

#: Inches: the paired-gains legend and x label need this much even for one world.
MIN_GAINS_WIDTH = 7.4


def _legend_label(label: str, n: int) -> str:
    return f"{label}  (n={n})"


def _learning_lines(
    left: Any,
    right: Any,
    report: WorldReport,
    policies: Sequence[str],
    colors: dict[str, str],
    competitor: str | None,
    labels: Labels,
) -> None:
    """Each policy's per-arrival curve (left) and per-round curve (right), with 95% bands."""
    shown = fit_labels([label_of(labels, p) for p in policies], LEGEND_WIDTH)
    for policy in policies:
        curve, rounds = report.curves[policy], report.rounds[policy]
        color = colors.get(policy, "#000000")
        dashed = line_style(policy, colors, competitor)
        x = curve["arrival"] + 1
        left.fill_between(x, curve["lo"], curve["hi"], color=color, alpha=0.13, lw=0)
        left.plot(
            x,
            curve["mean"],
            color=color,
            lw=1.5,
            ls=dashed,
            label=_legend_label(shown[label_of(labels, policy)], curve["n"]),
        )
        right.fill_between(
            rounds["round"], rounds["lo"], rounds["hi"], color=color, alpha=0.13, lw=0
        )
        right.plot(
            rounds["round"], rounds["mean"], color=color, lw=1.4, ls=dashed, marker="o", ms=2.5
        )


def learning_figure(
    report: WorldReport,
    colors: dict[str, str],
    competitor: str | None,
    window: int,
    labels: Labels = None,
) -> Figure:
    """Two panels: excess regret per arrival (centered moving mean, 95% band) and per round.

    Args:
        report: The world's numbers (``curves`` and ``rounds`` per policy).
        colors: Color of each policy.
        competitor: Drawn dashed (or None).
        window: Moving-mean window, for the axis label.
        labels: Label of each policy in the legend (cut to fit; default: the spec).
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.5, 4.0), layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1.0]})
    policies = [p for p in report.policies if p in report.curves]
    _learning_lines(left, right, report, policies, colors, competitor, labels)
    left.set_xlabel("arrival (student number, in order of arrival)")
    left.set_ylabel(f"excess regret per arrival\n(centered {window}-arrival moving mean)")
    left.set_title("Learning across students", loc="left")
    right.set_xlabel("round (question within a session)")
    right.set_ylabel("mean excess regret per round")
    right.set_title("Learning within a session", loc="left")
    if policies:
        n_max = max(report.rounds[p]["round"].size for p in policies)
        right.set_xticks(sorted({1, *range(4, n_max + 1, 4), n_max}))
        left.set_xlim(1, max(report.curves[p]["arrival"].size for p in policies))
    for ax in (left, right):
        ax.set_ylim(bottom=0)
    if policies:
        fig.legend(
            loc="outside right upper",
            title="policy (seeds)",
            fontsize=8,
            title_fontsize=8,
            handlelength=2.2,
        )
    fig.suptitle(
        f"{short_name(report.world, 60)}: excess regret over the floor, "
        "mean over seeds, 95% t bands",
        x=0.01,
        ha="left",
        fontsize=11,
        fontweight="bold",
    )
    return fig


def _forest_entry(ax: Any, g: dict[str, Any], y: int, color: str, usual: int) -> None:
    """One paired gain: t interval (thick), bootstrap interval (thin, capped, below), mean dot,
    and ``n=...`` when it used another number of seeds than the panel's usual count."""
    right = g["change_mean"]
    if math.isfinite(g["t_lo"]):
        ax.hlines(y - 0.1, g["t_lo"], g["t_hi"], color=color, lw=3.2, alpha=0.7)
        right = max(right, g["t_hi"])
    if math.isfinite(g["boot_lo"]):
        ax.errorbar(
            g["change_mean"],
            y + 0.17,
            xerr=[[g["change_mean"] - g["boot_lo"]], [g["boot_hi"] - g["change_mean"]]],
            fmt="none",
            ecolor=color,
            elinewidth=1.0,
            capsize=2.5,
        )
        right = max(right, g["boot_hi"])
    ax.plot(g["change_mean"], y - 0.1, "o", color=color, ms=5, mec="white", mew=0.7)
    if g["n"] != usual:
        ax.annotate(
            f"n={g['n']}",
            (right, y),
            xytext=(5, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
            color="#555555",
        )


def _forest_panel(
    ax: Any, report: WorldReport, row: dict[str, int], colors: dict[str, str]
) -> None:
    """One world's panel of the forest plot."""
    usual = max(g["n"] for g in report.gains)
    for g in report.gains:
        _forest_entry(ax, g, row[g["policy"]], colors.get(g["policy"], "#000000"), usual)
    ax.axvline(0, color="#444444", lw=0.9)
    ax.grid(axis="y", visible=False)
    ax.set_title(
        f"{short_name(report.world, 32)}  ·  n = {usual} seeds", loc="left", fontweight="bold"
    )
    ax.xaxis.set_tick_params(labelbottom=True)


def _forest_legend(fig: Figure, competitor: str) -> None:
    """The key of the marks and the x label (``competitor`` is its label)."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color="#444444", marker="o", ls="", ms=5, label="mean over paired seeds"),
        Line2D([], [], color="#444444", lw=3.2, alpha=0.7, label="95% t interval"),
        Line2D([], [], color="#444444", lw=1.0, marker="|", ms=6, label="95% bootstrap interval"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8)
    fig.supxlabel(
        f"change in excess regret vs {competitor} (%), paired by seed; negative is better",
        fontsize=9,
    )


def forest_figure(
    reports: Sequence[WorldReport],
    colors: dict[str, str],
    competitor: str,
    labels: Labels = None,
) -> Figure | None:
    """Paired change in excess regret vs ``competitor``: one panel per world, shared rows.

    Rows are policies, in one order for every panel (best mean change over worlds first).
    Each entry: the mean (dot), the 95% t interval (thick) and the 95% bootstrap interval
    (thin, with caps, below); ``n=...`` beside an entry that used fewer or more seeds than
    the panel's usual count (in its title). Rows are named by ``labels`` (cut to fit;
    default: the specs). Returns None when no world has gains.
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    worlds = [r for r in reports if r.gains]
    if not worlds:
        return None
    changes: dict[str, list[float]] = {}
    for report in worlds:
        for g in report.gains:
            changes.setdefault(g["policy"], []).append(g["change_mean"])
    order = sorted(changes, key=lambda p: (float(np.mean(changes[p])), p))
    ncols = min(3, len(worlds))
    nrows = math.ceil(len(worlds) / ncols)
    shown = fit_labels([label_of(labels, p) for p in order], ROW_WIDTH)
    names = [shown[label_of(labels, p)] for p in order]
    label_width = max(len(n) for n in names)
    # at least as wide as the legend and the axis label, which are not shrunk with one world
    width = max(MIN_GAINS_WIDTH, 0.4 + 0.075 * label_width + 3.3 * ncols)
    fig = Figure(
        figsize=(width, nrows * (0.8 + 0.3 * len(order)) + 0.9),
        layout="constrained",
    )
    axes = np.atleast_1d(
        fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    ).ravel()
    row = {p: i for i, p in enumerate(order)}
    for ax, report in zip(axes, worlds, strict=False):
        _forest_panel(ax, report, row, colors)
    axes[0].set_yticks(np.arange(len(order)), names)
    axes[0].set_ylim(len(order) - 0.5, -0.6)
    for ax in axes[len(worlds) :]:
        ax.set_visible(False)
    _forest_legend(fig, label_of(labels, competitor))
    return fig


def _relative_to_policy_means(table: ProfileTable, n_groups: int) -> np.ndarray:
    """``100 (excess_group / excess_policy - 1)`` of the first ``n_groups`` groups."""
    values = table.matrix()[:n_groups]
    overall = np.array([table.overall.get(p, np.nan) for p in table.policies])
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (values / overall[None, :] - 1.0)


def _heatmap_labels(ax: Any, rel: np.ndarray, bound: float) -> None:
    """Each finite cell's percentage, white on dark cells (skipped above 700 cells)."""
    n_rows, n_cols = rel.shape
    if n_rows * n_cols > 700:
        return
    for i in range(n_rows):
        for j in range(n_cols):
            v = rel[i, j]
            if not np.isfinite(v):
                continue
            dark = abs(v) > 0.55 * bound
            ax.text(
                j,
                i,
                "0%" if round(v) == 0 else f"{v:+.0f}%",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if dark else "#222222",
            )


def _heatmap_frame(
    ax: Any, groups: Sequence[str], policies: Sequence[str], colors: dict[str, str]
) -> None:
    """White lines between trait facets and a color strip above each policy's column."""
    facets = [g.split(": ", 1)[0] if ": " in g else "" for g in groups]
    for i in range(1, len(groups)):
        if facets[i] != facets[i - 1]:
            ax.axhline(i - 0.5, color="white", lw=2.5)
    for j, policy in enumerate(policies):
        ax.add_patch(_rect((j - 0.5, -0.5 - 0.38), 1.0, 0.3, colors.get(policy, "#000000")))
    ax.set_ylim(len(groups) - 0.5, -0.5 - 0.45)


def heatmap_figure(
    table: ProfileTable, colors: dict[str, str], max_groups: int = 40, labels: Labels = None
) -> Figure:
    """Groups (rows) x policies (columns), each cell relative to the policy's own mean.

    Color and label: ``100 (excess_group / excess_policy - 1)`` %, the excess regret per
    arrival of the group against the policy's mean over all its arrivals (blue: served better
    than its average, red: worse). The absolute values are in the report's table.

    Args:
        table: The per-profile breakdown of one world.
        colors: Color of each policy (a strip above its column).
        max_groups: Draw at most this many groups (the first in display order).
        labels: Label of each policy under its column (cut to fit; default: the spec).
    """
    require_matplotlib()
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure

    groups = table.groups[:max_groups]
    rel = _relative_to_policy_means(table, len(groups))
    n_rows, n_cols = rel.shape
    label_width = max((len(g) for g in groups), default=8)
    shown = fit_labels([label_of(labels, p) for p in table.policies], TICK_WIDTH, wrap=True)
    names = [shown[label_of(labels, p)] for p in table.policies]
    # taller for tick labels longer than a built-in id, so the cells keep their height
    lines = [line for n in names for line in n.split("\n")]
    extra = 0.045 * max(0, max(map(len, lines), default=0) - 10) + 0.12 * (len(lines) > n_cols)
    fig = Figure(
        figsize=(
            max(6.5, 1.6 + 0.065 * label_width + 0.56 * n_cols),
            2.1 + 0.26 * n_rows + extra,
        ),
        layout="constrained",
    )
    ax = fig.subplots()
    finite = np.abs(rel[np.isfinite(rel)])
    bound = max(float(finite.max()) if finite.size else 1.0, 1.0)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-bound, vmax=bound)
    image = ax.imshow(rel, cmap="RdBu_r", norm=norm, aspect="auto")
    ax.grid(False)
    ax.set_xticks(np.arange(n_cols), names, rotation=40, ha="right", rotation_mode="anchor")
    ax.set_yticks(np.arange(n_rows), groups)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    _heatmap_labels(ax, rel, bound)
    _heatmap_frame(ax, groups, table.policies, colors)
    cbar = fig.colorbar(image, ax=ax, aspect=max(12.0, 1.6 * n_rows), pad=0.01)
    cbar.set_label("vs the policy's mean (%)")
    cbar.outline.set_visible(False)
    what = "hidden profile" if table.grouping == "profile" else "trait value and quirk"
    ax.set_title(
        f"{short_name(table.world)}\nexcess regret per arrival by {what},\n"
        "relative to each policy's mean",
        loc="left",
        fontweight="bold",
        fontsize=9.5,
    )
    return fig


def _rect(xy: tuple[float, float], width: float, height: float, color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle(xy, width, height, color=color, clip_on=False, lw=0)


__all__ = [
    "COMPETITOR_COLOR",
    "COMPETITOR_DASH",
    "DASHDOT",
    "INSTALL_HINT",
    "MIN_GAINS_WIDTH",
    "PALETTE",
    "PNG_DPI",
    "SOLID_COLORS",
    "STYLE",
    "Labels",
    "MissingDependencyError",
    "SavedFigure",
    "forest_figure",
    "heatmap_figure",
    "learning_figure",
    "line_style",
    "missing_matplotlib",
    "policy_colors",
    "require_matplotlib",
    "save_figure",
    "style",
]
