"""The posterior predictive check of a world built from a vote log, as tables: printed by
``prefduel worlds build`` and saved beside the world (``votes/check.json``, ``check.md``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefduel.core.document import Table, number
from prefduel.core.document_text import markdown_escape, table_markdown, table_text
from prefduel.worlds.votes import FOLDER
from prefduel.worlds.world import World

if TYPE_CHECKING:
    from prefduel.voteworlds.build import BuildResult

CHECK_JSON = "check.json"
CHECK_MD = "check.md"


def holdout_table(check: dict[str, Any]) -> Table:
    """Held-out log-loss of each model (lower is better)."""
    hold = check["holdout"]
    rows = [["global Bradley-Terry (what rank's global board predicts)", number(hold["global"], 4)]]
    if hold["categories"] is not None:
        rows.append(["global + category effects", number(hold["categories"], 4)])
    rows.append(["the world's model (each voter's posterior)", number(hold["world"], 4)])
    rows.append(["coin flip", number(hold["coin_flip"], 4)])
    return Table(
        ["model", "log-loss"],
        rows,
        title=f"held-out log-loss of {hold['votes']:,} votes of the world's voters "
        f"({hold['folds']} folds per voter; each fold predicted by fits of the others)",
        header_rule=True,
    )


def rho_table(check: dict[str, Any]) -> Table:
    """The per-voter Spearman correlation with the global ranking: log vs world."""
    rho = check["rho"]
    reps = rho["replicates"]
    rows = []
    for label, key in (
        ("the log", "log"),
        (f"the world ({reps} replicated logs)", "world"),
        ("the world, without vote noise", "world_without_vote_noise"),
    ):
        entry = rho[key]
        q = entry["quantiles"]
        rows.append([
            label, f"{entry['n']:,}", number(entry["mean"], 3), number(entry["sd"], 3),
            number(q["0.1"], 3), number(q["0.5"], 3), number(q["0.9"], 3),
            number(entry["share_below_0.5"], 3),
        ])
    return Table(
        ["per-voter rho", "voters", "mean", "sd", "10%", "median", "90%", "share < 0.5"],
        rows,
        title="Spearman rho of each voter's ranking with the global one (rank --bt-mode "
        "hier, over the models each voter evaluated)",
        header_rule=True,
    )


def check_text(check: dict[str, Any]) -> str:
    """Both tables as plain text, with one line on how to read them."""
    return (
        table_text(holdout_table(check)) + "\n\n" + table_text(rho_table(check)) + "\n"
        + _reading(check) + "\n"
    )


def _reading(check: dict[str, Any]) -> str:
    """How to read the check, in one or two sentences with this world's numbers."""
    hold, rho = check["holdout"], check["rho"]
    gain = hold["global"] - hold["world"]
    log_mean, world_mean = rho["log"]["mean"], rho["world"]["mean"]
    gap = (
        f"the world's voters depart from the global ranking by rho {number(world_mean, 2)} "
        f"on average, the log's by {number(log_mean, 2)}"
        if log_mean is not None and world_mean is not None
        else "the correlations are undefined for these voters"
    )
    return (
        f"The world's model predicts held-out votes {'better' if gain > 0 else 'no better'} "
        f"than the global ranking ({number(gain, 4, sign=True)} nats per vote); {gap}. "
        "A world is only as faithful as this fitted model of the log."
    )


def write_check(check: dict[str, Any], world: World, folder: Path) -> tuple[Path, Path]:
    """Write ``votes/check.json`` and ``votes/check.md`` into the world folder ``folder``."""
    target = Path(folder) / FOLDER
    target.mkdir(parents=True, exist_ok=True)
    json_path, md_path = target / CHECK_JSON, target / CHECK_MD
    json_path.write_text(json.dumps(check, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    source = world.info.get("votes", {}).get("log", {}).get("path", "the vote log")
    lines = [
        f"# Posterior predictive check of {markdown_escape(world.roster)}",
        "",
        f"Built from {markdown_escape(str(source))}: {world.N:,} arrivals x {world.S} rounds "
        f"x {world.K} models.",
        "",
        table_markdown(holdout_table(check)),
        "",
        table_markdown(rho_table(check)),
        "",
        _reading(check),
        "",
    ]
    md_path.write_text("\n".join(lines), encoding="utf-8")
    return json_path, md_path


def build_summary(result: BuildResult) -> str:
    """What a build chose and made, in a few lines for the terminal (before the check)."""
    sel, model, world = result.selection, result.model, result.world
    models = ", ".join(
        f"{m} ({v:,})" for m, v in zip(sel.battles.models, sel.model_votes.tolist(), strict=True)
    )
    categories = result.log.categories
    cats = (
        f"{len(categories)} from column {result.log.category_column!r} (effects shrunk by "
        f"tau {number(model.tau_category, 2)} logits)"
        if len(categories) > 1
        else "none (one prompt category)"
    )
    arriving = world.info["votes"]["voters_arriving"]
    lines = [
        f"models: the {world.K} with the most votes, in order: {models}",
        f"voters: {sel.voters.size:,} kept (at least {world.info['votes']['settings']['min_votes']}"
        f" votes among these models), {sel.dropped:,} dropped (fewer)",
        f"categories: {cats}",
        f"fit: each voter's deviation from the global strengths shrunk by tau "
        f"{number(model.tau, 2)} logits ({sel.battles.n:,} votes among the models)",
        f"world: {world.N:,} arrivals ({arriving:,} voters) x {world.S} rounds x {world.K} "
        f"personas, d = {world.d}; each seed re-orders the arrivals and redraws their "
        "utilities from the voters' posteriors",
    ]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


__all__ = [
    "CHECK_JSON",
    "CHECK_MD",
    "build_summary",
    "check_text",
    "holdout_table",
    "rho_table",
    "write_check",
]
