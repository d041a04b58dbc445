"""Summary tables: score and excess regret, mean ± standard error over seeds.

`summarize_rows` reduces result rows to one entry per ``(world, policy)``;
`format_table` prints the entries per world, best score first, as text, Markdown, CSV or
JSON. Reference rows (floor, random, oracles) are marked so they are not read as policies.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from prefduel.worlds.rosters import is_world_path

FORMATS = ("text", "md", "csv", "json")

#: Shown instead of a standard error computed from a single seed.
NO_SE = "–"

_COLUMNS = ("policy", "seeds", "score", "excess")


def replicates(world: str) -> str:
    """What the seeds of ``world`` are replicates of, i.e. what stands behind a ``±``.

    Seeds of a roster (or roster file) are independent worlds: new students, questions,
    utilities and clicks. Seeds of a stored world share its judged data: each is one arrival
    order and one set of click draws (`prefduel.worlds.world.replicate`).
    """
    if is_world_path(world):
        return "1 stored world: each seed re-orders its arrivals and redraws its clicks"
    return "each seed an independent world"


def _mean_se(values: list[float]) -> tuple[float, float | None]:
    """Mean and standard error ``std(ddof=1) / sqrt(n)``; the s.e. is None when ``n = 1``."""
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if arr.size < 2:
        return mean, None
    return mean, float(arr.std(ddof=1) / np.sqrt(arr.size))


def summarize_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary entry per ``(world, policy)`` over its seeds.

    Args:
        rows: Result rows (``kind``, ``world``, ``seed``, ``policy``, ``score``, ``excess``, ...),
            at most one per ``(kind, world, seed, policy)``.

    Returns:
        Entries ``{world, policy, kind, n, seeds, score_mean, score_se, excess_mean,
        excess_se}`` (``*_se`` is None for a single seed), worlds in order of first appearance,
        within a world by score descending (ties by policy name).

    Raises:
        ValueError: if a row is missing a field or a ``(world, policy, seed)`` appears twice.
    """
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for number, row in enumerate(rows):
        try:
            world, policy, seed = row["world"], row["policy"], row["seed"]
            kind, value, excess = row.get("kind", "policy"), row["score"], row["excess"]
        except KeyError as exc:
            raise ValueError(f"row {number} has no field {exc}") from None
        group = groups.setdefault((world, policy), {"kind": kind, "seeds": {}})
        if seed in group["seeds"]:
            raise ValueError(f"world {world!r}, policy {policy!r}: seed {seed} appears twice")
        group["seeds"][seed] = (float(value), float(excess))
    summary = [_entry(world, policy, g) for (world, policy), g in groups.items()]
    world_order = {w: i for i, w in enumerate(dict.fromkeys(w for w, _ in groups))}
    summary.sort(key=lambda e: (world_order[e["world"]], -e["score_mean"], e["policy"]))
    return summary


def _entry(world: str, policy: str, group: dict[str, Any]) -> dict[str, Any]:
    seeds = sorted(group["seeds"])
    scores = [group["seeds"][s][0] for s in seeds]
    excesses = [group["seeds"][s][1] for s in seeds]
    score_mean, score_se = _mean_se(scores)
    excess_mean, excess_se = _mean_se(excesses)
    return {
        "world": world,
        "policy": policy,
        "kind": group["kind"],
        "n": len(seeds),
        "seeds": seeds,
        "score_mean": score_mean,
        "score_se": score_se,
        "excess_mean": excess_mean,
        "excess_se": excess_se,
    }


# -- formatting ------------------------------------------------------------------------------


def _pm(mean: float, se: float | None, digits: int) -> str:
    if not math.isfinite(mean):
        return str(mean)
    right = NO_SE if se is None else f"{se:.{digits}f}"
    return f"{mean:.{digits}f} ± {right}"


