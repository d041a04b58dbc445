"""Reports of a personalized-ranking analysis: JSON, Markdown and HTML, plus CSV tables.

``write_report(result, DIR)`` writes::

    DIR/report.json   everything in numbers (settings, input counts, every skip, tables, tests)
    DIR/report.md     tables, with links to the figure files
    DIR/report.html   one self-contained offline page (shared stylesheet, inline SVG)
    DIR/models.csv    global ratings with 95% intervals
    DIR/users.csv     per-user votes, correlations, BT fallback flag, style cluster
    DIR/figures/*.svg the figures as files

The Markdown and HTML pages are two writers (`prefduel.core.document.to_markdown`,
`prefduel.core.document_html.to_html`) over one document (`report_document` in
`prefduel.ranking.report_sections`); the figures are drawn by
`prefduel.ranking.report_figures`. Figures need matplotlib (``pip install "prefduel[report]"``);
without it the reports are written without figures and say so.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.csvcells import spreadsheet_safe
from prefduel.core.document_html import to_html
from prefduel.core.document_text import to_markdown
from prefduel.ranking.analysis import RankAnalysis
from prefduel.ranking.errors import RankingError
from prefduel.ranking.report_figures import report_figures
from prefduel.ranking.report_sections import report_document


def write_report(
    result: RankAnalysis, out_dir: str | Path, *, command: str | None = None
) -> dict[str, Path]:
    """Write the JSON, Markdown and HTML reports, the CSV tables and the figures.

    Args:
        result: The analysis.
        out_dir: Output directory (created).
        command: The command line that produced it (recorded in the reports).

    Returns:
        ``{"json", "md", "html", "models_csv", "users_csv"}`` paths (and ``"figures"``).
    """
    out = Path(out_dir)
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RankingError(f"cannot create {out}: {exc.strerror or exc}") from None
    data = result.to_dict()
    if command:
        data["command"] = command
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
    document = report_document(data, figures)
    paths["md"].write_text(to_markdown(document), encoding="utf-8")
    paths["html"].write_text(to_html(document), encoding="utf-8")
    _write_csv(paths["models_csv"], data["global"]["models"])
    _write_csv(paths["users_csv"], data["per_user"])
    for name, svg in figures.items():
        (out / "figures" / f"{name}.svg").write_text(svg, encoding="utf-8")
    return paths


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


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as CSV, text cells made safe for spreadsheets (`spreadsheet_safe`)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        if not rows:
            return
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: spreadsheet_safe(v) for k, v in row.items()} for row in rows)
