"""The ask tracks' figure (matplotlib, imported lazily): score against the budget and the
priced score against the price of a question, one figure per world.

Drawn like the report's other figures (`prefduel.report.drawing`: style, one color per policy
in every figure, PNG and SVG).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from prefduel.report.drawing import require_matplotlib
from prefduel.report.labels import LEGEND_WIDTH, fit_labels, label_of, short_name

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

#: Line widths of the priced-score curves by rank of their budget (larger budget, thicker).
_WIDTHS = (1.0, 1.5, 2.0, 2.5, 3.0)


def _budget_panel(
    ax: Any,
    records: Sequence[dict[str, Any]],
    policies: Sequence[str],
    colors: Mapping[str, str],
    shown: Mapping[str, str],
) -> None:
    """Score against B per policy, error bars ± one standard error, ``n`` seeds in the legend."""
    for policy in policies:
        mine = [r for r in records if r["policy"] == policy]
        budgets = np.array([r["budget"] for r in mine])
        means = np.array([r["score_mean"] for r in mine])
        errors = np.array([r["score_se"] if r["score_se"] is not None else 0.0 for r in mine])
        seeds = sorted({r["n"] for r in mine})
        n = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
        ax.errorbar(
            budgets,
            means,
            yerr=errors,
            color=colors.get(policy, "#000000"),
            marker="o",
            ms=4,
            lw=1.5,
            capsize=3,
            label=f"{shown[policy]}  (n={n})",
        )
    all_budgets = sorted({r["budget"] for r in records})
    ax.set_xticks(all_budgets)
    ax.set_xlabel("ask budget B (questions per arrival; 0: no questions)")
    ax.set_ylabel("score (mean ± s.e. over seeds)")
    ax.set_title("Score against the budget", loc="left")


def _priced_panel(
    ax: Any,
    priced: Sequence[dict[str, Any]],
    policies: Sequence[str],
    colors: Mapping[str, str],
) -> None:
    """Each policy's priced score over the price, one line per budget (thicker: larger B);
    its score without questions dotted."""
    budgets = sorted({e["budget"] for e in priced if e["budget"]})
    width = {b: _WIDTHS[min(i, len(_WIDTHS) - 1)] for i, b in enumerate(budgets)}
    for policy in policies:
        color = colors.get(policy, "#000000")
        for entry in (e for e in priced if e["policy"] == policy):
            lam, mean = np.asarray(entry["lam"]), np.asarray(entry["mean"])
            if not entry["budget"]:
                ax.plot(lam, mean, color=color, lw=1.0, ls=":")
                continue
            ax.plot(lam, mean, color=color, lw=width[entry["budget"]])
            ax.annotate(
                f"B={entry['budget']}",
                (lam[-1], mean[-1]),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                color=color,
            )
    ax.set_xlabel("price λ of a question (rounds of uniformly random pairs)")
    ax.set_ylabel("score − λ × questions per arrival × 100 / S")
    ax.set_title("Priced score (dotted: without questions)", loc="left")


def ask_figure(
    world: str,
    records: Sequence[dict[str, Any]],
    priced: Sequence[dict[str, Any]],
    colors: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
) -> Figure:
    """Two panels for one world: score against the ask budget, and the priced score.

    Args:
        world: The base world (B = 0).
        records: Its `prefduel.stats.ask_tables.ask_records`.
        priced: Its `prefduel.stats.asking.priced_scores` entries.
        colors: Color of each policy.
        labels: Name of each policy in the legend (cut to fit; default: the spec).
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    policies = list(dict.fromkeys(r["policy"] for r in records))
    cut = fit_labels([label_of(labels, p) for p in policies], LEGEND_WIDTH)
    shown = {p: cut[label_of(labels, p)] for p in policies}
    fig = Figure(figsize=(11.5, 4.0), layout="constrained")
    left, right = fig.subplots(1, 2)
    _budget_panel(left, records, policies, colors, shown)
    _priced_panel(right, priced, policies, colors)
    right.set_xlim(0, max(max(e["lam"]) for e in priced) * 1.08 if priced else 1)
    fig.legend(
        loc="outside right upper",
        title="policy (seeds)",
        fontsize=8,
        title_fontsize=8,
        handlelength=2.2,
    )
    fig.suptitle(
        f"{short_name(world, 60)}: what asking is worth",
        x=0.01,
        ha="left",
        fontsize=11,
        fontweight="bold",
    )
    return fig
