"""The opening of the personalized-rankings report: warnings, a short summary, the contents,
and the plain verdict on the prediction.

`prefduel.ranking.report_sections.report_document` puts `warnings`, `summary_section` and
`contents_section` first, so that a reader sees what the log says and can jump to any
section before the long tables; `verdict_lines` also leads the prediction section.
"""

from __future__ import annotations

import html
import re
from typing import Any

from prefduel.core.document import Block, Items, Paragraph, Raw, Section, number

#: How the report names each predicted target.
TARGETS = {"elo": "Elo scores", "bt": "BT scores"}

_ESTIMATES = {
    "global": "the global BT (one ranking for everyone)",
    "ridge": "per-user ridge BT",
    "hierarchical": "the hierarchical BT (global + shrunk user deviation)",
}


def verdict_lines(data: dict[str, Any]) -> list[str]:
    """One sentence per predicted target: ``Elo scores: features helped: ...`` or ``...: no
    gain: ...`` (`prefduel.ranking.predict.prediction_verdict`); none without a prediction."""
    verdicts = data.get("prediction_verdicts") or {}
    return [f"{TARGETS.get(k, k)}: {v['text']}." for k, v in verdicts.items()]


def warnings(data: dict[str, Any]) -> list[Block]:
    """What a reader must know before trusting the numbers: an arbitrary Elo order, and
    degenerate features."""
    out: list[Block] = []
    order = data["global"]["elo_order"]
    if not order["timestamps"] and not order["orders"]:
        out.append(
            Paragraph(
                "No timestamps: online Elo follows the file order, which is arbitrary; another "
                "order can move models by several ranks. Rerun with --elo-orders N to average "
                "Elo over N seeded random orders, or rely on Bradley-Terry, which ignores order.",
                "warn",
            )
        )
    features = data.get("features")
    if features and features["degenerate"]:
        out.append(
            Paragraph(
                f"Degenerate features ({'; '.join(features['reasons'])}): meta-styles, style "
                "clusters and the prediction were skipped, as they would report noise.",
                "warn",
            )
        )
    return out


def summary_section(data: dict[str, Any], lead: Paragraph, user: str | None) -> Section:
    """What the log says, in a few lines: input, leader, per-user agreement, the estimate to
    trust, the prediction's verdict, and pointers to the user's board and the messages."""
    items = [_input_line(data), _leader_line(data), _spread_line(data)]
    loss = data.get("holdout")
    if loss:
        items.append(
            f"Which estimate to trust: {_ESTIMATES[loss['best']]} predicts held-out votes best "
            f"(log-loss {number(loss[loss['best']], 4)}; a coin flip scores 0.6931)."
        )
    items += verdict_lines(data) or [f"Prediction from topics and style: {_not_run(data)}."]
    if user is not None:
        items.append(f"User {user}: their leaderboard is the next section.")
    notes = len(data["messages"])
    if notes:
        items.append(
            f"{notes} note{'s' if notes > 1 else ''} on fallbacks and skipped steps: see "
            "Messages."
        )
    return Section("Summary", [lead, Items(items)])


def contents_section(sections: list[Section]) -> Section:
    """Links to ``sections``: HTML anchors in the page, GitHub's heading anchors in
    Markdown."""
    links = "".join(
        f'<li><a href="#{s.anchor()}">{html.escape(s.title)}</a></li>' for s in sections
    )
    text = "\n".join(f"- [{s.title}](#{markdown_anchor(s.title)})" for s in sections)
    block = Raw(f'<ul class="contents" style="columns: 2">{links}</ul>', text)
    return Section("Contents", [block], in_toc=False)


def markdown_anchor(title: str) -> str:
    """The anchor GitHub (and most Markdown viewers) give a heading: lower case, punctuation
    dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _input_line(data: dict[str, Any]) -> str:
    inp = data["input"]
    order = "timestamp" if inp["has_time"] else "file order (no timestamps)"
    return (
        f"Input: {inp['battles']} battles by {inp['users']} users over {inp['models']} models "
        f"from {inp['source']}; {inp['skipped_total']} rows skipped (see Every skip and caveat); "
        f"ordered by {order}."
    )


def _leader_line(data: dict[str, Any]) -> str:
    models = [m for m in data["global"]["models"] if m["bt"] is not None]
    if not models:
        return "Global ranking: no model has a rating."
    top = models[0]
    ranks = (
        ""
        if top["rank_lo"] is None
        else f", and can rank {top['rank_lo']}–{top['rank_hi']} given the intervals"
    )
    after = ", ".join(m["model"] for m in models[1:3])
    return (
        f"Global ranking (Bradley-Terry): {top['model']} leads with {number(top['bt'], 1)}"
        f"{ranks}" + (f"; then {after}." if after else ".")
    )


def _spread_line(data: dict[str, Any]) -> str:
    bt = data["correlation"]["bt"]
    if bt["mean"] is None:
        return "Per-user vs global: no user's correlation is defined."
    return (
        f"Per-user vs global: {100 * bt['share_below_0.1']:.0f}% of the {bt['n']} analysed "
        "users' Bradley-Terry rankings correlate below 0.1 with the global one (Spearman ρ "
        "over the models each user evaluated)."
    )


def _not_run(data: dict[str, Any]) -> str:
    """Why there is no prediction."""
    if not data["config"]["features"]:
        return "the prediction was not run (--no-features)"
    features = data.get("features")
    if features and features["degenerate"]:
        return "the prediction was not run: the features are degenerate (Feature check)"
    return "the prediction was not run (see Messages)"


__all__ = [
    "TARGETS",
    "contents_section",
    "markdown_anchor",
    "summary_section",
    "verdict_lines",
    "warnings",
]