def _by_world(summary: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Entries grouped by world (first-appearance order), each sorted by score descending."""
    worlds: dict[str, list[dict[str, Any]]] = {}
    for entry in summary:
        worlds.setdefault(entry["world"], []).append(entry)
    for entries in worlds.values():
        entries.sort(key=lambda e: (-e["score_mean"], e["policy"]))
    return worlds


def _cells(entry: dict[str, Any]) -> tuple[str, str, str]:
    return (
        str(entry["n"]),
        _pm(entry["score_mean"], entry["score_se"], 2),
        _pm(entry["excess_mean"], entry["excess_se"], 1),
    )


def _is_ref(entry: dict[str, Any]) -> bool:
    return entry.get("kind") == "reference"


def _aligned_pm(entries: list[dict[str, Any]], key: str, digits: int) -> list[str]:
    """``mean ± se`` strings for a column, padded so the ``±`` signs line up."""
    means = [f"{e[key + '_mean']:.{digits}f}" for e in entries]
    ses = [NO_SE if e[key + "_se"] is None else f"{e[key + '_se']:.{digits}f}" for e in entries]
    wm, ws = max(map(len, means)), max(map(len, ses))
    return [f"{m.rjust(wm)} ± {s.rjust(ws)}" for m, s in zip(means, ses, strict=True)]


def _format_text(summary: list[dict[str, Any]]) -> str:
    blocks = []
    for world, entries in _by_world(summary).items():
        names = [f"{e['policy']} [ref]" if _is_ref(e) else e["policy"] for e in entries]
        seeds = [str(e["n"]) for e in entries]
        body = zip(
            names,
            seeds,
            _aligned_pm(entries, "score", 2),
            _aligned_pm(entries, "excess", 1),
            strict=True,
        )
        table = [("policy", "seeds", "score (mean ± s.e.)", "excess (mean ± s.e.)"), *body]
        widths = [max(len(r[c]) for r in table) for c in range(4)]
        lines = [f"world: {world} ({replicates(world)})"]
        for i, r in enumerate(table):
            cells = [r[0].ljust(widths[0])] + [r[c].rjust(widths[c]) for c in range(1, 4)]
            lines.append("  ".join(cells).rstrip())
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def _md_escape(text: str) -> str:
    for char in ("\\", "|", "*", "_", "`"):
        text = text.replace(char, "\\" + char)
    return text


def _format_md(summary: list[dict[str, Any]]) -> str:
    blocks = []
    for world, entries in _by_world(summary).items():
        lines = [
            f"### {_md_escape(world)}",
            "",
            f"± over seeds; {_md_escape(replicates(world))}.",
            "",
            "| policy | seeds | score (mean ± s.e.) | excess (mean ± s.e.) |",
            "|---|---:|---:|---:|",
        ]
        for e in entries:
            name = _md_escape(e["policy"])
            name = f"*{name}*" if _is_ref(e) else name
            lines.append("| " + " | ".join((name, *_cells(e))) + " |")
        blocks.append("\n".join(lines))
    if blocks:
        blocks.append("*Italic rows are references computed from the utilities, not policies.*")
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def _format_csv(summary: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    fields = ["world", "policy", "kind", "n", "score_mean", "score_se", "excess_mean", "excess_se"]
    fields.append("replicates")
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for world, entries in _by_world(summary).items():
        for e in entries:
            row = {k: ("" if e.get(k) is None else e.get(k)) for k in fields}
            writer.writerow({**row, "replicates": replicates(world)})
    return buf.getvalue()


def _format_json(summary: list[dict[str, Any]]) -> str:
    ordered = [
        {**e, "replicates": replicates(world)}
        for world, entries in _by_world(summary).items()
        for e in entries
    ]
    return json.dumps(ordered, indent=2) + "\n"


_FORMATTERS = {"text": _format_text, "md": _format_md, "csv": _format_csv, "json": _format_json}


def format_table(summary: list[dict[str, Any]], fmt: str = "text") -> str:
    """Format `summarize_rows` output: one table per world, best score first.

    Columns: policy, seeds, score mean ± s.e., excess mean ± s.e. (s.e. "–" for one seed).
    References are marked ``[ref]`` in text and set in italics in Markdown; CSV and JSON carry
    a ``kind`` column and leave the s.e. empty/null for one seed.

    Args:
        summary: Entries from `summarize_rows`.
        fmt: ``"text"``, ``"md"``, ``"csv"`` or ``"json"``.

    Raises:
        ValueError: for an unknown format.
    """
    try:
        formatter = _FORMATTERS[fmt]
    except KeyError:
        known = ", ".join(FORMATS)
        raise ValueError(f"unknown table format {fmt!r}; expected one of {known}") from None
    return formatter(list(summary))
