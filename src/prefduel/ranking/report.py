"""Reports of a personalized-ranking analysis: JSON, Markdown and HTML, plus CSV tables.

``write_report(result, DIR)`` writes::

    DIR/report.json   everything in numbers (settings, input counts, every skip, tables, tests)
    DIR/report.md     tables, with links to the figure files
    DIR/report.html   one self-contained offline page (shared stylesheet, inline SVG)
    DIR/models.csv    global ratings with 95% intervals and rank intervals
    DIR/users.csv     per-user votes, correlations, BT fallback flag, style cluster
    DIR/user_models.csv  every analysed user's leaderboard (long table: user x model), also as
                      user_models.parquet when pyarrow is installed
    DIR/figures/*.svg the figures as files

The Markdown and HTML pages are two writers (`prefduel.core.document.to_markdown`,
`prefduel.core.document_html.to_html`) over one document (`report_document` in
`prefduel.ranking.report_sections`); the figures are drawn by
`prefduel.ranking.report_figures`. Figures need matplotlib (``pip install "prefduel[report]"``);
without it the reports are written without figures and say so. `user_leaderboard_table` is
the one user's leaderboard beside the global one that ``prefduel rank --user`` prints and
puts in the reports.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.csvcells import spreadsheet_safe
from prefduel.core.document import NO_VALUE, Table, number
from prefduel.core.document_html import to_html
from prefduel.core.document_text import to_markdown
from prefduel.ranking.analysis import RankAnalysis
from prefduel.ranking.errors import RankingError
from prefduel.ranking.report_figures import report_figures
from prefduel.ranking.report_sections import report_document

__all__ = ["user_leaderboard_table", "write_report"]


def write_report(
    result: RankAnalysis,
    out_dir: str | Path,
    *,
    command: str | None = None,
    user: int | None = None,
) -> dict[str, Path]:
    """Write the JSON, Markdown and HTML reports, the CSV tables and the figures.

    Args:
        result: The analysis.
        out_dir: Output directory (created).
        command: The command line that produced it (recorded in the reports).
        user: Index into ``battles.users`` of an analysed user whose leaderboard the reports
            also show (`user_leaderboard_table`; ``user_leaderboard`` in JSON).

    Returns:
        ``{"json", "md", "html", "models_csv", "users_csv", "user_models_csv"}`` paths (and
        ``"figures"``, and ``"user_models_parquet"`` when pyarrow is installed).
    """
    out = Path(out_dir)
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RankingError(f"cannot create {out}: {exc.strerror or exc}") from None
    data = result.to_dict()
    if command:
        data["command"] = command
    board = None
    if user is not None:
        board = user_leaderboard_table(result, user)
        data["user_leaderboard"] = {
            "user": result.battles.users[user],
            "models": result.user_leaderboard(user),
        }
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
    document = report_document(data, figures, board)
    paths["md"].write_text(to_markdown(document), encoding="utf-8")
    paths["html"].write_text(to_html(document), encoding="utf-8")
    _write_csv(paths["models_csv"], data["global"]["models"])
    _write_csv(paths["users_csv"], data["per_user"])
    paths.update(_write_user_models(out, result.user_model_columns()))
    for name, svg in figures.items():
        (out / "figures" / f"{name}.svg").write_text(svg, encoding="utf-8")
    return paths


def user_leaderboard_table(result: RankAnalysis, user: int) -> Table:
    """One user's leaderboard beside the global one, with intervals (``prefduel rank --user``).

    Args:
        result: The analysis.
        user: Index into ``battles.users`` of an analysed user.

    Returns:
        A table titled with the user's votes and BT estimate: one row per model the user
        evaluated, by the user's rank.
    """
    rows = result.user_leaderboard(user)
    p = result.personal
    i = int(np.flatnonzero(p.users == user)[0])
    tau = f", shrinkage τ = {number(p.tau, 3)} logits" if p.tau is not None else ""
    title = (
        f"user {result.battles.users[user]}: {int(p.votes[i])} votes over {len(rows)} models; "
        f"BT estimate: {p.bt_estimate[i]}{tau}; Spearman ρ with the global ranking: BT "
        f"{number(float(result.rho_bt[i]), 3)}, Elo {number(float(result.rho_elo[i]), 3)}"
    )
    table_rows = [
        [
            str(r["rank"]),
            _ranks(r["rank_lo"], r["rank_hi"]),
            r["model"],
            str(r["battles"]),
            number(r["bt"], 1),
            _bounds(r["bt_lo"], r["bt_hi"]),
            number(r["elo"], 1),
            str(r["global_rank"]),
            _ranks(r["global_rank_lo"], r["global_rank_hi"]),
            number(r["global_bt"], 1),
            _bounds(r["global_bt_lo"], r["global_bt_hi"]),
        ]
        for r in rows
    ]
    columns = ["rank", "rank 95%", "model", "battles", "BT", "BT 95%", "Elo"]
    columns += ["global rank", "global rank 95%", "global BT", "global BT 95%"]
    note = (
        "battles: this user's battles with the model; BT and ranks over the models this user "
        "evaluated; Elo: this user's online Elo."
    )
    return Table(columns, table_rows, title=title, note=note, key="user_leaderboard")


def _bounds(low: float | None, high: float | None) -> str:
    """A score interval as ``[low, high]`` (one decimal), `NO_VALUE` without one."""
    if low is None or high is None:
        return NO_VALUE
    return f"[{number(low, 1)}, {number(high, 1)}]"


def _ranks(low: int | None, high: int | None) -> str:
    """A rank interval as ``low–high`` (one number when they agree), `NO_VALUE` without one."""
    if low is None or high is None:
        return NO_VALUE
    return str(low) if low == high else f"{low}–{high}"


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
    """NumPy scalars and arrays as JSON values (non-finite floats as ``None``)."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def _write_user_models(out: Path, columns: dict[str, list[Any]]) -> dict[str, Path]:
    """Write the per-user leaderboards as ``user_models.csv`` and, when pyarrow is installed,
    ``user_models.parquet`` (names verbatim there; CSV text cells spreadsheet-safe)."""
    paths = {"user_models_csv": out / "user_models.csv"}
    with paths["user_models_csv"].open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(columns))
        for row in zip(*columns.values(), strict=True):
            writer.writerow([spreadsheet_safe(v) for v in row])
    if importlib.util.find_spec("pyarrow") is not None:
        import pandas as pd

        paths["user_models_parquet"] = out / "user_models.parquet"
        pd.DataFrame(columns).to_parquet(paths["user_models_parquet"], index=False)
    return paths


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as CSV, text cells made safe for spreadsheets (`spreadsheet_safe`)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        if not rows:
            return
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: spreadsheet_safe(v) for k, v in row.items()} for row in rows)
