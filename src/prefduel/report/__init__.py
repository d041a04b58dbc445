"""The offline HTML report: leaderboard, learning curves, paired gains, per-profile breakdown.

`build_report` writes ``DIR/report.html`` (one self-contained file: inline CSS and SVG)
and every figure as PNG and SVG under ``DIR/figures/``. The figures need matplotlib
(``pip install "prefduel[report]"``), imported only when a report is built; without it the page
has every table and a note where each figure would be.
"""

from prefduel.report.build import REPORT_NAME, ReportResult, build_report
from prefduel.report.data import ReportWarning, load_input
from prefduel.report.figures import MissingDependencyError

__all__ = [
    "REPORT_NAME",
    "MissingDependencyError",
    "ReportResult",
    "ReportWarning",
    "build_report",
    "load_input",
]
