"""The posterior predictive check of a world built from a vote log, as tables: printed by
``prefduel worlds build`` and saved beside the world (``votes/check.json``, ``check.md``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefduel.core.document import Table, number
from prefduel.core.document_text import markdown_escape, table_markdown, table_text
from prefduel.worlds.votes import FOLDER
from prefduel.worlds.world import World

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


__all__ = [
    "CHECK_JSON",
    "CHECK_MD",
    "check_text",
    "holdout_table",
    "rho_table",
    "write_check",
]
